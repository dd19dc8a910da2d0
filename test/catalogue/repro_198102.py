# pytorch/pytorch#198102: in-place write through a gapped unfold view (step > size)
# zeroes the base elements no window covers, under functionalization
import torch
from verdict import report

ISSUE = 198102


def fn(x):
    v = x.unfold(1, 1, 5)   # windows over columns 0 and 5 only
    v.add_(v)
    return x


def main():
    x = torch.arange(1, 25, dtype=torch.int64).reshape(4, 6)
    ref = fn(x.clone())
    out = torch.compile(fn, backend="aot_eager")(x.clone())
    print("eager", ref[0].tolist(), "compiled", out[0].tolist())
    return torch.equal(ref, out)


report(ISSUE, main)
