// c10 integration of the OpenReg runtime: device selection, the PrivateUse1
// allocator, the DeviceGuard implementation, generators and the PrivateUse1
// hooks. Everything here is registered by static initializers when the
// shared library is loaded.
#include "OpenRegCommon.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace openreg {

// ---------------------------------------------------------------- devices

c10::DeviceIndex device_count() noexcept {
  int count = 0;
  if (orGetDeviceCount(&count) != orSuccess) {
    return 0;  // callers (DeviceGuardImpl::deviceCount) must not throw
  }
  return static_cast<c10::DeviceIndex>(count);
}

c10::DeviceIndex current_device() {
  int device = 0;
  OPENREG_CHECK(orGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

static void check_index(c10::DeviceIndex index) {
  const auto count = device_count();
  // Worded like the other accelerators' message ("The device index is out
  // of range"), so device-generic code and tests can match one text.
  TORCH_CHECK(
      index >= 0 && index < count,
      "The device index is out of range: invalid openreg device index ",
      static_cast<int>(index),
      ", there are ",
      static_cast<int>(count),
      " openreg device(s), valid indices are 0..",
      static_cast<int>(count) - 1);
}

void set_device(c10::DeviceIndex index) {
  check_index(index);
  OPENREG_CHECK(orSetDevice(index));
}

c10::DeviceIndex resolve_device_index(c10::DeviceIndex index) {
  if (index == -1) {
    return current_device();
  }
  check_index(index);
  return index;
}

// --------------------------------------------------- initialization, fork

namespace {

std::atomic<bool> g_initialized{false};
bool g_in_bad_fork = false;

void on_fork_child() {
  // Worker threads and queued work do not survive fork(): a child of an
  // initialized process must not touch the devices (like CUDA).
  g_in_bad_fork = g_initialized.load();
}

}  // namespace

void lazy_init() {
  TORCH_CHECK(
      !g_in_bad_fork,
      "Cannot re-initialize OpenReg in forked subprocess. To use OpenReg with "
      "multiprocessing, you must use the 'spawn' start method");
  if (!g_initialized.exchange(true)) {
    pthread_atfork(nullptr, nullptr, &on_fork_child);
  }
}

bool is_initialized() {
  return g_initialized.load() && !g_in_bad_fork;
}

bool is_in_bad_fork() {
  return g_in_bad_fork;
}

// ---------------------------------------------------------------- streams

namespace {

// Lazily created runtime streams of one device: [0] default, [1..] pool.
struct DeviceStreams {
  std::mutex mutex;
  orStream_t handles[kStreamPoolSize + 1] = {};
  std::atomic<uint32_t> next_pool{0};
};

// `index` must be valid (resolve_device_index). Never destroyed: queued
// work and tensors may outlive static destructors.
DeviceStreams& streams_of(c10::DeviceIndex index) {
  static auto* all = new std::deque<DeviceStreams>(std::max<int>(device_count(), 1));
  return (*all)[index];
}

constexpr int kMaxDevices = 64;  // the runtime's limit
thread_local c10::StreamId current_stream_ids[kMaxDevices] = {};

// Queued by launch(): the kernel (may be empty) and what it keeps alive.
struct Work {
  std::function<void()> kernel;
  std::vector<c10::Storage> keep;
  bool accesses_memory;
};

// First error thrown by a kernel on a worker thread; reported (and cleared)
// by the next synchronization, like an asynchronous device error.
std::mutex g_async_error_mutex;
std::string g_async_error;

// Finished work whose captures (storages) must be released on a host
// thread: the last reference to a storage may need the GIL, which the
// thread waiting for the worker may hold.
std::mutex g_finished_mutex;
std::vector<std::unique_ptr<Work>> g_finished;

void release_finished_work() {
  std::vector<std::unique_ptr<Work>> finished;
  {
    std::lock_guard<std::mutex> lock(g_finished_mutex);
    finished.swap(g_finished);
  }
}  // `finished` (and the storages it holds) is destroyed here

void run_work(void* data) {
  std::unique_ptr<Work> work(static_cast<Work*>(data));
  if (work->kernel) {
    DeviceAccess access(work->accesses_memory);
    try {
      work->kernel();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(g_async_error_mutex);
      if (g_async_error.empty()) {
        g_async_error = e.what();
      }
    }
  }
  std::lock_guard<std::mutex> lock(g_finished_mutex);
  g_finished.push_back(std::move(work));
}

void check_async_error() {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(g_async_error_mutex);
    message.swap(g_async_error);
  }
  TORCH_CHECK(message.empty(), "OpenReg: a kernel failed asynchronously: ", message);
}

c10::Device openreg_device(c10::DeviceIndex index) {
  return c10::Device(c10::kPrivateUse1, resolve_device_index(index));
}

}  // namespace

orStream_t native_stream(const c10::Stream& stream) {
  lazy_init();
  const auto index = resolve_device_index(stream.device_index());
  const auto id = stream.id();
  TORCH_CHECK(
      id >= 0 && id <= kStreamPoolSize,
      "Invalid openreg stream id ", id, " (valid ids are 0..", kStreamPoolSize, ")");
  DeviceStreams& streams = streams_of(index);
  std::lock_guard<std::mutex> lock(streams.mutex);
  orStream_t& handle = streams.handles[id];
  if (handle == nullptr) {
    const auto old = current_device();
    set_device(index);  // streams are created on the current device
    const orError_t err = orStreamCreate(&handle);
    set_device(old);
    OPENREG_CHECK(err);
  }
  return handle;
}

c10::Stream current_stream(c10::DeviceIndex index) {
  const auto device = openreg_device(index);
  return c10::Stream(c10::Stream::UNSAFE, device, current_stream_ids[device.index()]);
}

c10::Stream exchange_stream(c10::Stream stream) {
  const auto device = openreg_device(stream.device_index());
  native_stream(stream);  // validates the id
  auto& slot = current_stream_ids[device.index()];
  const c10::Stream old(c10::Stream::UNSAFE, device, slot);
  slot = stream.id();
  return old;
}

c10::Stream pool_stream(c10::DeviceIndex index) {
  const auto device = openreg_device(index);
  const uint32_t n = streams_of(device.index()).next_pool.fetch_add(1);
  return c10::Stream(c10::Stream::UNSAFE, device, 1 + n % kStreamPoolSize);
}

void synchronize_stream(const c10::Stream& stream) {
  OPENREG_CHECK(orStreamSynchronize(native_stream(stream)));
  release_finished_work();
  check_async_error();
}

DeviceAccess::DeviceAccess(bool open) : open_(open) {
  if (open_) {
    OPENREG_CHECK(orDeviceAccessBegin());
  }
}

DeviceAccess::~DeviceAccess() {
  if (open_) {
    (void)orDeviceAccessEnd();  // balanced by construction
  }
}

void launch(
    const c10::Stream& stream,
    std::function<void()> kernel,
    std::vector<c10::Storage> keep,
    bool accesses_memory) {
  release_finished_work();
  orStream_t handle = native_stream(stream);
  auto work = std::make_unique<Work>(Work{std::move(kernel), std::move(keep), accesses_memory});
  OPENREG_CHECK(orLaunchHostFunc(handle, &run_work, work.get()));
  work.release();  // owned by run_work now
}

// The parameter list repeats copy_async's declaration in OpenRegCommon.h
// (`duplicates` lists the two as a pair): a C++ definition has to restate it.
void copy_async(
    const c10::Stream& stream,
    void* dst,
    const void* src,
    size_t count,
    orMemcpyKind kind,
    std::vector<c10::Storage> keep) {
  if (count == 0) {
    return;
  }
  OPENREG_CHECK(orMemcpyAsync(dst, src, count, kind, native_stream(stream)));
  if (!keep.empty()) {
    launch(stream, nullptr, std::move(keep));
  }
}

void synchronize_device(c10::DeviceIndex index) {
  const auto old = current_device();
  set_device(resolve_device_index(index));
  const orError_t err = orDeviceSynchronize();
  set_device(old);
  OPENREG_CHECK(err);
  release_finished_work();
  check_async_error();
}

// -------------------------------------------------------------- allocator

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

const bool g_allocator_registered = [] {
  c10::SetAllocator(c10::DeviceType::PrivateUse1, g_device_allocator);
  return true;
}();

}  // namespace

