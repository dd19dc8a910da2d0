// c10 integration of the OpenReg runtime: device selection, the PrivateUse1
// allocator, the DeviceGuard implementation, generators and the PrivateUse1
// hooks. Everything here is registered by static initializers when the
// shared library is loaded.
#include "OpenRegCommon.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <deque>
#include <mutex>

namespace openreg {

// ---------------------------------------------------------------- devices

c10::DeviceIndex device_count() noexcept {
  int count = 0;
  if (orGetDeviceCount(&count) != orSuccess) {
    return 0;  // callers (DeviceGuardImpl::deviceCount) must not throw
  }
  return static_cast<c10::DeviceIndex>(count);
}

c10::DeviceIndex current_device() {
  int device = 0;
  OPENREG_CHECK(orGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

static void check_index(c10::DeviceIndex index) {
  const auto count = device_count();
  TORCH_CHECK(
      index >= 0 && index < count,
      "Invalid openreg device index ",
      static_cast<int>(index),
      ": there are ",
      static_cast<int>(count),
      " openreg device(s), valid indices are 0..",
      static_cast<int>(count) - 1);
}

void set_device(c10::DeviceIndex index) {
  check_index(index);
  OPENREG_CHECK(orSetDevice(index));
}

c10::DeviceIndex resolve_device_index(c10::DeviceIndex index) {
  if (index == -1) {
    return current_device();
  }
  check_index(index);
  return index;
}

// -------------------------------------------------------------- allocator

namespace {

void delete_device_memory(void* ptr) {
  // A deleter cannot report errors; a failure here would mean a double free,
  // which the runtime detects and refuses instead of corrupting memory.
  (void)orFree(ptr);
}

struct DeviceAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    const auto device = current_device();
    void* data = nullptr;
    OPENREG_CHECK(orMalloc(&data, nbytes));
    return {data, data, &delete_device_memory, c10::Device(c10::kPrivateUse1, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &delete_device_memory;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    OPENREG_CHECK(orMemcpy(dest, src, count, orMemcpyDeviceToDevice));
  }
};

DeviceAllocator g_device_allocator;

}  // namespace

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_device_allocator)

c10::Allocator* device_allocator() {
  return &g_device_allocator;
}

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  if (new_bytes <= storage.nbytes()) {
    storage.unsafeGetStorageImpl()->set_nbytes(new_bytes);
    return;
  }
  TORCH_CHECK(storage.resizable(), "Trying to resize an openreg storage that is not resizable");
  const auto device = storage.device();
  const auto old_index = current_device();
  // Allocate on the storage's device, not on whatever device is current.
  set_device(device.index() >= 0 ? device.index() : old_index);
  c10::DataPtr fresh;
  try {
    fresh = g_device_allocator.allocate(new_bytes);
  } catch (...) {
    set_device(old_index);
    throw;
  }
  set_device(old_index);
  if (storage.nbytes() > 0 && storage.data() != nullptr) {
    OPENREG_CHECK(orMemcpy(
        fresh.get(), storage.data(), storage.nbytes(), orMemcpyDeviceToDevice));
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(new_bytes);
}

// ------------------------------------------------------------ generators

namespace {

// A PrivateUse1 generator whose state is a CPU generator. The CPU fallback
// runs random kernels on the CPU, and those only accept CPU generators, so
// the fallback hands them the backing generator (see OpenRegKernels.cpp).
struct OpenRegGeneratorImpl final : public c10::GeneratorImpl {
  explicit OpenRegGeneratorImpl(
      c10::DeviceIndex index,
      at::Generator cpu = at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val))
      : c10::GeneratorImpl(
            c10::Device(c10::kPrivateUse1, index),
            c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)) {}

  void set_current_seed(uint64_t seed) override {
    cpu_.set_current_seed(seed);
  }
  void set_offset(uint64_t offset) override {
    cpu_.set_offset(offset);
  }
  uint64_t get_offset() const override {
    return cpu_.get_offset();
  }
  uint64_t current_seed() const override {
    return cpu_.current_seed();
  }
  uint64_t seed() override {
    return cpu_.seed();
  }
  void set_state(const c10::TensorImpl& new_state) override {
    cpu_.unsafeGetGeneratorImpl()->set_state(new_state);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    return cpu_.unsafeGetGeneratorImpl()->get_state();
  }
  OpenRegGeneratorImpl* clone_impl() const override {
    return new OpenRegGeneratorImpl(device().index(), cpu_.clone());
  }

  const at::Generator& cpu() const {
    return cpu_;
  }

 private:
  at::Generator cpu_;
};

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex index) {
  // One lazily created generator per device; a deque keeps references stable.
  static std::once_flag once;
  static std::deque<at::Generator>* generators = nullptr;
  std::call_once(once, [] {
    generators = new std::deque<at::Generator>();
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      generators->push_back(at::make_generator<OpenRegGeneratorImpl>(i));
    }
  });
  return (*generators)[resolve_device_index(index)];
}

