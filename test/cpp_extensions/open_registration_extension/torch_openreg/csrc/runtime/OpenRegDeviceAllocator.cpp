#include "OpenRegDeviceAllocator.h"

#include "OpenRegException.h"
#include "OpenRegFunctions.h"
#include "OpenRegStream.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace openreg {

namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingDeviceAllocator::StatType;

constexpr size_t kRoundBytes = 512;
constexpr auto kAggregate = static_cast<size_t>(StatType::AGGREGATE);

void free_device_block(void* ptr);

// A caching allocator in the spirit of CUDA's, without block splitting: freed
// blocks are kept per device and reused for requests of up to their size
// (and at least half of it); emptyCache returns them to the runtime.
//
// Reuse is stream-safe without per-stream pools because every queued kernel
// and copy holds a reference to the storages it touches (see launch()), so a
// block only comes back here once no queued work uses it.
class CachingAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    lazy_init();
    const auto device = current_device();
    if (nbytes == 0) {
      return {nullptr, nullptr, &free_device_block, c10::Device(c10::kPrivateUse1, device)};
    }
    const size_t size = (nbytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes;
    std::lock_guard<std::mutex> lock(mutex_);
    PerDevice& d = devices_[device];
    void* ptr = take_cached(d, size);
    if (ptr == nullptr) {
      ptr = malloc_with_retry(d, device, size);
    }
    const size_t block = live_.at(ptr).size;
    live_[ptr].requested = nbytes;
    d.stats.allocation[kAggregate].increase(1);
    d.stats.active[kAggregate].increase(1);
    d.stats.allocated_bytes[kAggregate].increase(block);
    d.stats.active_bytes[kAggregate].increase(block);
    d.stats.requested_bytes[kAggregate].increase(nbytes);
    return {ptr, ptr, &free_device_block, c10::Device(c10::kPrivateUse1, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &free_device_block;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    OPENREG_CHECK(orMemcpy(dest, src, count, orMemcpyDeviceToDevice));
  }

  void free(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    TORCH_INTERNAL_ASSERT(it != live_.end() && it->second.in_use, "openreg: freeing an unknown block");
    Block& b = it->second;
    PerDevice& d = devices_[b.device];
    b.in_use = false;
    d.stats.allocation[kAggregate].decrease(1);
    d.stats.active[kAggregate].decrease(1);
    d.stats.allocated_bytes[kAggregate].decrease(b.size);
    d.stats.active_bytes[kAggregate].decrease(b.size);
    d.stats.requested_bytes[kAggregate].decrease(b.requested);
    d.cached.emplace(b.size, ptr);
  }

  bool initialized() override {
    return true;
  }

  void emptyCache(c10::MempoolId_t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      release_cached(devices_[i]);
    }
  }

  void recordStream(const c10::DataPtr&, c10::Stream) override {
    // Nothing to do: queued work keeps its storages alive (class comment).
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return devices_[resolve_device_index(device)].stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats& s = devices_[resolve_device_index(device)].stats;
    for (auto* array : stat_arrays(s)) {
      for (auto& stat : *array) {
        stat.reset_accumulated();
      }
    }
    s.num_alloc_retries = 0;
    s.num_ooms = 0;
    s.num_device_alloc = 0;
    s.num_device_free = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* array : stat_arrays(devices_[resolve_device_index(device)].stats)) {
      for (auto& stat : *array) {
        stat.reset_peak();
      }
    }
  }

 private:
  struct Block {
    size_t size;
    size_t requested;
    c10::DeviceIndex device;
    bool in_use;
  };
  struct PerDevice {
    std::multimap<size_t, void*> cached;  // size -> free block
    DeviceStats stats;
  };

  static std::vector<c10::CachingDeviceAllocator::StatArray*> stat_arrays(DeviceStats& s) {
    return {&s.allocation, &s.segment, &s.active, &s.inactive_split,
            &s.allocated_bytes, &s.reserved_bytes, &s.active_bytes,
            &s.inactive_split_bytes, &s.requested_bytes};
  }

  void* take_cached(PerDevice& d, size_t size) {
    auto it = d.cached.lower_bound(size);
    if (it == d.cached.end() || it->first > 2 * size) {
      return nullptr;  // reusing a much larger block would waste it
    }
    void* ptr = it->second;
    d.cached.erase(it);
    live_[ptr].in_use = true;
    return ptr;
  }

  void* malloc_with_retry(PerDevice& d, c10::DeviceIndex device, size_t size) {
    void* ptr = nullptr;
    orError_t err = orMalloc(&ptr, size);
    if (err == orErrorMemoryAllocation) {
      d.stats.num_alloc_retries += 1;
      release_cached(d);
      err = orMalloc(&ptr, size);
    }
    if (err == orErrorMemoryAllocation) {
      d.stats.num_ooms += 1;
    }
    OPENREG_CHECK(err);
    live_[ptr] = Block{size, 0, device, true};
    d.stats.segment[kAggregate].increase(1);
    d.stats.reserved_bytes[kAggregate].increase(size);
    d.stats.num_device_alloc += 1;
    return ptr;
  }

  void release_cached(PerDevice& d) {
    for (const auto& [size, ptr] : d.cached) {
      OPENREG_CHECK(orFree(ptr));
      live_.erase(ptr);
      d.stats.segment[kAggregate].decrease(1);
      d.stats.reserved_bytes[kAggregate].decrease(size);
      d.stats.num_device_free += 1;
    }
    d.cached.clear();
  }

  std::mutex mutex_;
  std::unordered_map<void*, Block> live_;  // every block the runtime gave us
  PerDevice devices_[kMaxDevices];
};

CachingAllocator* g_device_allocator = new CachingAllocator();  // outlives all tensors

void free_device_block(void* ptr) {
  g_device_allocator->free(ptr);
}

const bool g_allocator_registered = [] {
  c10::SetAllocator(c10::DeviceType::PrivateUse1, g_device_allocator);
  return true;
}();

}  // namespace

c10::Allocator* device_allocator() {
  return g_device_allocator;
}

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  if (new_bytes <= storage.nbytes()) {
    storage.unsafeGetStorageImpl()->set_nbytes(new_bytes);
    return;
  }
  TORCH_CHECK(storage.resizable(), "Trying to resize an openreg storage that is not resizable");
  const auto device = storage.device();
  const auto index = device.index() >= 0 ? device.index() : current_device();
  // Allocate on the storage's device, not on whatever device is current.
  c10::DataPtr fresh;
  {
    c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, index));
    fresh = g_device_allocator->allocate(new_bytes);
  }
  void* dst = fresh.get();
  const size_t old_bytes = storage.nbytes();
  c10::DataPtr old_ptr = storage.unsafeGetStorageImpl()->set_data_ptr(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(new_bytes);
  if (old_bytes > 0 && old_ptr.get() != nullptr) {
    // The old block travels with the copy so it stays alive until it ran.
    const void* src = old_ptr.get();
    c10::Storage old(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), old_bytes, std::move(old_ptr), nullptr, false));
    copy_async(current_stream(index), dst, src, old_bytes, orMemcpyDeviceToDevice, {old, storage});
  }
}

}  // namespace openreg
