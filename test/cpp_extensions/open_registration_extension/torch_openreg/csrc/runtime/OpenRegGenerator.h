// Counter-based generators of the openreg devices.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

namespace openreg {

// Default generator of a device (-1: current device). Each OpenReg generator
// wraps a CPU generator that the CPU fallback kernels consume.
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
// The CPU generator a random kernel on an OpenReg generator must use (one
// offset step of that generator).
at::Generator backing_cpu_generator(const at::Generator& openreg_generator);

}  // namespace openreg
