"""Compile time on a real model, run under the torch that PYTHONPATH selects.

A tiny real architecture (torchvision's ResNet-18, transformers' GPT-2; random init, nothing
downloaded) is trained with its forward/backward and `opt.step()` (AdamW) compiled by inductor,
with a constant learning rate or under OneCycleLR (which moves `lr` and `betas[0]` every step).
The first step pays for the compiles; the later ones are the steady state. Prints one JSON
object: wall and CPU seconds of the first step, the median and the fastest of the steps after the
second (the second may still compile: e.g. optimizer state appears after the first step), and compiles.

    python first_step.py --model gpt2 --lr constant --steps 50
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.testing import CompileCounterWithBackend

Batch = tuple[torch.Tensor, torch.Tensor]
# (the model, compiled or not; a batch) -> the loss
LossOf = Callable[[Callable[..., Any], Batch], torch.Tensor]


def resnet() -> tuple[torch.nn.Module, LossOf, Batch]:
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    generator = torch.Generator().manual_seed(1)
    batch = (torch.randn(8, 3, 32, 32, generator=generator), torch.randint(0, 10, (8,), generator=generator))
    return model, lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1]), batch


def gpt2() -> tuple[torch.nn.Module, LossOf, Batch]:
    import transformers

    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(1))
    return model, lambda m, b: m(input_ids=b[0], labels=b[1]).loss, (ids, ids)


MODELS = {"resnet18": resnet, "gpt2": gpt2}


def _cpu_seconds() -> float:
    """CPU time of this process, of the children it waited for, and of its live descendants with
    the children they waited for: inductor compiles in a pool of worker processes that outlive
    the step (and run the C++ compiler), which a process's own rusage never counts."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + _descendants_cpu_seconds()


def _descendants_cpu_seconds() -> float:
    """utime + stime + cutime + cstime of every live descendant, from /proc (0 where there is none)."""
    stats: dict[int, tuple[int, float]] = {}  # pid -> (parent pid, CPU seconds)
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        except (OSError, IndexError):
            continue  # it ended while we looked
        # fields[1] is the parent pid; [11:15] utime, stime, cutime, cstime (man 5 proc, from field 3 on)
        stats[int(stat.parent.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / tick)
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, pending = 0.0, list(children.get(os.getpid(), []))
    while pending:
        pid = pending.pop()
        total += stats[pid][1]
        pending += children.get(pid, [])
    return total


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--lr", choices=("constant", "onecycle"), required=True)
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch._dynamo.config.recompile_limit = args.steps + 8  # never fall back to eager silently
    torch.manual_seed(0)
    model, loss_of, batch = MODELS[args.model]()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = (torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=args.steps)
             if args.lr == "onecycle" else None)
    counter = CompileCounterWithBackend("inductor")
    compiled_model = torch.compile(model, backend=counter)
    step = torch.compile(opt.step, backend=counter)

    def timed_step() -> float:
        start = time.perf_counter()
        opt.zero_grad()
        loss_of(compiled_model, batch).backward()
        step()
        if sched is not None:
            sched.step()
        return time.perf_counter() - start

    # CPU around the first step only (the compiles), read outside its wall time: reading it scans /proc
    start_cpu = _cpu_seconds()
    seconds = [timed_step()]
    first_step_cpu = _cpu_seconds() - start_cpu
    seconds += [timed_step() for _ in range(args.steps - 1)]
    print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__, "compiles": counter.frame_count,
                      "first_step_s": seconds[0], "first_step_cpu_s": first_step_cpu,
                      "steady_step_s": statistics.median(seconds[2:]), "steady_step_min_s": min(seconds[2:]),
                      "seconds": sum(seconds)}))


if __name__ == "__main__":
    main()
