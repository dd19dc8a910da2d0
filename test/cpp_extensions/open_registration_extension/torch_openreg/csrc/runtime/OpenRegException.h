// Error reporting of the c10 integration layer.
#pragma once

#include <openreg.h>

#include <c10/util/Exception.h>

// Turns a runtime error code into a c10::Error (a RuntimeError in Python)
// that names the failing call, instead of crashing or ignoring it.
#define OPENREG_CHECK(EXPR)                                       \
  do {                                                            \
    const orError_t openreg_err_ = (EXPR);                        \
    TORCH_CHECK(                                                  \
        openreg_err_ == orSuccess,                                \
        "OpenReg runtime error: ",                                \
        orGetErrorString(openreg_err_),                           \
        " (",                                                     \
        #EXPR,                                                    \
        ")");                                                     \
  } while (0)
