#include "OpenRegStream.h"

#include "OpenRegException.h"
#include "OpenRegFunctions.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace openreg {

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

}  // namespace openreg
