# pytorch/pytorch#176854: Dynamo keeps stale autograd metadata after detach_()
import torch
from verdict import report

ISSUE = 176854


def fn(x):
    y = x * 2.0
    y.detach_()
    z = y + 1.0
    # only requires_grad, as in the report: reading y.grad_fn inside the compiled
    # function changes how Dynamo traces it and hides the bug on 2.9.1
    return z, y.requires_grad


def main():
    x = torch.randn(4, requires_grad=True)
    z_e, rg_e = fn(x)
    z_c, rg_c = torch.compile(fn, backend="aot_eager")(x)
    print("eager requires_grad", rg_e, "| compiled requires_grad", rg_c)
    return rg_e == rg_c and torch.allclose(z_e, z_c)


report(ISSUE, main)
