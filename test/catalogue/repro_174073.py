# pytorch/pytorch#174073: argmin/argmax over a transpose of a tensor mutated in place
# (Inductor CPU returns the physical instead of the logical index)
import torch

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


try:
    ok = main()
    print(f"REPRO {ISSUE} {'fixed' if ok else 'reproduces'}")
except Exception as e:
    print(f"REPRO {ISSUE} error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
