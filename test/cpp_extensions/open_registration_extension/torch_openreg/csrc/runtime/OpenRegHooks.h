// The PrivateUse1HooksInterface (registered when the library loads): what
// ATen asks a PrivateUse1 backend for (init, devices, generators, pinned
// memory, storage resizes).
#pragma once

#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace openreg {

struct OpenRegHooks final : public at::PrivateUse1HooksInterface {
  void init() const override;
  bool isBuilt() const override;
  bool isAvailable() const override;
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override;
  c10::DeviceIndex deviceCount() const override;
  void setCurrentDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex getCurrentDevice() const override;
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override;
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override;
  at::Device getDeviceFromPtr(void* data) const override;
  bool isPinnedPtr(const void* data) const override;
  c10::Allocator* getPinnedMemoryAllocator() const override;
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override;
};

}  // namespace openreg
