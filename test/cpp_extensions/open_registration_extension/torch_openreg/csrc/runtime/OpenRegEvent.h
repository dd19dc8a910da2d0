// Events of the c10 integration. A c10 event handle (void*) is an orEvent_t
// created by its first record; nullptr means "never recorded", which every
// function below treats as an event that has already completed.
#pragma once

#include <c10/core/Stream.h>

namespace openreg {

// Creates the event on first use (with timing if enable_timing), then
// records it on the stream.
void record_event(void** event, const c10::Stream& stream, bool enable_timing);
// Makes the stream wait for the event's recorded work.
void block_stream(void* event, const c10::Stream& stream);
bool query_event(void* event);
void synchronize_event(void* event);
void destroy_event(void* event) noexcept;
// Milliseconds between two recorded, completed, timing-enabled events.
double elapsed_time(void* start, void* end);

}  // namespace openreg
