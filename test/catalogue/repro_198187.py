# pytorch/pytorch#198187: random.Random float values reach the compiled graph as a
# float64 buffer read as float32
import random

import torch
from verdict import report

ISSUE = 198187


def make_fn():
    rng = random.Random(0)

    def f(x):
        return x * rng.random()

    return f


def main():
    x = torch.arange(4.0)
    ref = make_fn()(x)
    out = torch.compile(make_fn(), backend="inductor")(x)
    print("eager", ref.tolist(), "compiled", out.tolist())
    return torch.allclose(ref, out)


report(ISSUE, main)
