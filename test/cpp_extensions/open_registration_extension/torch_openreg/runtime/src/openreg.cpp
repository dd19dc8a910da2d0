// Implementation of the OpenReg device runtime (see include/openreg.h).
//
// Device memory is host memory mapped with mmap, but kept inaccessible
// (PROT_NONE) except while OpenReg's own code works on it: the runtime's
// copies and memsets, and kernels bracketed by orDeviceAccessBegin/End. So a
// host read of a device pointer crashes, as on a real accelerator, instead of
// silently working. Every allocation is tracked in a registry keyed by
// address so that copies can be validated (a "device" pointer must lie
// inside a live allocation) and per-device usage can be reported. Streams
// are FIFO queues, each drained by its own worker thread. Written in C++
// internally, exported as a C ABI.
#include "openreg.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <thread>

namespace {

constexpr int kDefaultDeviceCount = 2;
constexpr int kMaxDeviceCount = 64;
constexpr size_t kAlignment = 64;

using Clock = std::chrono::steady_clock;

struct Allocation {
  size_t size;
  int device;  // -1 for page-locked host memory
};

struct DeviceStats {
  size_t allocated = 0;
  size_t peak = 0;
  size_t count = 0;
};

// Completion state of an event, shared with the markers and waits queued on
// streams so that destroying the event handle never leaves them dangling.
struct EventState {
  std::mutex mutex;
  std::condition_variable completed_cv;
  uint64_t recorded = 0;   // number of records issued
  uint64_t completed = 0;  // highest record reached by its stream
  bool timing = false;
  Clock::time_point time;

  bool done(uint64_t version) const {
    return completed >= version;
  }
};

// Set in a child process forked while worker threads existed: the threads
// were not copied, so any queue would wait forever.
bool g_forked_with_workers = false;
bool g_workers_started = false;

}  // namespace

// The opaque handle types from the header.
struct orStream_st {
  explicit orStream_st(int dev) : device(dev) {}

  const int device;
  std::mutex mutex;
  std::condition_variable cv;  // new work, completion, shutdown
  std::deque<std::function<void()>> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool stopping = false;
  std::thread worker;

  // Returns the ticket of the queued task: it has run once completed >= it.
  uint64_t enqueue(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(std::move(task));
    cv.notify_all();
    return ++enqueued;
  }

  void wait_for(uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return completed >= ticket; });
  }

  void synchronize() {
    uint64_t ticket = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      ticket = enqueued;
    }
    wait_for(ticket);
  }

  bool idle() {
    std::lock_guard<std::mutex> lock(mutex);
    return completed == enqueued;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) {
        return;  // stopping, and everything queued has run
      }
      std::function<void()> task = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      task();
      task = nullptr;  // release captures before reporting completion
      lock.lock();
      ++completed;
      cv.notify_all();
    }
  }
};

struct orEvent_st {
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
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

// Registry of live allocations and handles. Heap-allocated and never
// destroyed: tensors may be freed during interpreter shutdown, after static
// destructors ran, and worker threads are never joined at exit.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;  // base address -> info
  DeviceStats stats[kMaxDeviceCount];
  std::set<orStream_t> streams;
  std::set<orEvent_t> events;
  orStream_t default_streams[kMaxDeviceCount] = {};
  std::set<orStream_t> all_streams[kMaxDeviceCount];  // incl. default ones
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

void mark_forked_child() {
  g_forked_with_workers = g_workers_started;
}

orStream_t start_stream(int device) {
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, &mark_forked_child); });
  auto* s = new (std::nothrow) orStream_st(device);
  if (s == nullptr) {
    return nullptr;
  }
  try {
    s->worker = std::thread([s] { s->run(); });
  } catch (...) {
    delete s;
    return nullptr;
  }
  g_workers_started = true;
  return s;
}

// The default stream of a device, started on first use; caller checked the
// device index.
orStream_t default_stream(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  orStream_t& s = r.default_streams[device];
  if (s == nullptr) {
    s = start_stream(device);
    if (s != nullptr) {
      r.all_streams[device].insert(s);
    }
  }
  return s;
}

