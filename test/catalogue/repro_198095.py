# pytorch/pytorch#198095: output that is a view of an aliased input (synthetic base)
# is regenerated from the wrong tensor: ta[0] comes back as t0[0]
import torch
from verdict import report

ISSUE = 198095


def fn(t0, ta):          # ta = t0[1:], storage offset 6
    t0.add_(100)
    return ta[0]         # must be t0[1] after the mutation


def main():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    e0 = base.clone()
    ref = fn(e0, e0[1:])
    c0 = base.clone()
    out = torch.compile(fn, backend="aot_eager")(c0, c0[1:])
    print("eager", ref.tolist(), ref.storage_offset(),
          "compiled", out.tolist(), out.storage_offset())
    same_vals = torch.equal(ref, out) and torch.equal(e0, c0)
    same_alias = (out.untyped_storage().data_ptr() == c0.untyped_storage().data_ptr()
                  and out.storage_offset() == ref.storage_offset()
                  and out.stride() == ref.stride())
    return same_vals and same_alias


report(ISSUE, main)
