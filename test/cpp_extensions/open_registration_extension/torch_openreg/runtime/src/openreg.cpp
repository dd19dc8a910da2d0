// Implementation of the OpenReg device runtime (see include/openreg.h).
//
// Device memory is ordinary host memory, but every allocation is tracked in a
// registry keyed by address so that copies can be validated (a "device"
// pointer must lie inside a live allocation) and per-device usage can be
// reported. Written in C++ internally, exported as a C ABI.
#include "openreg.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>

namespace {

constexpr int kDefaultDeviceCount = 2;
constexpr int kMaxDeviceCount = 64;
constexpr size_t kAlignment = 64;

struct Allocation {
  size_t size;
  int device;
};

struct DeviceStats {
  size_t allocated = 0;
  size_t peak = 0;
  size_t count = 0;
};

}  // namespace

// The opaque handle types from the header.
struct orStream_st {
  int device;
};
struct orEvent_st {
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
};

namespace {

int parse_device_count() {
  const char* env = std::getenv("OPENREG_DEVICE_COUNT");
  if (env == nullptr || *env == '\0') {
    return kDefaultDeviceCount;
  }
  char* end = nullptr;
  long value = std::strtol(env, &end, 10);
  if (*end != '\0' || value < 0 || value > kMaxDeviceCount) {
    return kDefaultDeviceCount;  // ignore garbage rather than crash
  }
  return static_cast<int>(value);
}

int device_count() {
  static const int count = parse_device_count();
  return count;
}

bool valid_device(int device) {
  return device >= 0 && device < device_count();
}

thread_local int current_device = 0;

// Registry of live allocations. Heap-allocated and never destroyed: tensors
// may be freed during interpreter shutdown, after static destructors ran.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;  // base address -> info
  DeviceStats stats[kMaxDeviceCount];
  std::set<orStream_t> streams;
  std::set<orEvent_t> events;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// Finds the allocation containing [ptr, ptr + count); caller holds the lock.
const Allocation* find_range(Registry& r, const void* ptr, size_t count) {
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  auto it = r.allocations.upper_bound(addr);
  if (it == r.allocations.begin()) {
    return nullptr;
  }
  --it;
  const uintptr_t base = it->first;
  const size_t size = it->second.size;
  if (addr < base || addr - base > size || count > size - (addr - base)) {
    return nullptr;
  }
  return &it->second;
}

bool is_device_range(const void* ptr, size_t count) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return find_range(r, ptr, count) != nullptr;
}

}  // namespace

extern "C" {

const char* orGetErrorString(orError_t error) {
  switch (error) {
    case orSuccess:
      return "no error";
    case orErrorInvalidValue:
      return "invalid argument";
    case orErrorMemoryAllocation:
      return "out of memory";
    case orErrorInvalidDevice:
      return "invalid device ordinal";
    case orErrorInvalidDevicePointer:
      return "invalid device pointer";
    case orErrorNotReady:
      return "device not ready";
    case orErrorInvalidResourceHandle:
      return "invalid resource handle";
  }
  return "unknown error";
}

orError_t orGetDeviceCount(int* count) {
  if (count == nullptr) {
    return orErrorInvalidValue;
  }
  *count = device_count();
  return orSuccess;
}

orError_t orGetDevice(int* device) {
  if (device == nullptr) {
    return orErrorInvalidValue;
  }
  if (!valid_device(current_device)) {
    return orErrorInvalidDevice;  // only possible with zero devices
  }
  *device = current_device;
  return orSuccess;
}

orError_t orSetDevice(int device) {
  if (!valid_device(device)) {
    return orErrorInvalidDevice;
  }
  current_device = device;
  return orSuccess;
}

orError_t orDeviceSynchronize(void) {
  return valid_device(current_device) ? orSuccess : orErrorInvalidDevice;
}

orError_t orMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) {
    return orErrorInvalidValue;
  }
  *ptr = nullptr;
  const int device = current_device;
  if (!valid_device(device)) {
    return orErrorInvalidDevice;
  }
  if (size == 0) {
    return orSuccess;
  }
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* mem = std::aligned_alloc(kAlignment, rounded);
  if (mem == nullptr) {
    return orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.allocations[reinterpret_cast<uintptr_t>(mem)] = Allocation{size, device};
  DeviceStats& s = r.stats[device];
  s.allocated += size;
  s.count += 1;
  if (s.allocated > s.peak) {
    s.peak = s.allocated;
  }
  *ptr = mem;
  return orSuccess;
}

orError_t orFree(void* ptr) {
  if (ptr == nullptr) {
    return orSuccess;
  }
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.allocations.end()) {
      return orErrorInvalidDevicePointer;  // not a base pointer we handed out
    }
    DeviceStats& s = r.stats[it->second.device];
    s.allocated -= it->second.size;
    s.count -= 1;
    r.allocations.erase(it);
  }
  std::free(ptr);
  return orSuccess;
}

