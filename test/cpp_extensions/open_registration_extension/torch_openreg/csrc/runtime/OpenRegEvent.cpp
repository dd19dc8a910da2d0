#include "OpenRegEvent.h"

#include "OpenRegException.h"
#include "OpenRegStream.h"

namespace openreg {

void record_event(void** event, const c10::Stream& stream, bool enable_timing) {
  if (*event == nullptr) {
    orEvent_t created = nullptr;
    OPENREG_CHECK(orEventCreateWithFlags(&created, enable_timing ? orEventEnableTiming : orEventDefault));
    *event = created;
  }
  OPENREG_CHECK(orEventRecord(static_cast<orEvent_t>(*event), native_stream(stream)));
}

void block_stream(void* event, const c10::Stream& stream) {
  if (event != nullptr) {  // an unrecorded event: nothing to wait for
    OPENREG_CHECK(orStreamWaitEvent(native_stream(stream), static_cast<orEvent_t>(event)));
  }
}

bool query_event(void* event) {
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

void synchronize_event(void* event) {
  if (event != nullptr) {
    OPENREG_CHECK(orEventSynchronize(static_cast<orEvent_t>(event)));
  }
}

void destroy_event(void* event) noexcept {
  if (event != nullptr) {
    (void)orEventDestroy(static_cast<orEvent_t>(event));
  }
}

double elapsed_time(void* start, void* end) {
  TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before computing elapsed time");
  float ms = 0;
  const orError_t err = orEventElapsedTime(&ms, static_cast<orEvent_t>(start), static_cast<orEvent_t>(end));
  TORCH_CHECK(err != orErrorTimingDisabled, "Both events must be created with enable_timing=True to compute elapsed time");
  TORCH_CHECK(err != orErrorNotReady, "Both events must have completed before computing elapsed time (synchronize them first)");
  OPENREG_CHECK(err);
  return ms;
}

}  // namespace openreg