// Resolves a stream handle (NULL: the current device's default stream).
orError_t resolve_stream(orStream_t stream, orStream_t* out) {
  if (g_forked_with_workers) {
    return orErrorForkedProcess;
  }
  if (stream == nullptr) {
    if (!valid_device(current_device)) {
      return orErrorInvalidDevice;
    }
    *out = default_stream(current_device);
    return *out != nullptr ? orSuccess : orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.streams.count(stream) == 0) {
    return orErrorInvalidResourceHandle;
  }
  *out = stream;
  return orSuccess;
}

bool known_event(orEvent_t event) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return event != nullptr && r.events.count(event) != 0;
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
  const Allocation* a = find_range(r, ptr, count);
  return a != nullptr && a->device >= 0;
}

void* aligned_host_alloc(size_t size) {
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded);
}

// --- device memory protection ------------------------------------------------
// Device memory is readable and writable only while at least one access
// window (orDeviceAccessBegin/End, or a runtime copy) is open. Windows nest
// across threads; page protection is process-wide, so memory is protected
// again when the last one closes.
std::mutex g_access_mutex;  // taken before the registry mutex
int g_open_windows = 0;      // guarded by g_access_mutex

size_t page_rounded(size_t size) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

// Applies `prot` to every device allocation; caller holds g_access_mutex.
void protect_all(int prot) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& [base, a] : r.allocations) {
    if (a.device >= 0) {
      mprotect(reinterpret_cast<void*>(base), page_rounded(a.size), prot);
    }
  }
}

void open_window() {
  std::lock_guard<std::mutex> lock(g_access_mutex);
  if (g_open_windows++ == 0) {
    protect_all(PROT_READ | PROT_WRITE);
  }
}

// Returns false (and changes nothing) when no window is open.
bool close_window() {
  std::lock_guard<std::mutex> lock(g_access_mutex);
  if (g_open_windows == 0) {
    return false;
  }
  if (--g_open_windows == 0) {
    protect_all(PROT_NONE);
  }
  return true;
}

// Runs `body` inside an access window.
template <typename F>
void with_access(F&& body) {
  open_window();
  body();
  close_window();
}

// Checks the device sides of a copy; the direction is part of the contract,
// which catches use-after-free and out-of-bounds copies at queue time.
orError_t check_copy(void* dst, const void* src, size_t count, orMemcpyKind kind) {
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
  if ((dst_on_device && !is_device_range(dst, count)) ||
      (src_on_device && !is_device_range(src, count))) {
    return orErrorInvalidDevicePointer;
  }
  return orSuccess;
}

// Queues `task` on the current device's default stream and waits for it.
orError_t run_on_default_stream(std::function<void()> task) {
  orStream_t s = nullptr;
  const orError_t err = resolve_stream(nullptr, &s);
  if (err != orSuccess) {
    return err;
  }
  s->wait_for(s->enqueue(std::move(task)));
  return orSuccess;
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
    case orErrorTimingDisabled:
      return "event was created without timing";
    case orErrorForkedProcess:
      return "OpenReg streams cannot be used in a process forked after they started";
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
  if (!valid_device(current_device)) {
    return orErrorInvalidDevice;
  }
  if (g_forked_with_workers) {
    return orErrorForkedProcess;
  }
  std::set<orStream_t> streams;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    streams = r.all_streams[current_device];
  }
  // Streams destroyed meanwhile were synchronized by orStreamDestroy, and a
  // destroyed handle is only freed after leaving all_streams; see below.
  for (orStream_t s : streams) {
    s->synchronize();
  }
  return orSuccess;
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
  std::lock_guard<std::mutex> access(g_access_mutex);
  const int prot = g_open_windows > 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
  void* mem = mmap(nullptr, page_rounded(size), prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.allocations[reinterpret_cast<uintptr_t>(mem)] = Allocation{size, device};
  DeviceStats& s = r.stats[device];
  s.allocated += size;
  s.count += 1;
  s.peak = std::max(s.peak, s.allocated);
  *ptr = mem;
  return orSuccess;
}

static orError_t free_tracked(void* ptr, bool pinned) {
  if (ptr == nullptr) {
    return orSuccess;
  }
  Registry& r = registry();
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.allocations.end() || (it->second.device < 0) != pinned) {
      return orErrorInvalidDevicePointer;  // not a base pointer we handed out
    }
    size = it->second.size;
    if (!pinned) {
      DeviceStats& s = r.stats[it->second.device];
      s.allocated -= size;
      s.count -= 1;
    }
    r.allocations.erase(it);
  }
  if (pinned) {
    std::free(ptr);
  } else {
    munmap(ptr, page_rounded(size));
  }
  return orSuccess;
}

