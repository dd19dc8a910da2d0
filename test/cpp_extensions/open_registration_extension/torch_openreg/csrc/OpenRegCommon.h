// What the ATen kernels and the Python ops use of the c10 integration layer
// (csrc/runtime/): devices, streams, allocators, generators.
//
// Kept to c10/ATen core headers on purpose: every translation unit that
// pulls in <torch/extension.h> or <ATen/ATen.h> costs ~20 s of compile time.
// The guard and the hooks (registered when the library loads) are used
// through c10 and ATen only, so their headers are not part of this one.
#pragma once

#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegGenerator.h"
#include "runtime/OpenRegHostAllocator.h"
#include "runtime/OpenRegStream.h"
