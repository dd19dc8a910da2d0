"""An optimizer-style step compiled with inductor, driven by a new learning rate every step.

Runs under the torch that PYTHONPATH selects. Inductor's imports and first-compile set-up are
paid by a throw-away compile before the clock starts, so the timed loop holds compiles and
steps only. The recompile limit is raised above the step count: with the default (8), stock
stops compiling after 8 values and silently runs the step eagerly, which hides the cost.
Prints one JSON object: compiles, seconds in the compiled step, max |compiled - eager|.

    python compiled_step.py mul_div 20
"""

from __future__ import annotations

import json
import sys
import time

import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend

BETA2 = 0.999


def mul_div(p: torch.Tensor, g: torch.Tensor, lr: float) -> None:
    p.mul_(1 - 0.01 * lr)                   # decoupled weight decay
    u = g.clone()
    u.div_((1 - BETA2) ** 0.5 / lr)         # bias-corrected step size
    p.sub_(u)


def alpha(p: torch.Tensor, g: torch.Tensor, lr: float) -> None:
    p.add_(g, alpha=-lr / (1 - BETA2) ** 0.5)


FORMS = {"mul_div": mul_div, "alpha": alpha}


def main(form: str, steps: int) -> None:
    step = FORMS[form]
    torch._dynamo.config.recompile_limit = steps + 8
    torch.compile(lambda x: x * 2 + 1, backend="inductor")(torch.ones(4))
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(step, backend=counter)
    torch.manual_seed(0)
    p, g = torch.randn(1024), torch.randn(1024)
    p_eager = p.clone()
    seconds, max_diff = 0.0, 0.0
    for i in range(steps):
        lr = 0.1 * 0.9 ** i                 # a scheduler: a new float every step
        start = time.perf_counter()
        compiled(p, g, lr)
        seconds += time.perf_counter() - start
        step(p_eager, g, lr)
        max_diff = max(max_diff, (p - p_eager).abs().max().item())
    print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__,
                      "compiles": counter.frame_count, "seconds": seconds, "max_abs_diff": max_diff}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
