// ATen kernels for the PrivateUse1 ("openreg") dispatch key.
//
// Only the operators that must touch device memory or tensor metadata
// directly are implemented here (allocation, views, copies, resize/set_,
// scalar reads, fill). Everything else goes through a boxed CPU fallback:
// the CPU kernel runs on CPU tensors aliasing the device memory (inside a
// device access window), new results are copied to the device.
#include "OpenRegCommon.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <functional>
#include <optional>

namespace openreg {
namespace {

using at::IntArrayRef;
using at::Tensor;

at::TensorOptions cpu_options_like(const Tensor& t) {
  return t.options().device(c10::kCPU);
}

c10::Stream stream_of(const Tensor& t) {
  return current_stream(t.device().index());
}

bool same_dense_layout(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
      a.is_non_overlapping_and_dense();
}

// Reads the whole storage of an openreg tensor into a fresh CPU buffer and
// returns a CPU tensor with the same offset/sizes/strides viewing it. Used
// for tensors that are not a dense block (overlapping or with gaps). Blocks
// until the read, queued on the tensor's current stream, is done.
Tensor cpu_mirror_of_storage(const Tensor& t, Tensor& buffer) {
  const auto nbytes = t.storage().nbytes();
  buffer = at::empty({static_cast<int64_t>(nbytes)}, at::TensorOptions().dtype(at::kByte));
  const auto stream = stream_of(t);
  copy_async(stream, buffer.mutable_data_ptr(), t.storage().data(), nbytes,
             orMemcpyDeviceToHost, {t.storage()});
  synchronize_stream(stream);
  Tensor view = at::empty({0}, cpu_options_like(t));
  view.set_(buffer.storage(), t.storage_offset(), t.sizes(), t.strides());
  return view;
}

// openreg -> CPU, preserving values (not necessarily strides); blocking.
Tensor to_cpu(const Tensor& src) {
  if (src.is_non_overlapping_and_dense()) {
    // A dense tensor occupies exactly nbytes() contiguous bytes starting at
    // data_ptr(), in the same order as a CPU tensor with the same strides.
    Tensor out = at::empty_strided(src.sizes(), src.strides(), cpu_options_like(src));
    const auto stream = stream_of(src);
    copy_async(stream, out.mutable_data_ptr(), src.const_data_ptr(), src.nbytes(),
               orMemcpyDeviceToHost, {src.storage()});
    synchronize_stream(stream);
    return out;
  }
  Tensor buffer;
  return cpu_mirror_of_storage(src, buffer).clone();
}

// Writes into every element of an openreg tensor through a CPU tensor of the
// same layout: `write` must assign all elements of the CPU tensor it gets.
// The upload is queued on the destination's current stream.
void write_via_cpu(const Tensor& dst, const std::function<void(Tensor&)>& write) {
  if (dst.is_non_overlapping_and_dense()) {
    Tensor staged = at::empty_strided(dst.sizes(), dst.strides(), cpu_options_like(dst));
    write(staged);
    copy_async(stream_of(dst), dst.mutable_data_ptr(), staged.const_data_ptr(), dst.nbytes(),
               orMemcpyHostToDevice, {staged.storage(), dst.storage()});
    return;
  }
  // Gaps or overlap: round-trip the whole storage so bytes outside the view
  // survive and overlapping elements follow CPU semantics.
  Tensor buffer;
  Tensor view = cpu_mirror_of_storage(dst, buffer);
  write(view);
  copy_async(stream_of(dst), dst.storage().mutable_data(), buffer.const_data_ptr(), buffer.numel(),
             orMemcpyHostToDevice, {buffer.storage(), dst.storage()});
}

c10::Device openreg_device_from(std::optional<c10::Device> device) {
  const auto d = device.value_or(c10::Device(c10::kPrivateUse1));
  TORCH_CHECK(d.is_privateuseone(), "openreg kernel called for device ", d);
  return d;
}

void check_factory_options(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(
      layout.value_or(c10::kStrided) == c10::kStrided,
      "openreg only supports strided tensors, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false), "openreg tensors cannot be pinned: only CPU tensors can be pinned");
}

// ----------------------------------------------------------- allocation

Tensor empty_memory_format(
    IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory,
    std::optional<c10::MemoryFormat> memory_format) {
  check_factory_options(layout, pin_memory);
  // The allocator allocates on the current device, so make the requested
  // device current for the duration (index -1 keeps the current one).
  c10::DeviceGuard guard(openreg_device_from(device));
  return at::detail::empty_generic(
      size,
      device_allocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      dtype.value_or(c10::get_default_dtype_as_scalartype()),
      memory_format);
}

Tensor empty_strided(
    IntArrayRef size,
    IntArrayRef stride,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  check_factory_options(layout, pin_memory);
  c10::DeviceGuard guard(openreg_device_from(device));
  return at::detail::empty_strided_generic(
      size,
      stride,
      device_allocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      dtype.value_or(c10::get_default_dtype_as_scalartype()));
}

// ------------------------------------------------------ resize and set_

const Tensor& resize_(
    const Tensor& self,
    IntArrayRef size,
    std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !memory_format.has_value()) {
    return self;  // like the CPU kernel: same sizes keep the current strides
  }
  impl->set_sizes_contiguous(size);
  const size_t needed = at::detail::computeStorageNbytesContiguous(
      size, self.dtype().itemsize(), self.storage_offset());
  if (needed > self.storage().nbytes()) {
    resize_storage_bytes(self.storage(), needed);
  }
  if (memory_format.has_value()) {
    TORCH_CHECK(
        *memory_format != c10::MemoryFormat::Preserve,
        "Unsupported memory format ", *memory_format, " for resize_");
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

Tensor& set_storage_offset(
    Tensor& self,
    c10::Storage source,
    int64_t storage_offset,
    IntArrayRef size,
    IntArrayRef stride) {
  TORCH_CHECK(
      source.device().is_privateuseone(),
      "Expected an openreg storage for set_, but got a storage on ", source.device());
  TORCH_CHECK(storage_offset >= 0, "set_: negative storage offset ", storage_offset);
  auto* impl = self.unsafeGetTensorImpl();
  if (!impl->storage().is_alias_of(source)) {
    impl->set_storage_keep_dtype(source);
  }
  impl->set_storage_offset(storage_offset);
  const auto itemsize = self.dtype().itemsize();
  size_t needed = 0;
  if (stride.empty()) {
    impl->set_sizes_contiguous(size);
    needed = at::detail::computeStorageNbytesContiguous(size, itemsize, storage_offset);
  } else {
    impl->set_sizes_and_strides(size, stride);
    needed = at::detail::computeStorageNbytes(size, stride, itemsize, storage_offset);
  }
  if (needed > source.nbytes()) {
    resize_storage_bytes(source, needed);  // same behaviour as CPU set_
  }
  return self;
}

Tensor& set_storage(Tensor& self, c10::Storage source) {
  const auto itemsize = static_cast<int64_t>(self.dtype().itemsize());
  const int64_t numel = static_cast<int64_t>(source.nbytes()) / itemsize;
  return set_storage_offset(self, std::move(source), 0, {numel}, {});
}

Tensor& set_tensor(Tensor& self, const Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) {
    return self;
  }
  return set_storage_offset(
      self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

Tensor& set_empty(Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  return set_storage_offset(self, std::move(empty), 0, {0}, {});
}

// ------------------------------------------------------------- copies

// Copies with a device side are queued on the current stream of that
// device: uploads and device-to-device copies return at once, downloads wait
// unless they are non_blocking into page-locked memory.
Tensor copy_from(const Tensor& self, const Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "openreg copy: undefined tensor");
  for (const auto& t : {self, dst}) {
    TORCH_CHECK(
        t.device().is_cpu() || t.device().is_privateuseone(),
        "openreg only copies to/from cpu and openreg tensors, got ", t.device());
  }
  if (dst.numel() == 0) {
    return dst;
  }
  const bool src_dev = self.device().is_privateuseone();
  const bool dst_dev = dst.device().is_privateuseone();
  if (same_dense_layout(self, dst)) {
    const auto keep = std::vector<c10::Storage>{self.storage(), dst.storage()};
    if (src_dev && dst_dev) {
      if (self.device() != dst.device()) {
        synchronize_stream(stream_of(self));  // the source's pending writes
      }
      copy_async(stream_of(dst), dst.mutable_data_ptr(), self.const_data_ptr(), dst.nbytes(),
                 orMemcpyDeviceToDevice, keep);
      return dst;
    }
    const Tensor& host = src_dev ? dst : self;
    if (non_blocking && is_pinned_ptr(host.const_data_ptr())) {
      copy_async(stream_of(src_dev ? self : dst), dst.mutable_data_ptr(), self.const_data_ptr(),
                 dst.nbytes(), src_dev ? orMemcpyDeviceToHost : orMemcpyHostToDevice, keep);
      return dst;
    }
  }
  // General case: stage through host memory.
  const Tensor src_cpu = src_dev ? to_cpu(self) : self;
  if (dst_dev) {
    write_via_cpu(dst, [&](Tensor& staged) { staged.copy_(src_cpu); });
  } else {
    dst.copy_(src_cpu);
  }
  return dst;
}

Tensor copy_from_and_resize(const Tensor& self, const Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return to_cpu(self).item();
}

// The memory of an openreg tensor as seen by a kernel queued on a stream:
// a snapshot of its layout (the host may restride the tensor meanwhile) and
// its storage, which stays alive until the kernel ran.
struct DeviceSpan {
  explicit DeviceSpan(const Tensor& t)
      : storage(t.storage()),
        offset(t.storage_offset()),
        sizes(t.sizes().vec()),
        strides(t.strides().vec()),
        dtype(t.scalar_type()) {}

  // A CPU tensor aliasing the device memory; only valid on the worker.
  Tensor view() const {
    c10::Storage alias(
        c10::Storage::use_byte_size_t(), storage.nbytes(),
        c10::DataPtr(storage.mutable_data(), c10::Device(c10::kCPU)), nullptr, false);
    Tensor v = at::empty({0}, at::TensorOptions().dtype(dtype));
    v.set_(alias, offset, sizes, strides);
    return v;
  }

  c10::Storage storage;
  int64_t offset;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  c10::ScalarType dtype;
};

// A real device kernel: queued on the current stream, runs asynchronously.
Tensor& fill_scalar(Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) {
    return self;
  }
  DeviceSpan span(self);
  launch(stream_of(self), [span, value] { span.view().fill_(value); }, {});
  return self;
}

// ------------------------------------------------------- CPU fallback

bool is_generator_argument(const c10::Argument& arg) {
  c10::TypePtr type = arg.real_type();
  if (auto opt = type->cast<c10::OptionalType>()) {
    type = opt->getElementType();
  }
  return type->kind() == c10::TypeKind::GeneratorType;
}

// A real accelerator rejects mixing devices in one op; only 0-dim CPU tensors
// the op reads (wrapped scalars) may join a device computation, as
// TensorIterator allows a CPU scalar as an input and never as an output. The
// CPU kernel would accept any CPU tensor, so check first.
std::optional<c10::Device> common_device(const c10::OperatorHandle& op, const torch::jit::Stack& args) {
  std::optional<c10::Device> common;
  auto visit = [&](const Tensor& t, bool written) {
    if (!t.defined() || (t.device().is_cpu() && t.dim() == 0 && !written)) {
      return;
    }
    if (!common.has_value()) {
      common = t.device();
      return;
    }
    TORCH_CHECK(
        *common == t.device(),
        "Expected all tensors to be on the same device, but found at least two devices, ",
        *common, " and ", t.device(), "! (when checking arguments for ",
        op.schema().operator_name(), ")");
  };
  const auto& schema_args = op.schema().arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& value = args[i];
    const c10::AliasInfo* info = schema_args[i].alias_info();
    const bool written = info != nullptr && info->isWrite();
    if (value.isTensor()) {
      visit(value.toTensor(), written);
    } else if (value.isTensorList()) {
      for (const Tensor& t : value.toTensorVector()) {
        visit(t, written);
      }
    }
    // Optional tensor lists (index/index_put_ indices) may live on the CPU,
    // as CUDA allows.
  }
  return common;
}

// CPU tensors over the memory of openreg tensors, for running a CPU kernel in
// place of a device kernel. A device kernel works on device memory as it is:
// operands that alias stay aliased (so the kernel's overlap checks and
// in-place semantics are the CPU kernel's), and a write lands in the
// destination itself. OpenReg's device memory is host memory, so a CPU tensor
// with the same storage base, offset, sizes and strides is that memory. All
// tensors on one device storage share one host storage, which the kernel may
// grow (resizing an out= tensor): the write-back then gives the device
// storage the new bytes and the device tensors the layout the kernel chose.
class HostAliases {
 public:
  Tensor alias(const Tensor& device_tensor) {
    if (!device_tensor.defined() || !device_tensor.device().is_privateuseone()) {
      return device_tensor;  // undefined, or a CPU operand the kernel reads as it is
    }
    // One tensor passed twice (x.logical_and_(y) calls logical_and.out(x, y, out=x))
    // must be one tensor for the kernel too: TensorIterator tells an in-place
    // write from an out= by the identity of its operands.
    for (const auto& [known, host] : pairs_) {
      if (known.unsafeGetTensorImpl() == device_tensor.unsafeGetTensorImpl()) {
        return host;
      }
    }
    Tensor host = at::empty({0}, cpu_options_like(device_tensor));
    host.set_(host_storage(device_tensor.storage()), device_tensor.storage_offset(),
              device_tensor.sizes(), device_tensor.strides());
    host._set_conj(device_tensor.is_conj());
    host._set_neg(device_tensor.is_neg());
    pairs_.emplace_back(device_tensor, host);
    return host;
  }

