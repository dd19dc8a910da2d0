# pytorch/pytorch#168381: index_select on a permuted (non-contiguous) input returns a
# contiguous tensor in eager but a non-contiguous one under torch.compile
import torch
from verdict import report

ISSUE = 168381


def fn(x):
    x = x.permute(1, 2, 0)
    x = x.unsqueeze(2)
    idx = torch.tensor([0])
    return torch.index_select(x, 0, idx)


def main():
    x = torch.randn(6, 3, 6)
    ref = fn(x)
    ok = True
    for backend in ("aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        out = torch.compile(fn, backend=backend)(x)
        print(backend, "eager", ref.stride(), ref.is_contiguous(),
              "compiled", out.stride(), out.is_contiguous())
        ok = ok and torch.equal(ref, out) and ref.stride() == out.stride()
    return ok


report(ISSUE, main)
