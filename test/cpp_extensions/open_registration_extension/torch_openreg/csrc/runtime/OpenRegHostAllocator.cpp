#include "OpenRegHostAllocator.h"

#include "OpenRegException.h"

#include <cstring>

namespace openreg {

namespace {

// Page-locked host memory, for pin_memory(); no caching needed here.
void free_host_block(void* ptr) {
  (void)orFreeHost(ptr);
}

struct HostAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nullptr;
    OPENREG_CHECK(orMallocHost(&data, nbytes));
    return {data, data, &free_host_block, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_host_block;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

HostAllocator g_host_allocator;

}  // namespace

c10::Allocator* host_allocator() {
  return &g_host_allocator;
}

bool is_pinned_ptr(const void* ptr) {
  int pinned = 0;
  return orPointerIsPinned(ptr, &pinned) == orSuccess && pinned != 0;
}

}  // namespace openreg
