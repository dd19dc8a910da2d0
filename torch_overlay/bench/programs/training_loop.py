"""A small compiled training loop, run under the torch that PYTHONPATH selects.

Model forward and `optimizer.step()` are compiled with inductor; the learning-rate scheduler
changes the float `lr` every epoch, as real training does. An eager twin with the same seed
runs the same steps; the final parameters of both are compared. Prints one JSON object:
compiles, seconds for the compiled loop, max |compiled - eager| over the parameters, and
whether they are equal within torch.testing's float32 tolerances.

    python training_loop.py --optimizer SGD --foreach 1 --steps 100
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import torch
from torch._dynamo.testing import CompileCounterWithBackend

OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "SGD": lambda params, foreach: torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=foreach),
    "Adam": lambda params, foreach: torch.optim.Adam(params, lr=0.01, foreach=foreach),
    "AdamW": lambda params, foreach: torch.optim.AdamW(params, lr=0.01, foreach=foreach),
}


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def train(optimizer: str, foreach: bool, steps: int, compiled: bool) -> tuple[torch.nn.Module, int, float]:
    model = make_model()
    opt = OPTIMIZERS[optimizer](model.parameters(), foreach)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.7)
    counter = CompileCounterWithBackend("inductor")
    forward: Callable[[torch.Tensor], torch.Tensor] = model
    step: Callable[[], object] = opt.step
    if compiled:
        forward = torch.compile(model, backend=counter)
        step = torch.compile(opt.step, backend=counter)
    generator = torch.Generator().manual_seed(1)
    data = [(torch.randn(16, 32, generator=generator), torch.randint(0, 10, (16,), generator=generator))
            for _ in range(8)]
    start = time.perf_counter()
    for i in range(steps):
        x, y = data[i % len(data)]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(forward(x), y).backward()
        step()
        sched.step()
    return model, counter.frame_count, time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--optimizer", choices=sorted(OPTIMIZERS), required=True)
    p.add_argument("--foreach", type=int, choices=(0, 1), required=True)
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args()
    torch._dynamo.config.recompile_limit = args.steps + 8  # never fall back to eager silently
    compiled, compiles, seconds = train(args.optimizer, bool(args.foreach), args.steps, compiled=True)
    eager, _, eager_seconds = train(args.optimizer, bool(args.foreach), args.steps, compiled=False)
    diffs = [(a - b).abs().max().item() for a, b in zip(compiled.parameters(), eager.parameters(), strict=True)]
    try:
        for a, b in zip(compiled.parameters(), eager.parameters(), strict=True):
            torch.testing.assert_close(a, b)
        equal = True
    except AssertionError:
        equal = False
    print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__, "compiles": compiles,
                      "seconds": seconds, "eager_seconds": eager_seconds, "max_abs_diff": max(diffs),
                      "equal_to_eager": equal}))


if __name__ == "__main__":
    main()