  // The device tensor a host tensor stands for (the same TensorImpl), if any.
  std::optional<Tensor> device_tensor_of(const Tensor& host) const {
    for (const auto& [device_tensor, alias] : pairs_) {
      if (alias.unsafeGetTensorImpl() == host.unsafeGetTensorImpl()) {
        return device_tensor;
      }
    }
    return std::nullopt;
  }

  // A result that is not an argument but shares device memory with one (a
  // kernel returning its input unchanged) becomes a host copy: the device
  // memory is readable only inside the access window. Call inside it.
  Tensor own_memory(const Tensor& result) const {
    if (!result.defined() || device_tensor_of(result).has_value() || !result.has_storage()) {
      return result;
    }
    for (const auto& [device_storage, host] : storages_) {
      if (host.is_alias_of(result.storage())) {
        return result.clone();
      }
    }
    return result;
  }

  // Carries what the kernel did to the host tensors' storages and layouts
  // (resize_, as_strided_, set_ on an out=) over to the device tensors.
  void write_back(const c10::Stream& stream) {
    for (const auto& [device_storage, host] : storages_) {
      if (host.mutable_data() != device_storage.mutable_data() || host.nbytes() != device_storage.nbytes()) {
        upload(stream, host, device_storage);
      }
    }
    for (const auto& [device_tensor, host] : pairs_) {
      adopt_layout(stream, device_tensor, host);
    }
  }

