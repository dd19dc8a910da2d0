#include "OpenRegHooks.h"

#include "OpenRegDeviceAllocator.h"
#include "OpenRegException.h"
#include "OpenRegFunctions.h"
#include "OpenRegGenerator.h"
#include "OpenRegHostAllocator.h"

namespace openreg {

void OpenRegHooks::init() const {
  lazy_init();
}

bool OpenRegHooks::isBuilt() const {
  return true;
}

bool OpenRegHooks::isAvailable() const {
  return device_count() > 0;
}

bool OpenRegHooks::hasPrimaryContext(c10::DeviceIndex device_index) const {
  return device_index >= 0 && device_index < device_count();
}

c10::DeviceIndex OpenRegHooks::deviceCount() const {
  return device_count();
}

void OpenRegHooks::setCurrentDevice(c10::DeviceIndex device) const {
  set_device(device);
}

c10::DeviceIndex OpenRegHooks::getCurrentDevice() const {
  return current_device();
}

c10::DeviceIndex OpenRegHooks::exchangeDevice(c10::DeviceIndex device) const {
  const auto old = current_device();
  set_device(device);
  return old;
}

c10::DeviceIndex OpenRegHooks::maybeExchangeDevice(c10::DeviceIndex device) const {
  return exchangeDevice(device);
}

const at::Generator& OpenRegHooks::getDefaultGenerator(c10::DeviceIndex device_index) const {
  return default_generator(device_index);
}

at::Generator OpenRegHooks::getNewGenerator(c10::DeviceIndex device_index) const {
  return new_generator(device_index);
}

at::Device OpenRegHooks::getDeviceFromPtr(void* data) const {
  int device = -1;
  OPENREG_CHECK(orPointerGetDevice(data, &device));
  return c10::Device(c10::kPrivateUse1, static_cast<c10::DeviceIndex>(device));
}

bool OpenRegHooks::isPinnedPtr(const void* data) const {
  return is_pinned_ptr(data);
}

c10::Allocator* OpenRegHooks::getPinnedMemoryAllocator() const {
  return host_allocator();
}

void OpenRegHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  resize_storage_bytes(storage, newsize);
}

namespace {

const bool g_hooks_registered = [] {
  // Leaked on purpose: hooks must outlive every tensor, even at exit.
  at::RegisterPrivateUse1HooksInterface(new OpenRegHooks());
  return true;
}();

}  // namespace

}  // namespace openreg