c10::Allocator* device_allocator() {
  return g_device_allocator;
}

c10::Allocator* host_allocator() {
  return &g_host_allocator;
}

bool is_pinned_ptr(const void* ptr) {
  int pinned = 0;
  return orPointerIsPinned(ptr, &pinned) == orSuccess && pinned != 0;
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

// ------------------------------------------------------------ generators

namespace {

// A counter-based PrivateUse1 generator, like CUDA's Philox one: its whole
// state is (seed, offset), and every random kernel consumes one step of
// kStepPerKernel offset units. The CPU fallback runs random kernels on the
// CPU, and those only accept CPU generators, so each kernel gets a CPU
// generator seeded from (seed, offset) (see next_kernel_generator). Hence
// set_offset/get_offset and get_state/set_state are exact.
constexpr uint64_t kStepPerKernel = 4;

uint64_t mix(uint64_t seed, uint64_t offset) {
  // splitmix64 of the pair, so neighbouring offsets give unrelated streams.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (offset / kStepPerKernel + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct OpenRegGeneratorImpl final : public c10::GeneratorImpl {
  explicit OpenRegGeneratorImpl(c10::DeviceIndex index, uint64_t seed = c10::default_rng_seed_val)
      : c10::GeneratorImpl(
            c10::Device(c10::kPrivateUse1, index),
            c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(seed),
        cpu_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  void set_offset(uint64_t offset) override {
    TORCH_CHECK(offset % kStepPerKernel == 0, "openreg generator offsets must be multiples of ", kStepPerKernel, ", got ", offset);
    offset_ = offset;
  }
  uint64_t get_offset() const override {
    return offset_;
  }
  uint64_t current_seed() const override {
    return seed_;
  }
  uint64_t seed() override {
    set_current_seed(c10::detail::getNonDeterministicRandom());
    return seed_;
  }
  // State: 16 bytes, the seed then the offset (native byte order).
  void set_state(const c10::TensorImpl& new_state) override {
    // A state is host data (get_state returns a CPU tensor): the bytes of a
    // device tensor are not host-readable.
    TORCH_CHECK(
        new_state.device_type() == c10::kCPU,
        "openreg RNG state must be a CPU tensor (as get_rng_state returns it), got one on ", new_state.device());
    TORCH_CHECK(
        new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.numel() == 16,
        "openreg RNG state must be a uint8 tensor of 16 bytes, got ", new_state.numel(), " elements of ", new_state.dtype());
    const auto* bytes = static_cast<const uint8_t*>(new_state.data());
    std::memcpy(&seed_, bytes, 8);
    uint64_t offset = 0;
    std::memcpy(&offset, bytes + 8, 8);
    set_offset(offset);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto state = c10::make_intrusive<c10::TensorImpl>(
        c10::Storage(c10::Storage::use_byte_size_t(), 16, c10::GetCPUAllocator(), false),
        c10::DispatchKeySet(c10::DispatchKey::CPU), caffe2::TypeMeta::Make<uint8_t>());
    state->set_sizes_contiguous({16});
    auto* bytes = static_cast<uint8_t*>(state->mutable_data());
    std::memcpy(bytes, &seed_, 8);
    std::memcpy(bytes + 8, &offset_, 8);
    return state;
  }
  OpenRegGeneratorImpl* clone_impl() const override {
    auto* copy = new OpenRegGeneratorImpl(device().index(), seed_);
    copy->offset_ = offset_;
    return copy;
  }

  // The CPU generator for the next random kernel; caller holds mutex_.
  const at::Generator& next_kernel_generator() {
    cpu_.set_current_seed(mix(seed_, offset_));
    offset_ += kStepPerKernel;
    return cpu_;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
  at::Generator cpu_;
};

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex index) {
  // One lazily created generator per device; a deque keeps references stable.
  static std::once_flag once;
  static std::deque<at::Generator>* generators = nullptr;
  std::call_once(once, [] {
    generators = new std::deque<at::Generator>();
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      generators->push_back(at::make_generator<OpenRegGeneratorImpl>(i));
    }
  });
  return (*generators)[resolve_device_index(index)];
}

at::Generator new_generator(c10::DeviceIndex index) {
  return at::make_generator<OpenRegGeneratorImpl>(resolve_device_index(index));
}

at::Generator backing_cpu_generator(const at::Generator& gen) {
  auto* impl = dynamic_cast<OpenRegGeneratorImpl*>(gen.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "Expected an openreg generator, got one for ", gen.device());
  std::lock_guard<std::mutex> lock(impl->mutex_);
  return impl->next_kernel_generator();
}

// ---------------------------------------------------------- device guard

namespace {

struct OpenRegGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override {
    return static_type;
  }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_CHECK(device.is_privateuseone(), "Expected an openreg device, got ", device);
    const auto old = getDevice();
    if (device.index() != old.index()) {
      set_device(device.index());
    }
    return old;
  }

  c10::Device getDevice() const override {
    return c10::Device(static_type, current_device());
  }

  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.is_privateuseone(), "Expected an openreg device, got ", device);
    set_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    (void)orSetDevice(device.index());
  }

  // Streams: a device index of -1 (e.g. torch.Stream(device="openreg"))
  // means the current device, as for every other device API.
  c10::Stream getStream(c10::Device device) const override {
    return current_stream(device.index());
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, openreg_device(device.index()));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
    return pool_stream(device.index());
  }
  c10::Stream getNewStream(c10::Device device, int) const override {
    return pool_stream(device.index());
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    return exchange_stream(stream);
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }

  void record(
      void** event,
      const c10::Stream& stream,
      const c10::DeviceIndex device_index,
      const c10::EventFlag flag) const override {
    TORCH_CHECK(
        device_index == -1 || device_index == stream.device_index(),
        "Event device index ", static_cast<int>(device_index),
        " does not match recording stream's device index ",
        static_cast<int>(stream.device_index()));
    if (*event == nullptr) {
      // BACKEND_DEFAULT is what torch.Event(enable_timing=True) asks for.
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? orEventEnableTiming : orEventDefault;
      orEvent_t created = nullptr;
      OPENREG_CHECK(orEventCreateWithFlags(&created, flags));
      *event = created;
    }
    OPENREG_CHECK(orEventRecord(static_cast<orEvent_t>(*event), native_stream(stream)));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event != nullptr) {  // an unrecorded event: nothing to wait for
      OPENREG_CHECK(orStreamWaitEvent(native_stream(stream), static_cast<orEvent_t>(event)));
    }
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) {
      return true;
    }
    const orError_t err = orEventQuery(static_cast<orEvent_t>(event));
    if (err == orErrorNotReady) {
      return false;
    }
    OPENREG_CHECK(err);
    return true;
  }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event != nullptr) {
      (void)orEventDestroy(static_cast<orEvent_t>(event));
    }
  }

  bool queryStream(const c10::Stream& stream) const override {
    const orError_t err = orStreamQuery(native_stream(stream));
    if (err == orErrorNotReady) {
      return false;
    }
    OPENREG_CHECK(err);
    return true;
  }
  void synchronizeStream(const c10::Stream& stream) const override {
    synchronize_stream(stream);
  }
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      OPENREG_CHECK(orEventSynchronize(static_cast<orEvent_t>(event)));
    }
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    synchronize_device(device_index);
  }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {
    // Queued work keeps its storages alive; see CachingAllocator.
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before computing elapsed time");
    float ms = 0;
    const orError_t err = orEventElapsedTime(&ms, static_cast<orEvent_t>(start), static_cast<orEvent_t>(end));
    TORCH_CHECK(err != orErrorTimingDisabled, "Both events must be created with enable_timing=True to compute elapsed time");
    TORCH_CHECK(err != orErrorNotReady, "Both events must have completed before computing elapsed time (synchronize them first)");
    OPENREG_CHECK(err);
    return ms;
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, OpenRegGuardImpl);