 private:
  c10::Storage host_storage(const c10::Storage& device_storage) {
    for (const auto& [known, host] : storages_) {
      if (known.is_alias_of(device_storage)) {
        return host;
      }
    }
    // Not owning the memory; resizable with the CPU allocator, so a resize
    // by the kernel moves the host tensor to a fresh host buffer (copied
    // back to the device by write_back) and never frees device memory.
    c10::Storage host(
        c10::Storage::use_byte_size_t(), device_storage.nbytes(),
        c10::DataPtr(device_storage.mutable_data(), c10::Device(c10::kCPU)),
        c10::GetCPUAllocator(), /*resizable=*/true);
    storages_.emplace_back(device_storage, host);
    return host;
  }

  static void upload(const c10::Stream& stream, const c10::Storage& host, const c10::Storage& device_storage) {
    if (host.nbytes() > device_storage.nbytes()) {
      resize_storage_bytes(device_storage, host.nbytes());
    }
    copy_async(stream, device_storage.mutable_data(), host.data(), host.nbytes(), orMemcpyHostToDevice,
               {host, device_storage});
  }

  // A host tensor the kernel pointed at another storage (set_) gets a device
  // storage of its own with those bytes; otherwise only sizes, strides and
  // offset can have changed.
  void adopt_layout(const c10::Stream& stream, const Tensor& device_tensor, const Tensor& host) {
    c10::Storage storage = device_tensor.storage();
    if (!is_host_storage_of(host.storage(), storage)) {
      storage = c10::Storage(c10::Storage::use_byte_size_t(), host.storage().nbytes(), device_allocator(),
                             /*resizable=*/true);
      upload(stream, host.storage(), storage);
    }
    if (storage.is_alias_of(device_tensor.storage()) && device_tensor.sizes() == host.sizes() &&
        device_tensor.strides() == host.strides() && device_tensor.storage_offset() == host.storage_offset()) {
      return;
    }
    auto* impl = device_tensor.unsafeGetTensorImpl();
    if (!storage.is_alias_of(device_tensor.storage())) {
      impl->set_storage_keep_dtype(storage);
    }
    impl->set_sizes_and_strides(host.sizes(), host.strides(), host.storage_offset());
  }

