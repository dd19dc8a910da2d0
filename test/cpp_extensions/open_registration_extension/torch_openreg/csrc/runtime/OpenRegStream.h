// Streams of the c10 integration: c10 stream ids mapped to runtime streams,
// per-thread current streams, stream-ordered kernel launches and copies, and
// the device access windows kernels run in.
#pragma once

#include <openreg.h>

#include <c10/core/Storage.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace openreg {

// c10 stream ids: 0 is a device's default stream, 1..kStreamPoolSize the
// pool streams handed out by getStreamFromGlobalPool / getNewStream.
constexpr int kStreamPoolSize = 8;
c10::Stream current_stream(c10::DeviceIndex index);  // -1: current device
c10::Stream exchange_stream(c10::Stream stream);
orStream_t native_stream(const c10::Stream& stream);
c10::Stream pool_stream(c10::DeviceIndex index);
// Waits for the stream, then reports an error raised by a kernel it ran.
void synchronize_stream(const c10::Stream& stream);
// Waits for every stream of the device (-1: current device).
void synchronize_device(c10::DeviceIndex index);
// Runs `kernel` on the stream's worker thread, in order with its other work.
// `keep` (the storages the kernel or a just-queued copy touches) stays alive
// until then, so the caching allocator cannot hand their memory out early.
// Kernels run inside a device access window (device memory is otherwise not
// host-accessible, see openreg.h) unless accesses_memory is false.
void launch(
    const c10::Stream& stream,
    std::function<void()> kernel,
    std::vector<c10::Storage> keep,
    bool accesses_memory = true);
// An access window for the scope (RAII over orDeviceAccessBegin/End); a
// no-op when `open` is false.
class DeviceAccess {
 public:
  explicit DeviceAccess(bool open = true);
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;

 private:
  bool open_;
};
// Queues an (already checked) async copy on `stream`, keeping `keep` alive.
void copy_async(
    const c10::Stream& stream,
    void* dst,
    const void* src,
    size_t count,
    orMemcpyKind kind,
    std::vector<c10::Storage> keep);

}  // namespace openreg
