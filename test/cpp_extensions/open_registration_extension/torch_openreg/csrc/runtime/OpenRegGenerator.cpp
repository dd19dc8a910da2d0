#include "OpenRegGenerator.h"

#include "OpenRegFunctions.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <deque>
#include <mutex>

namespace openreg {

namespace {

// A counter-based PrivateUse1 generator, like CUDA's Philox one: its whole
// state is (seed, offset), and every random kernel consumes one step of
// kStepPerKernel offset units. The CPU fallback runs random kernels on the
// CPU, and those only accept CPU generators, so each kernel gets a CPU
// generator seeded from (seed, offset) (see next_kernel_generator). Hence
// set_offset/get_offset and get_state/set_state are exact.
constexpr uint64_t kStepPerKernel = 4;

uint64_t mix(uint64_t seed, uint64_t offset) {
  // splitmix64 of the pair, so neighbouring offsets give unrelated streams.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (offset / kStepPerKernel + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct OpenRegGeneratorImpl final : public c10::GeneratorImpl {
  explicit OpenRegGeneratorImpl(c10::DeviceIndex index, uint64_t seed = c10::default_rng_seed_val)
      : c10::GeneratorImpl(
            c10::Device(c10::kPrivateUse1, index),
            c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(seed),
        cpu_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  void set_offset(uint64_t offset) override {
    TORCH_CHECK(offset % kStepPerKernel == 0, "openreg generator offsets must be multiples of ", kStepPerKernel, ", got ", offset);
    offset_ = offset;
  }
  uint64_t get_offset() const override {
    return offset_;
  }
  uint64_t current_seed() const override {
    return seed_;
  }
  uint64_t seed() override {
    set_current_seed(c10::detail::getNonDeterministicRandom());
    return seed_;
  }
  // State: 16 bytes, the seed then the offset (native byte order).
  void set_state(const c10::TensorImpl& new_state) override {
    // A state is host data (get_state returns a CPU tensor): the bytes of a
    // device tensor are not host-readable.
    TORCH_CHECK(
        new_state.device_type() == c10::kCPU,
        "openreg RNG state must be a CPU tensor (as get_rng_state returns it), got one on ", new_state.device());
    TORCH_CHECK(
        new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.numel() == 16,
        "openreg RNG state must be a uint8 tensor of 16 bytes, got ", new_state.numel(), " elements of ", new_state.dtype());
    const auto* bytes = static_cast<const uint8_t*>(new_state.data());
    std::memcpy(&seed_, bytes, 8);
    uint64_t offset = 0;
    std::memcpy(&offset, bytes + 8, 8);
    set_offset(offset);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto state = c10::make_intrusive<c10::TensorImpl>(
        c10::Storage(c10::Storage::use_byte_size_t(), 16, c10::GetCPUAllocator(), false),
        c10::DispatchKeySet(c10::DispatchKey::CPU), caffe2::TypeMeta::Make<uint8_t>());
    state->set_sizes_contiguous({16});
    auto* bytes = static_cast<uint8_t*>(state->mutable_data());
    std::memcpy(bytes, &seed_, 8);
    std::memcpy(bytes + 8, &offset_, 8);
    return state;
  }
  OpenRegGeneratorImpl* clone_impl() const override {
    auto* copy = new OpenRegGeneratorImpl(device().index(), seed_);
    copy->offset_ = offset_;
    return copy;
  }

  // The CPU generator for the next random kernel; caller holds mutex_.
  const at::Generator& next_kernel_generator() {
    cpu_.set_current_seed(mix(seed_, offset_));
    offset_ += kStepPerKernel;
    return cpu_;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
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
  std::lock_guard<std::mutex> lock(impl->mutex_);
  return impl->next_kernel_generator();
}

}  // namespace openreg
