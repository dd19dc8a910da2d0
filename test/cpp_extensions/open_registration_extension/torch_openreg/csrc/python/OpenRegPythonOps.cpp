// Runtime functions exposed to Python as `torch.ops._openreg.*` custom ops.
// Custom ops avoid a pybind11 module (and the ~20 s <torch/extension.h>
// compile); the Python package wraps them in `torch.openreg`.
#include "OpenRegCommon.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>
#include <torch/library.h>

#include <c10/core/CachingDeviceAllocator.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace openreg {
namespace {

int64_t op_device_count() {
  return device_count();
}

int64_t op_current_device() {
  return current_device();
}

// Op schemas carry int64 and a c10::DeviceIndex is an int8: check before
// narrowing, so 1000 is reported as 1000, not as what it wraps to.
c10::DeviceIndex narrow_index(int64_t device) {
  TORCH_CHECK(
      device >= -1 && device <= INT8_MAX,
      "The device index is out of range: invalid openreg device index ", device);
  return static_cast<c10::DeviceIndex>(device);
}

void op_set_device(int64_t device) {
  set_device(narrow_index(device));
}

int64_t op_exchange_device(int64_t device) {
  const auto old = current_device();
  set_device(narrow_index(device));
  return old;
}

int resolve(int64_t device) {
  return resolve_device_index(narrow_index(device));
}

void op_synchronize(int64_t device) {
  synchronize_device(resolve(device));
}

// Waits for the current stream of the device (-1: current device).
void op_synchronize_stream(int64_t device) {
  synchronize_stream(current_stream(resolve(device)));
}

// Access windows for kernels that run in the host process on device memory
// (Inductor's C++ kernels): wait for the current stream, then open one.
void op_device_access_begin(int64_t device) {
  synchronize_stream(current_stream(resolve(device)));
  OPENREG_CHECK(orDeviceAccessBegin());
}

void op_device_access_end() {
  OPENREG_CHECK(orDeviceAccessEnd());
}

void op_init() {
  lazy_init();
}

bool op_is_initialized() {
  return is_initialized();
}

bool op_is_in_bad_fork() {
  return is_in_bad_fork();
}

c10::DeviceAllocator& caching_allocator() {
  return *static_cast<c10::DeviceAllocator*>(device_allocator());
}

// The allocator's statistics, flattened: for each StatArray of DeviceStats
// (in declaration order) the aggregate current/peak/allocated/freed, then
// the four counters. torch_openreg/openreg.py names them.
std::vector<int64_t> op_memory_stats(int64_t device) {
  const auto s = caching_allocator().getDeviceStats(resolve(device));
  std::vector<int64_t> out;
  for (const auto* array : {&s.allocation, &s.segment, &s.active, &s.inactive_split,
                            &s.allocated_bytes, &s.reserved_bytes, &s.active_bytes,
                            &s.inactive_split_bytes, &s.requested_bytes}) {
    const auto& stat = (*array)[0];  // StatType::AGGREGATE
    out.insert(out.end(), {stat.current, stat.peak, stat.allocated, stat.freed});
  }
  out.insert(out.end(), {s.num_alloc_retries, s.num_ooms, s.num_device_alloc, s.num_device_free});
  return out;
}

void op_empty_cache() {
  caching_allocator().emptyCache();
}

void op_reset_peak_memory_stats(int64_t device) {
  caching_allocator().resetPeakStats(resolve(device));
}

void op_reset_accumulated_memory_stats(int64_t device) {
  caching_allocator().resetAccumulatedStats(resolve(device));
}

// Live runtime allocations (segments) on the device, for leak checks.
int64_t op_allocation_count(int64_t device) {
  size_t count = 0;
  OPENREG_CHECK(orMemGetAllocationCount(resolve(device), &count));
  return static_cast<int64_t>(count);
}

// Backend metadata: named flags a backend keeps beside a tensor's data (a
// real backend might mark a private memory format with one). They live on
// the TensorImpl; torch.save / torch.load and
// torch._utils.get_tensor_metadata / set_tensor_metadata reach them through
// the TensorBackendMetaRegistry functions below.
using MetaFlags = std::unordered_map<std::string, bool>;
constexpr const char* kPrivateFormatKey = "openreg_private_format";

struct OpenRegBackendMeta final : public c10::BackendMeta {
  explicit OpenRegBackendMeta(MetaFlags flags) : flags(std::move(flags)) {}
  c10::intrusive_ptr<c10::BackendMeta> clone(const c10::intrusive_ptr<c10::BackendMeta>&) const override {
    return c10::make_intrusive<OpenRegBackendMeta>(flags);
  }
  MetaFlags flags;
};

// nullptr when the tensor carries no OpenReg metadata.
const OpenRegBackendMeta* backend_meta(const at::Tensor& t) {
  return dynamic_cast<const OpenRegBackendMeta*>(t.unsafeGetTensorImpl()->get_backend_meta());
}

// Adds `flags` to the tensor's metadata (a flag given again is overwritten).
void set_meta_flags(const at::Tensor& t, const MetaFlags& flags) {
  TORCH_CHECK(t.is_privateuseone(), "OpenReg backend metadata needs an openreg tensor, got one on ", t.device());
  const auto* old = backend_meta(t);
  MetaFlags merged = old == nullptr ? MetaFlags() : old->flags;
  for (const auto& [key, value] : flags) {
    merged[key] = value;
  }
  t.unsafeGetTensorImpl()->set_backend_meta(c10::make_intrusive<OpenRegBackendMeta>(std::move(merged)));
}

void op_set_private_format(const at::Tensor& self, bool value) {
  set_meta_flags(self, {{kPrivateFormatKey, value}});
}

// None when the tensor carries no private-format flag.
std::optional<bool> op_private_format(const at::Tensor& self) {
  const auto* meta = backend_meta(self);
  if (meta == nullptr) {
    return std::nullopt;
  }
  const auto it = meta->flags.find(kPrivateFormatKey);
  return it == meta->flags.end() ? std::nullopt : std::optional<bool>(it->second);
}

void serialize_backend_meta(const at::Tensor& t, MetaFlags& metadata) {
  if (const auto* meta = backend_meta(t)) {
    metadata.insert(meta->flags.begin(), meta->flags.end());
  }
}

// torch.load calls this for every openreg tensor, most with no flags.
void deserialize_backend_meta(const at::Tensor& t, MetaFlags& metadata) {
  if (!metadata.empty()) {
    set_meta_flags(t, metadata);
  }
}

const bool g_backend_meta_registered = [] {
  torch::jit::TensorBackendMetaRegistry(
      c10::DeviceType::PrivateUse1, &serialize_backend_meta, &deserialize_backend_meta);
  return true;
}();

// Streams travel as [stream_id, device_index, device_type], the fields
// torch.Stream is built from.
std::vector<int64_t> pack(const c10::Stream& stream) {
  return {stream.id(), stream.device_index(), static_cast<int64_t>(stream.device_type())};
}

std::vector<int64_t> op_current_stream(int64_t device) {
  return pack(current_stream(resolve(device)));
}

std::vector<int64_t> op_default_stream(int64_t device) {
  return pack(c10::Stream(c10::Stream::DEFAULT, c10::Device(c10::kPrivateUse1, resolve(device))));
}

void op_set_stream(int64_t device, int64_t stream_id) {
  exchange_stream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, resolve(device)), stream_id));
}

