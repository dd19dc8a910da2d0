// Runtime functions exposed to Python as `torch.ops._openreg.*` custom ops.
// Custom ops avoid a pybind11 module (and the ~20 s <torch/extension.h>
// compile); the Python package wraps them in `torch.openreg`.
#include "OpenRegCommon.h"

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <mutex>

namespace openreg {
namespace {

int64_t op_device_count() {
  return device_count();
}

int64_t op_current_device() {
  return current_device();
}

void op_set_device(int64_t device) {
  set_device(static_cast<c10::DeviceIndex>(device));
}

int64_t op_exchange_device(int64_t device) {
  const auto old = current_device();
  set_device(static_cast<c10::DeviceIndex>(device));
  return old;
}

int resolve(int64_t device) {
  TORCH_CHECK(device >= -1 && device <= INT8_MAX, "Invalid openreg device index ", device);
  return resolve_device_index(static_cast<c10::DeviceIndex>(device));
}

void op_synchronize(int64_t device) {
  const auto old = current_device();
  set_device(resolve(device));
  const orError_t err = orDeviceSynchronize();
  set_device(old);
  OPENREG_CHECK(err);
}

int64_t op_memory_allocated(int64_t device) {
  size_t bytes = 0;
  OPENREG_CHECK(orMemGetAllocated(resolve(device), &bytes));
  return static_cast<int64_t>(bytes);
}

int64_t op_max_memory_allocated(int64_t device) {
  size_t bytes = 0;
  OPENREG_CHECK(orMemGetPeakAllocated(resolve(device), &bytes));
  return static_cast<int64_t>(bytes);
}

int64_t op_allocation_count(int64_t device) {
  size_t count = 0;
  OPENREG_CHECK(orMemGetAllocationCount(resolve(device), &count));
  return static_cast<int64_t>(count);
}

void op_reset_peak_memory_stats(int64_t device) {
  OPENREG_CHECK(orMemResetPeakAllocated(resolve(device)));
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
  m.def("memory_allocated(int device) -> int", &op_memory_allocated);
  m.def("max_memory_allocated(int device) -> int", &op_max_memory_allocated);
  m.def("allocation_count(int device) -> int", &op_allocation_count);
  m.def("reset_peak_memory_stats(int device) -> ()", &op_reset_peak_memory_stats);
  m.def("manual_seed(int device, int seed) -> ()", &op_manual_seed);
  m.def("seed(int device) -> int", &op_seed);
  m.def("initial_seed(int device) -> int", &op_initial_seed);
  m.def("get_rng_state(int device) -> Tensor", &op_get_rng_state);
  m.def("set_rng_state(int device, Tensor state) -> ()", &op_set_rng_state);
}

}  // namespace openreg