orError_t orPointerGetDevice(const void* ptr, int* device) {
  if (device == nullptr) {
    return orErrorInvalidValue;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Allocation* a = find_range(r, ptr, 0);
  if (a == nullptr) {
    return orErrorInvalidDevicePointer;
  }
  *device = a->device;
  return orSuccess;
}

orError_t orMemcpy(void* dst, const void* src, size_t count, orMemcpyKind kind) {
  if (count == 0) {
    return orSuccess;
  }
  if (dst == nullptr || src == nullptr) {
    return orErrorInvalidValue;
  }
  bool dst_on_device = false;
  bool src_on_device = false;
  switch (kind) {
    case orMemcpyHostToHost:
      break;
    case orMemcpyHostToDevice:
      dst_on_device = true;
      break;
    case orMemcpyDeviceToHost:
      src_on_device = true;
      break;
    case orMemcpyDeviceToDevice:
      dst_on_device = src_on_device = true;
      break;
    default:
      return orErrorInvalidValue;
  }
  // The direction is part of the contract: a device side must be a live
  // device range, which catches use-after-free and out-of-bounds copies.
  if ((dst_on_device && !is_device_range(dst, count)) ||
      (src_on_device && !is_device_range(src, count))) {
    return orErrorInvalidDevicePointer;
  }
  std::memmove(dst, src, count);
  return orSuccess;
}

orError_t orMemcpyAsync(
    void* dst,
    const void* src,
    size_t count,
    orMemcpyKind kind,
    orStream_t stream) {
  (void)stream;  // all work is synchronous
  return orMemcpy(dst, src, count, kind);
}

orError_t orMemset(void* dst, int value, size_t count) {
  if (count == 0) {
    return orSuccess;
  }
  if (!is_device_range(dst, count)) {
    return orErrorInvalidDevicePointer;
  }
  std::memset(dst, value, count);
  return orSuccess;
}

static orError_t read_stat(int device, size_t* out, size_t DeviceStats::*field) {
  if (out == nullptr) {
    return orErrorInvalidValue;
  }
  if (!valid_device(device)) {
    return orErrorInvalidDevice;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  *out = r.stats[device].*field;
  return orSuccess;
}

orError_t orMemGetAllocated(int device, size_t* bytes) {
  return read_stat(device, bytes, &DeviceStats::allocated);
}

orError_t orMemGetPeakAllocated(int device, size_t* bytes) {
  return read_stat(device, bytes, &DeviceStats::peak);
}

orError_t orMemGetAllocationCount(int device, size_t* count) {
  return read_stat(device, count, &DeviceStats::count);
}

orError_t orMemResetPeakAllocated(int device) {
  if (!valid_device(device)) {
    return orErrorInvalidDevice;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.stats[device].peak = r.stats[device].allocated;
  return orSuccess;
}

orError_t orStreamCreate(orStream_t* stream) {
  if (stream == nullptr) {
    return orErrorInvalidValue;
  }
  if (!valid_device(current_device)) {
    return orErrorInvalidDevice;
  }
  auto* s = new (std::nothrow) orStream_st{current_device};
  if (s == nullptr) {
    return orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams.insert(s);
  *stream = s;
  return orSuccess;
}

static bool known_stream(orStream_t stream) {
  if (stream == nullptr) {
    return true;  // the default stream
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.streams.count(stream) != 0;
}

static bool known_event(orEvent_t event) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return event != nullptr && r.events.count(event) != 0;
}

orError_t orStreamDestroy(orStream_t stream) {
  if (stream == nullptr) {
    return orErrorInvalidResourceHandle;  // the default stream is not owned
  }
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.streams.erase(stream) == 0) {
      return orErrorInvalidResourceHandle;
    }
  }
  delete stream;
  return orSuccess;
}

orError_t orStreamSynchronize(orStream_t stream) {
  return known_stream(stream) ? orSuccess : orErrorInvalidResourceHandle;
}

orError_t orStreamQuery(orStream_t stream) {
  return known_stream(stream) ? orSuccess : orErrorInvalidResourceHandle;
}

orError_t orStreamGetDevice(orStream_t stream, int* device) {
  if (device == nullptr) {
    return orErrorInvalidValue;
  }
  if (!known_stream(stream)) {
    return orErrorInvalidResourceHandle;
  }
  *device = stream == nullptr ? current_device : stream->device;
  return orSuccess;
}

orError_t orEventCreate(orEvent_t* event) {
  if (event == nullptr) {
    return orErrorInvalidValue;
  }
  auto* e = new (std::nothrow) orEvent_st();
  if (e == nullptr) {
    return orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.events.insert(e);
  *event = e;
  return orSuccess;
}

orError_t orEventDestroy(orEvent_t event) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (event == nullptr || r.events.erase(event) == 0) {
      return orErrorInvalidResourceHandle;
    }
  }
  delete event;
  return orSuccess;
}

orError_t orEventRecord(orEvent_t event, orStream_t stream) {
  if (!known_event(event) || !known_stream(stream)) {
    return orErrorInvalidResourceHandle;
  }
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return orSuccess;
}

orError_t orEventSynchronize(orEvent_t event) {
  return known_event(event) ? orSuccess : orErrorInvalidResourceHandle;
}

orError_t orEventQuery(orEvent_t event) {
  return known_event(event) ? orSuccess : orErrorInvalidResourceHandle;
}

orError_t orEventElapsedTime(float* ms, orEvent_t start, orEvent_t end) {
  if (ms == nullptr) {
    return orErrorInvalidValue;
  }
  if (!known_event(start) || !known_event(end)) {
    return orErrorInvalidResourceHandle;
  }
  if (!start->recorded || !end->recorded) {
    return orErrorNotReady;
  }
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return orSuccess;
}

}  // extern "C"
