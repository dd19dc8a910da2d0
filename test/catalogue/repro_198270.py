# pytorch/pytorch#198270: x.index_put_(...) then x.add_(x.flip(0)); Inductor fuses the
# copy back into x with a read of x at other positions
import torch
from verdict import report

ISSUE = 198270


def f(x):
    x.index_put_((torch.arange(x.size(0)),), x * 2.0)
    x.add_(x.flip(0))
    return x


def main():
    torch.manual_seed(0)
    compiled = torch.compile(f, backend="inductor")
    ok = True
    for shape in ((4, 8), (1024, 2048)):   # the report's two shapes
        x = torch.rand(*shape)
        ref = f(x.clone())
        out = compiled(x.clone())
        print(shape, "mismatching elements", int((ref != out).sum()))
        ok = ok and torch.equal(ref, out)
    return ok


report(ISSUE, main)
