# pytorch/pytorch#198187: random.Random float values reach the compiled graph as a
# float64 buffer read as float32
import random

import torch

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


try:
    ok = main()
    print(f"REPRO {ISSUE} {'fixed' if ok else 'reproduces'}")
except Exception as e:
    print(f"REPRO {ISSUE} error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
