// The caching device allocator (a c10::DeviceAllocator, registered for
// PrivateUse1 when the library loads).
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>

#include <cstddef>

namespace openreg {

c10::Allocator* device_allocator();

// Grows (never shrinks) a storage to new_bytes, preserving its contents.
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);

}  // namespace openreg
