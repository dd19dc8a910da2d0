# pytorch/pytorch#198364: copysign, floor_divide, div(floor), addr(beta=0), put return
# other strides than eager for a transposed first input
import torch
from verdict import report

ISSUE = 198364


def main():
    torch.manual_seed(0)
    a = torch.rand(6, 5).mT   # (5, 6), strides (1, 5)
    b = torch.rand(5, 6) + 1
    cases = {
        "copysign": lambda a, b: torch.copysign(a, b - 1.5),
        "floor_divide": lambda a, b: torch.floor_divide(a, b),
        "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
        "addr_beta0": lambda a, b: torch.addr(a, b[:, 0], b[0], beta=0.0),
        "put": lambda a, b: a.put(torch.tensor([0, 7]), torch.tensor([1.0, 2.0])),
    }
    bad = []
    for name, op in cases.items():
        torch._dynamo.reset()
        ref = op(a, b)
        out = torch.compile(op, backend="inductor")(a, b)
        if not (torch.equal(ref, out) and ref.stride() == out.stride()):
            bad.append(f"{name}:{ref.stride()}vs{out.stride()}")
    print("differing:", bad)
    return not bad


report(ISSUE, main)
