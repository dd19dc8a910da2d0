# pytorch/pytorch#145445: a random.Random object from outside the compiled frame returns
# the first call's draw on every later call
import random

import torch
from verdict import report

ISSUE = 145445


def draws(rng, fn):
    x = torch.ones(2)
    return [fn(x, rng)[0].item() for _ in range(3)]


def main():
    def f(x, rng):
        return x * rng.randint(1, 100)

    ref = draws(random.Random(0), f)
    out = draws(random.Random(0), torch.compile(f, backend="eager"))
    print("eager", ref, "compiled", out)
    return ref == out


report(ISSUE, main)
