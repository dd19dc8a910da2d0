# pytorch/pytorch#133512: functionalization does not reproduce the strides of a mutated
# non-contiguous input, so a stride-sensitive op after the mutation reads other elements
import torch
from verdict import report

ISSUE = 133512


def f(x):
    x.add_(1)
    return torch.as_strided_copy(x, (3,), (2,))


def main():
    ref = f(torch.arange(10)[::2])
    out = torch.compile(f, backend="aot_eager", fullgraph=True)(torch.arange(10)[::2])
    print("eager", ref.tolist(), "compiled", out.tolist())
    return torch.equal(ref, out)


report(ISSUE, main)