at::Generator new_generator(c10::DeviceIndex index) {
  return at::make_generator<OpenRegGeneratorImpl>(resolve_device_index(index));
}

at::Generator backing_cpu_generator(const at::Generator& gen) {
  auto* impl = dynamic_cast<OpenRegGeneratorImpl*>(gen.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "Expected an openreg generator, got one for ", gen.device());
  return impl->cpu();
}

// ---------------------------------------------------------- device guard

namespace {

struct OpenRegGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override {
    return static_type;
  }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_CHECK(device.is_privateuseone(), "Expected an openreg device, got ", device);
    const auto old = getDevice();
    if (device.index() != old.index()) {
      set_device(device.index());
    }
    return old;
  }

  c10::Device getDevice() const override {
    return c10::Device(static_type, current_device());
  }

  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.is_privateuseone(), "Expected an openreg device, got ", device);
    set_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    (void)orSetDevice(device.index());
  }

  // One (synchronous) stream per device: the default stream, id 0.
  c10::Stream getStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream getNewStream(c10::Device device, int) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    return c10::Stream(c10::Stream::DEFAULT, stream.device());
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }

  void record(
      void** event,
      const c10::Stream& stream,
      const c10::DeviceIndex device_index,
      const c10::EventFlag) const override {
    TORCH_CHECK(
        device_index == -1 || device_index == stream.device_index(),
        "Event device index ", static_cast<int>(device_index),
        " does not match recording stream's device index ",
        static_cast<int>(stream.device_index()));
    if (*event == nullptr) {
      orEvent_t created = nullptr;
      OPENREG_CHECK(orEventCreate(&created));
      *event = created;
    }
    OPENREG_CHECK(orEventRecord(static_cast<orEvent_t>(*event), nullptr));
  }

  void block(void*, const c10::Stream&) const override {
    // Work completes before each runtime call returns: nothing to wait for.
  }

  bool queryEvent(void* event) const override {
    return event == nullptr || orEventQuery(static_cast<orEvent_t>(event)) == orSuccess;
  }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event != nullptr) {
      (void)orEventDestroy(static_cast<orEvent_t>(event));
    }
  }

  bool queryStream(const c10::Stream&) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream&) const override {
    OPENREG_CHECK(orStreamSynchronize(nullptr));
  }
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      OPENREG_CHECK(orEventSynchronize(static_cast<orEvent_t>(event)));
    }
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    const auto old = current_device();
    set_device(resolve_device_index(device_index));
    const orError_t err = orDeviceSynchronize();
    set_device(old);
    OPENREG_CHECK(err);
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before computing elapsed time");
    float ms = 0;
    OPENREG_CHECK(orEventElapsedTime(&ms, static_cast<orEvent_t>(start), static_cast<orEvent_t>(end)));
    return ms;
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, OpenRegGuardImpl);

// ------------------------------------------------------------------ hooks

struct OpenRegHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return device_count() > 0;
  }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < device_count();
  }
  c10::DeviceIndex deviceCount() const override {
    return device_count();
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    set_device(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto old = current_device();
    set_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return new_generator(device_index);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    int device = -1;
    OPENREG_CHECK(orPointerGetDevice(data, &device));
    return c10::Device(c10::kPrivateUse1, static_cast<c10::DeviceIndex>(device));
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage_bytes(storage, newsize);
  }
};

const bool g_hooks_registered = [] {
  // Leaked on purpose: hooks must outlive every tensor, even at exit.
  at::RegisterPrivateUse1HooksInterface(new OpenRegHooks());
  return true;
}();

}  // namespace

}  // namespace openreg
