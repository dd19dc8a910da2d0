// Autocast (AMP) support for the openreg device type: which operators run in
// lower precision and which are forced to float32 under
// `torch.autocast("openreg")`. Kept in its own translation unit because the
// autocast helpers need <ATen/ATen.h>, by far the most expensive header.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

// Core PyTorch registers no fallback for AutocastPrivateUse1: without this,
// every op not listed below would fail under autocast instead of running
// unchanged.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // Matrix products: run in the autocast dtype (float16 / bfloat16).
  KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(bmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(baddbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(matmul, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linear, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv2d, lower_precision_fp)
  // Numerically sensitive reductions and losses: always float32.
  KERNEL_PRIVATEUSEONE(softmax, int, fp32)
  KERNEL_PRIVATEUSEONE(log_softmax, int, fp32)
  KERNEL_PRIVATEUSEONE(mse_loss, fp32)
  KERNEL_PRIVATEUSEONE(sum, fp32)
  // Mixed-dtype inputs: promote to the widest type.
  KERNEL_PRIVATEUSEONE(cat, promote)
  KERNEL_PRIVATEUSEONE(stack, promote)
}

}  // namespace
