"""What inductor emits for in-place programs with no aliasing hazard, under the torch that
PYTHONPATH selects: generated kernels and bytes accessed (`torch._inductor.metrics`).

The mutation and aliasing fixes make the reinplace pass refuse unsafe rewrites; they must not
cost the copies the pass exists to avoid. Two families, none picked by hand:

* in-place programs: every in-place op of the mutation gate's family, writing into a graph
  input (the mutation is kept) or into a fresh intermediate (`x.clone()`, reinplaced), with a
  source that aliases nothing;
* compiled optimizer steps: every `optim_db` optimizer in its first configuration (with
  `--every-config`: every configuration), `foreach` both ways where supported, at inductor's
  default `score_fusion_memory_threshold` and at 1 (the value upstream's compiled-optimizer
  tests pin kernel counts at), with a constant learning rate and with one a StepLR halves
  after every step: two compiled `opt.step()` calls (state init, then the steady step).

Caches are off so that every program is generated (a cache hit emits no kernel). Prints one
JSON object: program name -> [generated kernels, bytes accessed], or null where the program
does not compile.

    python kernel_metrics.py                  # every program
    python kernel_metrics.py --list           # only the names
    python kernel_metrics.py --only NAME...   # only these programs
    python kernel_metrics.py --every-config   # every optim_db configuration, not the first
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import torch
import torch._inductor.config as inductor_config
from torch._inductor import metrics
from torch.testing._internal.common_optimizers import OptimizerInfo, optim_db

Program = Callable[[], None]

N = 8


def _operands() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(N, N, generator=generator)
    src = torch.randn(N, N, generator=generator)
    index = torch.randperm(N, generator=generator)[: N // 2]
    mask = torch.rand(N, N, generator=generator) > 0.5
    return x, src, index, mask


# In-place op -> fn(target, src, index, mask), writing into `target` only.
INPLACE: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], object]] = {
    "index_put_": lambda t, s, i, m: t.index_put_((i,), s[: N // 2]),
    "index_put_accumulate": lambda t, s, i, m: t.index_put_((i,), s[: N // 2], accumulate=True),
    "index_add_": lambda t, s, i, m: t.index_add_(0, i, s[: N // 2]),
    "index_copy_": lambda t, s, i, m: t.index_copy_(0, i, s[: N // 2]),
    "index_fill_": lambda t, s, i, m: t.index_fill_(1, i, 2.0),
    "scatter_": lambda t, s, i, m: t.scatter_(0, i.unsqueeze(1).expand(-1, N), s[: N // 2]),
    "scatter_add_": lambda t, s, i, m: t.scatter_add_(0, i.unsqueeze(1).expand(-1, N), s[: N // 2]),
    "masked_fill_": lambda t, s, i, m: t.masked_fill_(m, 3.0),
    "copy_": lambda t, s, i, m: t.copy_(s),
    "add_": lambda t, s, i, m: t.add_(s),
    "mul_": lambda t, s, i, m: t.mul_(s),
    "setitem_int": lambda t, s, i, m: t.__setitem__(1, s[0]),
    "setitem_slice": lambda t, s, i, m: t.__setitem__(slice(1, 3), s[1:3]),
    "setitem_tensor": lambda t, s, i, m: t.__setitem__(i, s[: N // 2]),
    "setitem_bool": lambda t, s, i, m: t.__setitem__(m, 0.5),
    "narrow_copy_": lambda t, s, i, m: t.narrow(1, 2, 3).copy_(s[:, :3]),
    "select_add_": lambda t, s, i, m: t.select(0, 2).add_(s[0]),
}


def _inplace_program(op: str, target: str) -> Program:
    fn = INPLACE[op]

    def on_input(x: torch.Tensor, s: torch.Tensor, i: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        fn(x, s, i, m)
        return x.sum(0)

    def on_intermediate(x: torch.Tensor, s: torch.Tensor, i: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        z = x.clone()
        fn(z, s, i, m)
        return z

    body = on_input if target == "input" else on_intermediate

    def run() -> None:
        torch.compile(body, backend="inductor", fullgraph=True)(*_operands())

    return run


def _optimizer_class(info: OptimizerInfo) -> Callable[..., torch.optim.Optimizer]:
    # OptimizerInfo annotates optim_cls as an instance; it holds the class.
    return cast(Callable[..., torch.optim.Optimizer], info.optim_cls)


# Inductor's default, and the value upstream's compiled-optimizer tests pin kernel counts at.
THRESHOLDS = {"default": inductor_config.score_fusion_memory_threshold, "1": 1}
LEARNING_RATES = ("constant", "scheduled")


def _optimizer_program(info: OptimizerInfo, config: int, foreach: bool, threshold: int, lr: str) -> Program:
    def run() -> None:
        generator = torch.Generator().manual_seed(0)
        params = [torch.randn(N, N, generator=generator, requires_grad=True),
                  torch.randn(N, generator=generator, requires_grad=True)]
        for p in params:
            p.grad = torch.randn(p.shape, generator=generator)
        kwargs = dict(info.optim_inputs_func(device="cpu")[config].kwargs)
        kwargs.pop("lr", None)
        kwargs.pop("foreach", None)
        opt = _optimizer_class(info)(params, lr=0.01, foreach=foreach, **kwargs)
        # A scheduler writes a new float learning rate after every step (stock recompiles for it).
        scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) if lr == "scheduled" else None
        step = torch.compile(opt.step, backend="inductor")
        with inductor_config.patch(score_fusion_memory_threshold=threshold):
            for _ in range(2):
                step()
                if scheduler is not None:
                    scheduler.step()

    return run


def _optimizer_programs(info: OptimizerInfo, every_config: bool) -> Iterator[tuple[str, Program]]:
    name = _optimizer_class(info).__name__
    configs = info.optim_inputs_func(device="cpu")
    for config in range(len(configs) if every_config else 1):
        label = f"{name} ({configs[config].desc})" if every_config else name
        for foreach in (False, True) if "foreach" in info.supported_impls else (False,):
            for threshold_name, threshold in THRESHOLDS.items():
                for lr in LEARNING_RATES:
                    yield (f"{label} foreach={foreach} threshold={threshold_name} lr={lr}",
                           _optimizer_program(info, config, foreach, threshold, lr))


def programs(every_config: bool = False) -> Iterator[tuple[str, Program]]:
    for op in INPLACE:
        for target in ("input", "intermediate"):
            yield f"{op} into {target}", _inplace_program(op, target)
    for info in optim_db:
        if _optimizer_class(info).__name__ in ("LBFGS", "SparseAdam"):
            continue  # LBFGS takes a closure, SparseAdam sparse gradients: no plain compiled step
        yield from _optimizer_programs(info, every_config)


def _selected(names: Sequence[str], every_config: bool) -> dict[str, Program]:
    """The programs to run: all of them, or those named (an unknown name is an error)."""
    table = dict(programs(every_config))
    unknown = [name for name in names if name not in table]
    if unknown:
        sys.exit(f"kernel_metrics: unknown program(s) {', '.join(unknown)}; see --list")
    return {name: table[name] for name in names} if names else table


def measure(program: Program) -> list[int] | None:
    """[kernels, bytes], or None when the program does not compile (e.g. a compiled Adafactor
    step with foreach=True on 2.9.1)."""
    torch._dynamo.reset()
    metrics.reset()
    try:
        program()
    except Exception as e:  # noqa: BLE001 - a failing program is recorded, the others still run
        print(f"does not compile: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        return None
    return [metrics.generated_kernel_count, metrics.num_bytes_accessed]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--list", action="store_true", help="print the program names only")
    p.add_argument("--only", nargs="+", default=[], metavar="NAME", help="only these programs")
    p.add_argument("--every-config", action="store_true", help="every optim_db configuration, not the first")
    args = p.parse_args()
    inductor_config.fx_graph_cache = False
    inductor_config.autotune_local_cache = False
    torch._functorch.config.enable_autograd_cache = False
    torch._dynamo.config.recompile_limit = 64
    # Inductor counts bytes only while its metrics log is on (the log itself goes to stderr).
    torch._logging.set_logs(inductor_metrics=True)
    selected = _selected(args.only, args.every_config)
    if args.list:
        print(json.dumps(list(selected)))
        return
    result = {name: measure(program) for name, program in selected.items()}
    print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__, "programs": result}))


if __name__ == "__main__":
    main()
