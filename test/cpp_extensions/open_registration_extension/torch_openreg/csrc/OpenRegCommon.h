// Shared declarations of the OpenReg c10/ATen integration layer.
//
// Kept to c10/ATen core headers on purpose: every translation unit that
// pulls in <torch/extension.h> or <ATen/ATen.h> costs ~20 s of compile time.
#pragma once

#include <openreg.h>

#include <ATen/core/Generator.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>
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

namespace openreg {

c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
// Validates the index (clear error naming the device count) and selects it.
void set_device(c10::DeviceIndex index);
// -1 means "the current device"; anything else must be a valid index.
c10::DeviceIndex resolve_device_index(c10::DeviceIndex index);

c10::Allocator* device_allocator();

// Grows (never shrinks) a storage to new_bytes, preserving its contents.
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);

// Default generator of a device (-1: current device). Each OpenReg generator
// wraps a CPU generator that the CPU fallback kernels consume.
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
// The CPU generator that backs an OpenReg generator.
at::Generator backing_cpu_generator(const at::Generator& openreg_generator);

}  // namespace openreg