// --------------------------------------------------------------- profiler

// Device timing for the autograd profiler's PrivateUse1 fallback
// (torch.autograd.profiler.profile(use_device="openreg")): each op is
// bracketed by timing events recorded on the current stream.
struct OpenRegProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(
      c10::DeviceIndex* device,
      torch::profiler::impl::ProfilerVoidEventStub* event,
      int64_t* cpu_ns) const override {
    const auto index = current_device();
    if (device != nullptr) {
      *device = index;
    }
    orEvent_t e = nullptr;
    OPENREG_CHECK(orEventCreateWithFlags(&e, orEventEnableTiming));
    *event = std::shared_ptr<void>(e, [](void* p) { (void)orEventDestroy(static_cast<orEvent_t>(p)); });
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
    OPENREG_CHECK(orEventRecord(e, native_stream(current_stream(index))));
  }

  float elapsed(
      const torch::profiler::impl::ProfilerVoidEventStub* start,
      const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    auto* a = static_cast<orEvent_t>(start->get());
    auto* b = static_cast<orEvent_t>(end->get());
    OPENREG_CHECK(orEventSynchronize(a));
    OPENREG_CHECK(orEventSynchronize(b));
    float ms = 0;
    OPENREG_CHECK(orEventElapsedTime(&ms, a, b));
    return ms * 1000.0f;  // the profiler works in microseconds
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}

  bool enabled() const override {
    return true;
  }

  void onEachDevice(std::function<void(int)> op) const override {
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, i));
      op(i);
    }
  }

  void synchronize() const override {
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      synchronize_device(i);
    }
  }
};

const bool g_profiler_registered = [] {
  static OpenRegProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

// ------------------------------------------------------------------ hooks

struct OpenRegHooks final : public at::PrivateUse1HooksInterface {
  void init() const override {
    lazy_init();
  }
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return device_count() > 0;
  }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < device_count();
  }
  c10::DeviceIndex deviceCount() const override {
    return device_count();
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    set_device(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto old = current_device();
    set_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return new_generator(device_index);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    int device = -1;
    OPENREG_CHECK(orPointerGetDevice(data, &device));
    return c10::Device(c10::kPrivateUse1, static_cast<c10::DeviceIndex>(device));
  }
  bool isPinnedPtr(const void* data) const override {
    return is_pinned_ptr(data);
  }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    return host_allocator();
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage_bytes(storage, newsize);
  }
};

const bool g_hooks_registered = [] {
  // Leaked on purpose: hooks must outlive every tensor, even at exit.
  at::RegisterPrivateUse1HooksInterface(new OpenRegHooks());
  return true;
}();

}  // namespace

}  // namespace openreg