  bool is_host_storage_of(const c10::Storage& host, const c10::Storage& device_storage) const {
    for (const auto& [known, mine] : storages_) {
      if (known.is_alias_of(device_storage)) {
        return mine.is_alias_of(host);
      }
    }
    return false;
  }

  std::vector<std::pair<c10::Storage, c10::Storage>> storages_;  // (device, host)
  std::vector<std::pair<Tensor, Tensor>> pairs_;                  // (device, host)
};

// Replaces every openreg tensor of an argument by its host alias, and an
// openreg device (a factory-style op) by the CPU, where the kernel allocates.
c10::IValue host_argument(const c10::IValue& value, HostAliases& aliases) {
  if (value.isTensor()) {
    return aliases.alias(value.toTensor());
  }
  if (value.isTensorList()) {
    std::vector<Tensor> hosts;
    for (const Tensor& t : value.toTensorVector()) {
      hosts.push_back(aliases.alias(t));
    }
    return c10::List<Tensor>(hosts);
  }
  if (value.isOptionalTensorList()) {
    std::vector<std::optional<Tensor>> hosts;
    for (const std::optional<Tensor>& t : value.toOptionalTensorVector()) {
      hosts.push_back(t.has_value() ? std::optional<Tensor>(aliases.alias(*t)) : std::nullopt);
    }
    return c10::List<std::optional<Tensor>>(hosts);
  }
  if (value.isDevice() && value.toDevice().is_privateuseone()) {
    return c10::Device(c10::kCPU);
  }
  return value;
}

// A result of the CPU kernel as the device kernel returns it: a destination
// (in-place, out=) is the device tensor itself, a new tensor lives on the
// device the op ran on, whatever device its first argument was on (a CPU
// 0-dim operand joins a device computation, it does not move it).
Tensor device_result(const Tensor& host, const HostAliases& aliases, c10::Device device) {
  if (!host.defined()) {
    return host;
  }
  if (auto destination = aliases.device_tensor_of(host)) {
    return *destination;
  }
  return host.to(device);
}

// View operators cannot be served this way: their result must share the
// storage and autograd's view tracking of the device tensor.
void check_not_view(const c10::OperatorHandle& op, c10::Device device) {
  for (const auto& ret : op.schema().returns()) {
    const c10::AliasInfo* info = ret.alias_info();
    TORCH_CHECK(
        info == nullptr || info->isWrite(),
        "The operator ", op.schema().operator_name(), " appears to be a view operator, but it has no "
        "implementation for the backend \"", device, "\". View operators don't support falling back to "
        "run on the CPU, since the tensor's storage cannot be shared across devices.");
  }
}

// The CPU kernel run on host aliases of the device memory, synchronously,
// inside a device access window (the caller waited for the current stream).
void run_on_host_aliases(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::Device device) {
  check_not_view(op, device);
  HostAliases aliases;
  const auto num_args = op.schema().arguments().size();
  for (size_t i = stack->size() - num_args; i < stack->size(); ++i) {
    (*stack)[i] = host_argument((*stack)[i], aliases);
  }
  const auto num_returns = op.schema().returns().size();
  auto for_each_result = [&](const std::function<Tensor(const Tensor&)>& convert) {
    for (size_t i = stack->size() - num_returns; i < stack->size(); ++i) {
      c10::IValue& value = (*stack)[i];
      if (value.isTensor()) {
        value = convert(value.toTensor());
      } else if (value.isTensorList()) {
        std::vector<Tensor> results;
        for (const Tensor& t : value.toTensorVector()) {
          results.push_back(convert(t));
        }
        value = c10::List<Tensor>(results);
      }
    }
  };
  {
    DeviceAccess access;
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    aliases.write_back(current_stream(device.is_privateuseone() ? device.index() : -1));
    for_each_result([&](const Tensor& t) { return aliases.own_memory(t); });
  }
  for_each_result([&](const Tensor& t) { return device_result(t, aliases, device); });
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // Without this check an operator with neither an openreg nor a CPU kernel
  // (a CUDA-only one) fails inside the fallback with an error about the
  // 'CPU' backend, which the caller never asked for.
  TORCH_CHECK_NOT_IMPLEMENTED(
      op.hasComputedKernelForDispatchKey(c10::DispatchKey::CPU),
      "openreg has no kernel for ", op.schema().operator_name(),
      " and cannot run it on the CPU either (the operator has no CPU kernel)");
  const auto& schema_args = op.schema().arguments();
  const auto num_args = schema_args.size();
  const auto begin = stack->size() - num_args;
  const torch::jit::Stack args(stack->end() - num_args, stack->end());

  std::optional<c10::Device> device = common_device(op, args);
  if (!device.has_value() || !device->is_privateuseone()) {
    for (const auto& value : args) {
      if (value.isDevice() && value.toDevice().is_privateuseone()) {
        device = value.toDevice();  // factory-style op: device=openreg
      }
    }
  }
  c10::OptionalDeviceGuard guard;
  if (device.has_value() && device->is_privateuseone()) {
    guard.reset_device(*device);
  }
  // The CPU kernel reads device memory directly: let the work already queued
  // on the current stream finish first.
  synchronize_stream(current_stream(-1));

  // Random ops: CPU kernels only accept CPU generators, so substitute the
  // CPU generator backing the openreg one (the device default when none was
  // given). This makes torch.openreg.manual_seed control openreg randomness.
  // A generator of another device type is refused, as CUDA refuses one: an
  // openreg generator also routes a CPU op here (its dispatch key joins the
  // op's), and a CPU generator would silently draw from the CPU's stream.
  const c10::DeviceType op_type = device.has_value() ? device->type() : c10::kCPU;
  for (size_t i = 0; i < num_args; ++i) {
    if (!is_generator_argument(schema_args[i])) {
      continue;
    }
    c10::IValue& value = (*stack)[begin + i];
    if (value.isNone()) {
      value = backing_cpu_generator(default_generator(-1));
      continue;
    }
    const at::Generator gen = value.toGenerator();
    TORCH_CHECK(
        gen.device().type() == op_type,
        "Expected a '", c10::DeviceTypeName(op_type, /*lower_case=*/true),
        "' device type for generator but found '", c10::DeviceTypeName(gen.device().type(), /*lower_case=*/true),
        "' (when checking arguments for ", op.schema().operator_name(), ")");
    value = backing_cpu_generator(gen);
  }

  // Without an openreg device (a CPU op routed here by an openreg generator
  // or an openreg index in an optional tensor list) results stay on the CPU.
  run_on_host_aliases(op, stack, device.value_or(c10::Device(c10::kCPU)));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  // Views have no CPU fallback (a fallback result would not alias its input): every
  // view eager composites reach must be a kernel here. These are metadata-only, so the
  // generic implementations serve any strided backend.
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage", TORCH_FN(set_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
}

// ------------------------------------------------- custom ops (openreg::)
//
// How a backend adds its own operators: `torch.ops.openreg.custom_abs` is a
// device kernel (queued on the current stream) with a Meta kernel for
// tracing; its autograd formula is registered from Python
// (torch_openreg/custom_ops.py). `custom_flat_view` returns an alias of its
// input, declared with the (a) annotation; being CompositeImplicitAutograd,
// it gets autograd and view tracking from the view op it is built from.

Tensor custom_abs(const Tensor& self) {
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(self.sizes(), self.options());
  if (self.numel() > 0) {
    DeviceSpan in(self);
    DeviceSpan result(out);
    launch(stream_of(self), [in, result] {
      Tensor dst = result.view();
      at::abs_out(dst, in.view());
    }, {});
  }
  return out;
}

Tensor custom_abs_meta(const Tensor& self) {
  return at::empty(self.sizes(), self.options());
}

Tensor custom_flat_view(const Tensor& self) {
  return self.view({-1});
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// mode's CompositeExplicitAutograd kernels refuse every device but cpu, cuda
// and xpu before reaching a backend (they call a DispatchStub): a device
// kernel here, the CPU one on the device memory, takes their place.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mode", torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace openreg

TORCH_LIBRARY(openreg, m) {
  m.def("custom_abs(Tensor input) -> Tensor");
  m.def("custom_flat_view(Tensor(a) self) -> Tensor(a)");
  // C++ autograd functions (csrc/aten/OpenRegAutogradOps.cpp), for tests of how
  // torch.compile traces them: one returns its input, one a view of it.
  m.def("custom_autograd_fn_returns_self(Tensor input) -> Tensor");
  m.def("custom_autograd_fn_aliasing(Tensor(a) input) -> Tensor(a)");
}

TORCH_LIBRARY_IMPL(openreg, PrivateUse1, m) {
  m.impl("custom_abs", TORCH_FN(::openreg::custom_abs));
}

TORCH_LIBRARY_IMPL(openreg, Meta, m) {
  m.impl("custom_abs", TORCH_FN(::openreg::custom_abs_meta));
}

TORCH_LIBRARY_IMPL(openreg, CompositeImplicitAutograd, m) {
  m.impl("custom_flat_view", TORCH_FN(::openreg::custom_flat_view));
}
