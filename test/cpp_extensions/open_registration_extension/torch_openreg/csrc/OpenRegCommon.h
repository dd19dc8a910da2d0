// Shared declarations of the OpenReg c10/ATen integration layer.
//
// Kept to c10/ATen core headers on purpose: every translation unit that
// pulls in <torch/extension.h> or <ATen/ATen.h> costs ~20 s of compile time.
#pragma once

#include <openreg.h>

#include <ATen/core/Generator.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>
#include <c10/util/Exception.h>

#include <functional>
#include <vector>

// Turns a runtime error code into a c10::Error (a RuntimeError in Python)
// that names the failing call, instead of crashing or ignoring it.
#define OPENREG_CHECK(EXPR)                                       \
  do {                                                            \
    const orError_t openreg_err_ = (EXPR);                        \
    TORCH_CHECK(                                                  \
        openreg_err_ == orSuccess,                                \
        "OpenReg runtime error: ",                                \
        orGetErrorString(openreg_err_),                           \
        " (",                                                     \
        #EXPR,                                                    \
        ")");                                                     \
  } while (0)

namespace openreg {

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

// The caching device allocator (a c10::DeviceAllocator, registered for
// PrivateUse1) and the page-locked host allocator.
c10::Allocator* device_allocator();
c10::Allocator* host_allocator();
bool is_pinned_ptr(const void* ptr);

// --- streams ---------------------------------------------------------------
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

// Grows (never shrinks) a storage to new_bytes, preserving its contents.
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);

// Default generator of a device (-1: current device). Each OpenReg generator
// wraps a CPU generator that the CPU fallback kernels consume.
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
// The CPU generator a random kernel on an OpenReg generator must use (one
// offset step of that generator).
at::Generator backing_cpu_generator(const at::Generator& openreg_generator);

}  // namespace openreg
