/*
 * OpenReg device runtime: a tiny, C-style "driver" that simulates a set of
 * accelerator devices whose memory is carved out of host memory.
 *
 * This layer knows nothing about PyTorch. It plays the role a vendor runtime
 * (the CUDA runtime, for example) plays for a real PrivateUse1 backend: the
 * c10/ATen integration in ../../csrc only talks to devices through this API.
 *
 * Execution model: like a GPU runtime. Every device has a default stream and
 * any number of created streams; each stream is a FIFO served by its own
 * worker thread, so work queued on one stream runs in order and concurrently
 * with the host and with other streams. Events mark a point in a stream;
 * streams can wait for events recorded on other streams. Blocking calls
 * (orMemcpy, orStreamSynchronize, ...) return once the work they waited for
 * has finished. All functions return an orError_t; none throws or aborts.
 */
#ifndef OPENREG_H_
#define OPENREG_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define OPENREG_EXPORT __declspec(dllexport)
#else
#define OPENREG_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum orError_t {
  orSuccess = 0,
  orErrorInvalidValue = 1,        /* null out-pointer, bad enum, bad size */
  orErrorMemoryAllocation = 2,    /* host allocation backing a device failed */
  orErrorInvalidDevice = 3,       /* device index out of [0, count) */
  orErrorInvalidDevicePointer = 4,/* pointer/range not inside a live allocation */
  orErrorNotReady = 5,            /* queued work has not finished yet */
  orErrorInvalidResourceHandle = 6,/* unknown stream/event handle */
  orErrorTimingDisabled = 7,      /* elapsed time of an event without timing */
  orErrorForkedProcess = 8        /* streams used in a child forked after they started */
} orError_t;

typedef enum orMemcpyKind {
  orMemcpyHostToHost = 0,
  orMemcpyHostToDevice = 1,
  orMemcpyDeviceToHost = 2,
  orMemcpyDeviceToDevice = 3
} orMemcpyKind;

/* Opaque handles. A NULL stream means the current device's default stream. */
typedef struct orStream_st* orStream_t;
typedef struct orEvent_st* orEvent_t;

/* Work queued on a stream by orLaunchHostFunc. */
typedef void (*orHostFn_t)(void* user_data);

typedef enum orEventFlags {
  orEventDefault = 0,
  orEventEnableTiming = 1 /* record a timestamp when the event completes */
} orEventFlags;

OPENREG_EXPORT const char* orGetErrorString(orError_t error);

/* Devices. The count defaults to 2 and can be overridden with the
 * OPENREG_DEVICE_COUNT environment variable (read once, 0..64). The current
 * device is per thread and starts at 0. orDeviceSynchronize waits for every
 * stream of the current device. */
OPENREG_EXPORT orError_t orGetDeviceCount(int* count);
OPENREG_EXPORT orError_t orGetDevice(int* device);
OPENREG_EXPORT orError_t orSetDevice(int device);
OPENREG_EXPORT orError_t orDeviceSynchronize(void);

/* Device memory. orMalloc allocates on the current device; size 0 yields
 * NULL. orFree(NULL) is a no-op. Freeing does not wait for queued work: the
 * caller must not free memory that queued work still uses.
 *
 * Device memory is not host-accessible: reading or writing it from the host
 * faults, except inside an access window. The runtime's own copies open one;
 * kernels that compute on device memory in the host process (the
 * integration's kernels) bracket their work with orDeviceAccessBegin/End.
 * Windows nest and may overlap across threads; protection is process-wide,
 * so all device memory is accessible while any window is open. */
OPENREG_EXPORT orError_t orDeviceAccessBegin(void);
OPENREG_EXPORT orError_t orDeviceAccessEnd(void);
OPENREG_EXPORT orError_t orMalloc(void** ptr, size_t size);
OPENREG_EXPORT orError_t orFree(void* ptr);
/* Device owning ptr (ptr may point anywhere inside an allocation). */
OPENREG_EXPORT orError_t orPointerGetDevice(const void* ptr, int* device);

/* Page-locked host memory: host-accessible, and the only host memory that
 * asynchronous copies may use without staging. */
OPENREG_EXPORT orError_t orMallocHost(void** ptr, size_t size);
OPENREG_EXPORT orError_t orFreeHost(void* ptr);
/* Sets *is_pinned to 1 when ptr lies inside a live orMallocHost block. */
OPENREG_EXPORT orError_t orPointerIsPinned(const void* ptr, int* is_pinned);

/* Copies are range-checked: device sides must lie inside live allocations.
 * orMemcpy queues on the current device's default stream and waits for it;
 * orMemcpyAsync queues on `stream` and returns at once, so the host side
 * must stay valid (page-locked memory, or kept alive) until it has run. */
OPENREG_EXPORT orError_t
orMemcpy(void* dst, const void* src, size_t count, orMemcpyKind kind);
OPENREG_EXPORT orError_t orMemcpyAsync(
    void* dst,
    const void* src,
    size_t count,
    orMemcpyKind kind,
    orStream_t stream);
OPENREG_EXPORT orError_t orMemset(void* dst, int value, size_t count);

/* Per-device accounting of orMalloc, in bytes: currently allocated, peak
 * since the last reset, and the number of live allocations. */
OPENREG_EXPORT orError_t orMemGetAllocated(int device, size_t* bytes);
OPENREG_EXPORT orError_t orMemGetPeakAllocated(int device, size_t* bytes);
OPENREG_EXPORT orError_t orMemResetPeakAllocated(int device);
OPENREG_EXPORT orError_t orMemGetAllocationCount(int device, size_t* count);

/* Streams (created on the current device). orStreamQuery returns
 * orErrorNotReady while queued work is pending. */
OPENREG_EXPORT orError_t orStreamCreate(orStream_t* stream);
OPENREG_EXPORT orError_t orStreamDestroy(orStream_t stream);
OPENREG_EXPORT orError_t orStreamSynchronize(orStream_t stream);
OPENREG_EXPORT orError_t orStreamQuery(orStream_t stream);
OPENREG_EXPORT orError_t orStreamGetDevice(orStream_t stream, int* device);
/* Work queued on `stream` after this call starts once `event` completes
 * (its most recent record at the time of the call; no-op if unrecorded). */
OPENREG_EXPORT orError_t orStreamWaitEvent(orStream_t stream, orEvent_t event);
/* The kernel launch primitive: fn(user_data) runs on the stream's worker,
 * in order with the stream's other work. */
OPENREG_EXPORT orError_t
orLaunchHostFunc(orStream_t stream, orHostFn_t fn, void* user_data);

/* Events. Recording queues a marker on a stream; the event completes when
 * the stream reaches it. Query returns orErrorNotReady before that. */
OPENREG_EXPORT orError_t orEventCreate(orEvent_t* event);
OPENREG_EXPORT orError_t
orEventCreateWithFlags(orEvent_t* event, unsigned int flags);
OPENREG_EXPORT orError_t orEventDestroy(orEvent_t event);
OPENREG_EXPORT orError_t orEventRecord(orEvent_t event, orStream_t stream);
OPENREG_EXPORT orError_t orEventSynchronize(orEvent_t event);
OPENREG_EXPORT orError_t orEventQuery(orEvent_t event);
/* Both events must have completed and have been created with timing. */
OPENREG_EXPORT orError_t
orEventElapsedTime(float* ms, orEvent_t start, orEvent_t end);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPENREG_H_ */