orError_t orFree(void* ptr) {
  return free_tracked(ptr, /*pinned=*/false);
}

orError_t orPointerGetDevice(const void* ptr, int* device) {
  if (device == nullptr) {
    return orErrorInvalidValue;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Allocation* a = find_range(r, ptr, 0);
  if (a == nullptr || a->device < 0) {
    return orErrorInvalidDevicePointer;
  }
  *device = a->device;
  return orSuccess;
}

orError_t orMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) {
    return orErrorInvalidValue;
  }
  *ptr = nullptr;
  if (size == 0) {
    return orSuccess;
  }
  void* mem = aligned_host_alloc(size);
  if (mem == nullptr) {
    return orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.allocations[reinterpret_cast<uintptr_t>(mem)] = Allocation{size, -1};
  *ptr = mem;
  return orSuccess;
}

orError_t orFreeHost(void* ptr) {
  return free_tracked(ptr, /*pinned=*/true);
}

orError_t orPointerIsPinned(const void* ptr, int* is_pinned) {
  if (is_pinned == nullptr) {
    return orErrorInvalidValue;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Allocation* a = find_range(r, ptr, 0);
  *is_pinned = a != nullptr && a->device < 0 ? 1 : 0;
  return orSuccess;
}

orError_t orDeviceAccessBegin(void) {
  open_window();
  return orSuccess;
}

orError_t orDeviceAccessEnd(void) {
  return close_window() ? orSuccess : orErrorInvalidValue;  // unbalanced End
}

orError_t orMemcpy(void* dst, const void* src, size_t count, orMemcpyKind kind) {
  if (count == 0) {
    return orSuccess;
  }
  const orError_t err = check_copy(dst, src, count, kind);
  if (err != orSuccess) {
    return err;
  }
  return run_on_default_stream([=] { with_access([&] { std::memmove(dst, src, count); }); });
}

orError_t orMemcpyAsync(
    void* dst,
    const void* src,
    size_t count,
    orMemcpyKind kind,
    orStream_t stream) {
  if (count == 0) {
    return orSuccess;
  }
  orError_t err = check_copy(dst, src, count, kind);
  if (err == orSuccess) {
    err = resolve_stream(stream, &stream);
  }
  if (err != orSuccess) {
    return err;
  }
  stream->enqueue([=] { with_access([&] { std::memmove(dst, src, count); }); });
  return orSuccess;
}

orError_t orMemset(void* dst, int value, size_t count) {
  if (count == 0) {
    return orSuccess;
  }
  if (!is_device_range(dst, count)) {
    return orErrorInvalidDevicePointer;
  }
  return run_on_default_stream([=] { with_access([&] { std::memset(dst, value, count); }); });
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
  if (g_forked_with_workers) {
    return orErrorForkedProcess;
  }
  orStream_t s = start_stream(current_device);
  if (s == nullptr) {
    return orErrorMemoryAllocation;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams.insert(s);
  r.all_streams[s->device].insert(s);
  *stream = s;
  return orSuccess;
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
  // Like cudaStreamDestroy: queued work still runs, then the worker exits.
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->stopping = true;
    stream->cv.notify_all();
  }
  if (stream->worker.joinable()) {
    stream->worker.join();
  }
  {
    // Only now leave all_streams: orDeviceSynchronize may still hold it.
    std::lock_guard<std::mutex> lock(r.mutex);
    r.all_streams[stream->device].erase(stream);
  }
  // Never freed: a concurrent orDeviceSynchronize may have copied the handle
  // before we erased it; streams are few and long-lived.
  return orSuccess;
}

orError_t orStreamSynchronize(orStream_t stream) {
  const orError_t err = resolve_stream(stream, &stream);
  if (err == orSuccess) {
    stream->synchronize();
  }
  return err;
}

orError_t orStreamQuery(orStream_t stream) {
  const orError_t err = resolve_stream(stream, &stream);
  if (err != orSuccess) {
    return err;
  }
  return stream->idle() ? orSuccess : orErrorNotReady;
}

orError_t orStreamGetDevice(orStream_t stream, int* device) {
  if (device == nullptr) {
    return orErrorInvalidValue;
  }
  const orError_t err = resolve_stream(stream, &stream);
  if (err == orSuccess) {
    *device = stream->device;
  }
  return err;
}

orError_t orStreamWaitEvent(orStream_t stream, orEvent_t event) {
  if (!known_event(event)) {
    return orErrorInvalidResourceHandle;
  }
  const orError_t err = resolve_stream(stream, &stream);
  if (err != orSuccess) {
    return err;
  }
  std::shared_ptr<EventState> state = event->state;
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    version = state->recorded;
  }
  if (version == 0) {
    return orSuccess;  // never recorded: nothing to wait for
  }
  stream->enqueue([state, version] {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->completed_cv.wait(lock, [&] { return state->done(version); });
  });
  return orSuccess;
}

