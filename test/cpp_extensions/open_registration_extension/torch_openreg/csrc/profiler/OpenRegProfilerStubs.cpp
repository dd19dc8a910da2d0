// Device timing for the autograd profiler's PrivateUse1 fallback
// (torch.autograd.profiler.profile(use_device="openreg")), registered when
// the library loads.
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegStream.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <functional>
#include <memory>

namespace openreg {

namespace {

// Each op is bracketed by timing events recorded on the current stream.
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

}  // namespace

}  // namespace openreg
