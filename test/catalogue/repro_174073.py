# pytorch/pytorch#174073: argmin/argmax over a transpose of a tensor mutated in place
# (Inductor CPU returns the physical instead of the logical index)
import torch
from verdict import report

ISSUE = 174073


def foo(x):
    x.tan_()
    x = x.t()
    return x.argmin()


def main():
    torch.manual_seed(0)
    x1 = torch.randn(4, 6)
    x2 = x1.clone()
    ref = foo(x1)
    out = torch.compile(foo, backend="inductor")(x2)
    print("eager", ref.item(), "compiled", out.item())
    # the mutated input is compared with allclose: inductor's vectorised tan may differ
    # from ATen's in the last bits, which is not what the report is about
    return ref.item() == out.item() and torch.allclose(x1, x2)


report(ISSUE, main)
