#include "OpenRegGuard.h"

#include "OpenRegEvent.h"
#include "OpenRegException.h"
#include "OpenRegFunctions.h"
#include "OpenRegStream.h"

namespace openreg {

c10::DeviceType OpenRegGuardImpl::type() const {
  return static_type;
}

c10::Device OpenRegGuardImpl::exchangeDevice(c10::Device device) const {
  TORCH_CHECK(device.is_privateuseone(), "Expected an openreg device, got ", device);
  const auto old = getDevice();
  if (device.index() != old.index()) {
    set_device(device.index());
  }
  return old;
}

c10::Device OpenRegGuardImpl::getDevice() const {
  return c10::Device(static_type, current_device());
}

void OpenRegGuardImpl::setDevice(c10::Device device) const {
  TORCH_CHECK(device.is_privateuseone(), "Expected an openreg device, got ", device);
  set_device(device.index());
}

void OpenRegGuardImpl::uncheckedSetDevice(c10::Device device) const noexcept {
  (void)orSetDevice(device.index());
}

c10::DeviceIndex OpenRegGuardImpl::deviceCount() const noexcept {
  return device_count();
}

c10::Stream OpenRegGuardImpl::getStream(c10::Device device) const {
  return current_stream(device.index());
}

c10::Stream OpenRegGuardImpl::getDefaultStream(c10::Device device) const {
  return c10::Stream(c10::Stream::DEFAULT, openreg_device(device.index()));
}

c10::Stream OpenRegGuardImpl::getStreamFromGlobalPool(c10::Device device, bool) const {
  return pool_stream(device.index());
}

c10::Stream OpenRegGuardImpl::getNewStream(c10::Device device, int) const {
  return pool_stream(device.index());
}

c10::Stream OpenRegGuardImpl::exchangeStream(c10::Stream stream) const {
  return exchange_stream(stream);
}

bool OpenRegGuardImpl::queryStream(const c10::Stream& stream) const {
  const orError_t err = orStreamQuery(native_stream(stream));
  if (err == orErrorNotReady) {
    return false;
  }
  OPENREG_CHECK(err);
  return true;
}

void OpenRegGuardImpl::synchronizeStream(const c10::Stream& stream) const {
  synchronize_stream(stream);
}

void OpenRegGuardImpl::synchronizeDevice(const c10::DeviceIndex device_index) const {
  synchronize_device(device_index);
}

void OpenRegGuardImpl::recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const {
  // Queued work keeps its storages alive; see OpenRegDeviceAllocator.cpp.
}

void OpenRegGuardImpl::record(
    void** event,
    const c10::Stream& stream,
    const c10::DeviceIndex device_index,
    const c10::EventFlag flag) const {
  TORCH_CHECK(
      device_index == -1 || device_index == stream.device_index(),
      "Event device index ", static_cast<int>(device_index),
      " does not match recording stream's device index ",
      static_cast<int>(stream.device_index()));
  // BACKEND_DEFAULT is what torch.Event(enable_timing=True) asks for.
  record_event(event, stream, flag == c10::EventFlag::BACKEND_DEFAULT);
}

void OpenRegGuardImpl::block(void* event, const c10::Stream& stream) const {
  block_stream(event, stream);
}

bool OpenRegGuardImpl::queryEvent(void* event) const {
  return query_event(event);
}

void OpenRegGuardImpl::destroyEvent(void* event, const c10::DeviceIndex) const noexcept {
  destroy_event(event);
}

void OpenRegGuardImpl::synchronizeEvent(void* event) const {
  synchronize_event(event);
}

double OpenRegGuardImpl::elapsedTime(void* start, void* end, const c10::DeviceIndex) const {
  return elapsed_time(start, end);
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, OpenRegGuardImpl);

}  // namespace openreg
