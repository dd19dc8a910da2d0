# pytorch/pytorch#185888: as_strided_ metadata mutation not reflected on the original tensor
import torch
from verdict import report

ISSUE = 185888


def fn():
    x = torch.arange(4.0, dtype=torch.float32)
    y = x.as_strided_((2, 2), (2, 1))
    observer = torch.max(y)
    return y, x.size(), y.size(), x.stride(), observer


def main():
    ref = fn()
    out = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=True)()
    print("eager", tuple(ref[1]), tuple(ref[2]), ref[3],
          "compiled", tuple(out[1]), tuple(out[2]), out[3])
    return (torch.equal(ref[0], out[0]) and tuple(ref[1]) == tuple(out[1])
            and tuple(ref[2]) == tuple(out[2]) and tuple(ref[3]) == tuple(out[3])
            and torch.equal(ref[4], out[4]))


report(ISSUE, main)
