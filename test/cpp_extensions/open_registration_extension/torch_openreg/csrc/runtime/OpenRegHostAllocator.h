// Page-locked host memory, for pin_memory().
#pragma once

#include <c10/core/Allocator.h>

namespace openreg {

c10::Allocator* host_allocator();
bool is_pinned_ptr(const void* ptr);

}  // namespace openreg