orError_t orLaunchHostFunc(orStream_t stream, orHostFn_t fn, void* user_data) {
  if (fn == nullptr) {
    return orErrorInvalidValue;
  }
  const orError_t err = resolve_stream(stream, &stream);
  if (err == orSuccess) {
    stream->enqueue([fn, user_data] { fn(user_data); });
  }
  return err;
}

orError_t orEventCreateWithFlags(orEvent_t* event, unsigned int flags) {
  if (event == nullptr || (flags & ~static_cast<unsigned>(orEventEnableTiming)) != 0) {
    return orErrorInvalidValue;
  }
  auto* e = new (std::nothrow) orEvent_st();
  if (e == nullptr) {
    return orErrorMemoryAllocation;
  }
  e->state->timing = (flags & orEventEnableTiming) != 0;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.events.insert(e);
  *event = e;
  return orSuccess;
}

orError_t orEventCreate(orEvent_t* event) {
  return orEventCreateWithFlags(event, orEventDefault);
}

orError_t orEventDestroy(orEvent_t event) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (event == nullptr || r.events.erase(event) == 0) {
      return orErrorInvalidResourceHandle;
    }
  }
  delete event;  // queued markers and waits keep the shared state alive
  return orSuccess;
}

// orEventRecord opens like orStreamWaitEvent (check the event, resolve the
// stream, read the event's version under its lock; `duplicates` lists the two
// as a pair). The opening stays written out in each: the locked step differs
// (recording bumps the version, a wait only reads it), and a shared helper
// would hand back an error, the stream, the state and the version through
// out-parameters to save a handful of lines of this C API's entry points.
orError_t orEventRecord(orEvent_t event, orStream_t stream) {
  if (!known_event(event)) {
    return orErrorInvalidResourceHandle;
  }
  const orError_t err = resolve_stream(stream, &stream);
  if (err != orSuccess) {
    return err;
  }
  std::shared_ptr<EventState> state = event->state;
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    version = ++state->recorded;
  }
  stream->enqueue([state, version] {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->timing) {
      state->time = Clock::now();
    }
    state->completed = std::max(state->completed, version);
    state->completed_cv.notify_all();
  });
  return orSuccess;
}

orError_t orEventSynchronize(orEvent_t event) {
  if (!known_event(event)) {
    return orErrorInvalidResourceHandle;
  }
  if (g_forked_with_workers) {
    return orErrorForkedProcess;
  }
  EventState& state = *event->state;
  std::unique_lock<std::mutex> lock(state.mutex);
  const uint64_t version = state.recorded;
  state.completed_cv.wait(lock, [&] { return state.done(version); });
  return orSuccess;
}

orError_t orEventQuery(orEvent_t event) {
  if (!known_event(event)) {
    return orErrorInvalidResourceHandle;
  }
  EventState& state = *event->state;
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.done(state.recorded) ? orSuccess : orErrorNotReady;
}

orError_t orEventElapsedTime(float* ms, orEvent_t start, orEvent_t end) {
  if (ms == nullptr) {
    return orErrorInvalidValue;
  }
  if (!known_event(start) || !known_event(end)) {
    return orErrorInvalidResourceHandle;
  }
  Clock::time_point times[2];
  EventState* states[2] = {start->state.get(), end->state.get()};
  for (int i = 0; i < 2; ++i) {
    std::lock_guard<std::mutex> lock(states[i]->mutex);
    if (!states[i]->timing) {
      return orErrorTimingDisabled;
    }
    if (states[i]->recorded == 0 || !states[i]->done(states[i]->recorded)) {
      return orErrorNotReady;
    }
    times[i] = states[i]->time;
  }
  *ms = std::chrono::duration<float, std::milli>(times[1] - times[0]).count();
  return orSuccess;
}

}  // extern "C"
