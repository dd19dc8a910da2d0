# pytorch/pytorch#139789: input mutation, then the same graph is called with
# inputs that alias each other -> AOTAutograd should recompile (synthetic base)
import torch
from verdict import report

ISSUE = 139789


def f(x, y):
    x.mul_(2)
    return x + y


def main():
    fc = torch.compile(f, backend="aot_eager")
    fc(torch.ones(4), torch.ones(4))          # first call: no aliasing
    base = torch.ones(8)
    out = fc(base[:4], base[2:6])              # second call: x and y overlap
    base_ref = torch.ones(8)
    ref = f(base_ref[:4], base_ref[2:6])
    same = torch.equal(out, ref) and torch.equal(base, base_ref)
    print("eager", ref.tolist(), "compiled", out.tolist())
    return same


report(ISSUE, main)
