/*
 * OpenReg device runtime: a tiny, C-style "driver" that simulates a set of
 * accelerator devices whose memory is carved out of host memory.
 *
 * This layer knows nothing about PyTorch. It plays the role a vendor runtime
 * (the CUDA runtime, for example) plays for a real PrivateUse1 backend: the
 * c10/ATen integration in ../../csrc only talks to devices through this API.
 *
 * Execution model: every operation completes before the call returns, so
 * streams and events exist for API shape (and timing) but never have pending
 * work. All functions return an orError_t; none of them throws or aborts.
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
  orErrorNotReady = 5,            /* query on unrecorded work (never pending here) */
  orErrorInvalidResourceHandle = 6/* unknown stream/event handle */
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

OPENREG_EXPORT const char* orGetErrorString(orError_t error);

/* Devices. The count defaults to 2 and can be overridden with the
 * OPENREG_DEVICE_COUNT environment variable (read once, 0..64). The current
 * device is per thread and starts at 0. */
OPENREG_EXPORT orError_t orGetDeviceCount(int* count);
OPENREG_EXPORT orError_t orGetDevice(int* device);
OPENREG_EXPORT orError_t orSetDevice(int device);
OPENREG_EXPORT orError_t orDeviceSynchronize(void);

/* Memory. orMalloc allocates on the current device; size 0 yields NULL.
 * orFree(NULL) is a no-op. */
OPENREG_EXPORT orError_t orMalloc(void** ptr, size_t size);
OPENREG_EXPORT orError_t orFree(void* ptr);
/* Device owning ptr (ptr may point anywhere inside an allocation). */
OPENREG_EXPORT orError_t orPointerGetDevice(const void* ptr, int* device);
/* Copies are range-checked: device sides must lie inside live allocations. */
OPENREG_EXPORT orError_t
orMemcpy(void* dst, const void* src, size_t count, orMemcpyKind kind);
OPENREG_EXPORT orError_t orMemcpyAsync(
    void* dst,
    const void* src,
    size_t count,
    orMemcpyKind kind,
    orStream_t stream);
OPENREG_EXPORT orError_t orMemset(void* dst, int value, size_t count);

/* Per-device accounting, in bytes: currently allocated, peak since the last
 * reset, and the number of live allocations. */
OPENREG_EXPORT orError_t orMemGetAllocated(int device, size_t* bytes);
OPENREG_EXPORT orError_t orMemGetPeakAllocated(int device, size_t* bytes);
OPENREG_EXPORT orError_t orMemResetPeakAllocated(int device);
OPENREG_EXPORT orError_t orMemGetAllocationCount(int device, size_t* count);

/* Streams (on the current device). */
OPENREG_EXPORT orError_t orStreamCreate(orStream_t* stream);
OPENREG_EXPORT orError_t orStreamDestroy(orStream_t stream);
OPENREG_EXPORT orError_t orStreamSynchronize(orStream_t stream);
OPENREG_EXPORT orError_t orStreamQuery(orStream_t stream);
OPENREG_EXPORT orError_t orStreamGetDevice(orStream_t stream, int* device);

/* Events: recording stores a host timestamp. */
OPENREG_EXPORT orError_t orEventCreate(orEvent_t* event);
OPENREG_EXPORT orError_t orEventDestroy(orEvent_t event);
OPENREG_EXPORT orError_t orEventRecord(orEvent_t event, orStream_t stream);
OPENREG_EXPORT orError_t orEventSynchronize(orEvent_t event);
OPENREG_EXPORT orError_t orEventQuery(orEvent_t event);
OPENREG_EXPORT orError_t
orEventElapsedTime(float* ms, orEvent_t start, orEvent_t end);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPENREG_H_ */
