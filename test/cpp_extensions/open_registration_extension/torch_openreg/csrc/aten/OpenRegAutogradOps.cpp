// C++ autograd functions behind two of OpenReg's own operators, the way a
// backend registers an operator whose gradient it defines itself: a
// torch::autograd::Function applied from the AutogradPrivateUse1 kernel.
// Both scale the gradient by 0.5, so a test can tell this formula from the
// identity autograd would otherwise use:
//  * custom_autograd_fn_returns_self returns its input itself;
//  * custom_autograd_fn_aliasing returns a view of its input.
// The autograd headers are heavy: CMakeLists.txt compiles this file in one
// unit with OpenRegFullAten.cpp, which parses most of the same headers.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace openreg {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

variable_list half_gradient(const variable_list& grad_output) {
  return {grad_output[0].mul(0.5)};
}

struct ReturnsSelf : public torch::autograd::Function<ReturnsSelf> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor self) {
    return self;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    return half_gradient(grad_output);
  }
};

struct Aliasing : public torch::autograd::Function<Aliasing> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor self) {
    return self.view_symint(self.sym_sizes());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    return half_gradient(grad_output);
  }
};

at::Tensor custom_autograd_fn_returns_self(const at::Tensor& x) {
  return ReturnsSelf::apply(x);
}

at::Tensor custom_autograd_fn_aliasing(const at::Tensor& x) {
  return Aliasing::apply(x);
}

}  // namespace
}  // namespace openreg

// The schemas are defined with the other openreg:: operators
// (csrc/aten/OpenRegKernels.cpp).
TORCH_LIBRARY_IMPL(openreg, AutogradPrivateUse1, m) {
  m.impl("custom_autograd_fn_returns_self", TORCH_FN(::openreg::custom_autograd_fn_returns_self));
  m.impl("custom_autograd_fn_aliasing", TORCH_FN(::openreg::custom_autograd_fn_aliasing));
}