// Stream blocks, for tests of asynchronous behaviour without sleeping: a
// kernel that waits until the host releases it, so everything queued after
// it on that stream is observably pending.
struct StreamBlock {
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
};
std::mutex g_blocks_mutex;
std::map<int64_t, std::shared_ptr<StreamBlock>> g_blocks;
int64_t g_next_block = 0;

int64_t op_block_stream(int64_t device, int64_t stream_id) {
  const c10::Stream stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, resolve(device)), stream_id);
  auto block = std::make_shared<StreamBlock>();
  launch(stream, [block] {
    std::unique_lock<std::mutex> lock(block->mutex);
    block->released_cv.wait(lock, [&] { return block->released; });
  }, {}, /*accesses_memory=*/false);
  std::lock_guard<std::mutex> lock(g_blocks_mutex);
  g_blocks[++g_next_block] = block;
  return g_next_block;
}

void op_release_stream_block(int64_t handle) {
  std::shared_ptr<StreamBlock> block;
  {
    std::lock_guard<std::mutex> lock(g_blocks_mutex);
    auto it = g_blocks.find(handle);
    TORCH_CHECK(it != g_blocks.end(), "Unknown or already released openreg stream block ", handle);
    block = it->second;
    g_blocks.erase(it);
  }
  std::lock_guard<std::mutex> lock(block->mutex);
  block->released = true;
  block->released_cv.notify_all();
}

