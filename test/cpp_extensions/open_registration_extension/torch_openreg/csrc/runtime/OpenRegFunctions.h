// Devices of the OpenReg runtime as c10 sees them: count, selection, index
// validation, lazy initialization and fork poisoning.
#pragma once

#include <c10/core/Device.h>

namespace openreg {

// The runtime's limit on devices; sizes per-device tables.
constexpr int kMaxDevices = 64;

// Marks OpenReg initialized (the first allocation, stream or explicit
// init() does); raises in a child forked from an initialized process.
void lazy_init();
bool is_initialized();
bool is_in_bad_fork();

c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
// Validates the index (clear error naming the device count) and selects it.
void set_device(c10::DeviceIndex index);
// -1 means "the current device"; anything else must be a valid index.
c10::DeviceIndex resolve_device_index(c10::DeviceIndex index);
// The openreg device of a (resolved) index.
c10::Device openreg_device(c10::DeviceIndex index);

}  // namespace openreg