// Seeds travel as int64 (the only integer type of op schemas); the Python
// side maps them to and from the unsigned 64-bit range.
void op_manual_seed(int64_t device, int64_t seed) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(static_cast<uint64_t>(seed));
}

int64_t op_seed(int64_t device) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return static_cast<int64_t>(gen.seed());
}

int64_t op_initial_seed(int64_t device) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return static_cast<int64_t>(gen.current_seed());
}

// Offsets travel as int64 like seeds; the generator checks the value.
int64_t op_get_offset(int64_t device) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return static_cast<int64_t>(gen.get_offset());
}

void op_set_offset(int64_t device, int64_t offset) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_offset(static_cast<uint64_t>(offset));
}

at::Tensor op_get_rng_state(int64_t device) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void op_set_rng_state(int64_t device, const at::Tensor& state) {
  auto gen = default_generator(resolve(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace

TORCH_LIBRARY(_openreg, m) {
  m.def("device_count() -> int", &op_device_count);
  m.def("current_device() -> int", &op_current_device);
  m.def("set_device(int device) -> ()", &op_set_device);
  m.def("exchange_device(int device) -> int", &op_exchange_device);
  m.def("synchronize(int device) -> ()", &op_synchronize);
  m.def("synchronize_stream(int device) -> ()", &op_synchronize_stream);
  m.def("device_access_begin(int device) -> ()", &op_device_access_begin);
  m.def("device_access_end() -> ()", &op_device_access_end);
  m.def("init() -> ()", &op_init);
  m.def("is_initialized() -> bool", &op_is_initialized);
  m.def("is_in_bad_fork() -> bool", &op_is_in_bad_fork);
  m.def("memory_stats(int device) -> int[]", &op_memory_stats);
  m.def("empty_cache() -> ()", &op_empty_cache);
  m.def("reset_peak_memory_stats(int device) -> ()", &op_reset_peak_memory_stats);
  m.def("reset_accumulated_memory_stats(int device) -> ()", &op_reset_accumulated_memory_stats);
  m.def("allocation_count(int device) -> int", &op_allocation_count);
  m.def("set_private_format(Tensor self, bool value) -> ()", &op_set_private_format);
  m.def("private_format(Tensor self) -> bool?", &op_private_format);
  m.def("current_stream(int device) -> int[]", &op_current_stream);
  m.def("default_stream(int device) -> int[]", &op_default_stream);
  m.def("set_stream(int device, int stream_id) -> ()", &op_set_stream);
  m.def("block_stream(int device, int stream_id) -> int", &op_block_stream);
  m.def("release_stream_block(int handle) -> ()", &op_release_stream_block);
  m.def("manual_seed(int device, int seed) -> ()", &op_manual_seed);
  m.def("seed(int device) -> int", &op_seed);
  m.def("initial_seed(int device) -> int", &op_initial_seed);
  m.def("get_offset(int device) -> int", &op_get_offset);
  m.def("set_offset(int device, int offset) -> ()", &op_set_offset);
  m.def("get_rng_state(int device) -> Tensor", &op_get_rng_state);
  m.def("set_rng_state(int device, Tensor state) -> ()", &op_set_rng_state);
}

}  // namespace openreg
