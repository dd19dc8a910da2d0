# Owner(s): ["module: dynamo"]
"""Differential corpus part: ops taking a Python float under ``torch.compile``, against eager.

With ``specialize_float=False`` (2.9.1's default) a Python float reaching a compiled frame is
traced as a SymFloat, and the ``tensorify_python_scalars`` pass turns its uses into tensor
compute so that a changing float (a scheduler's ``lr``) does not recompile. That rewrite
decides how the scalar is rounded and where it is applied, which is exactly what eager's
kernels define: a float baked in as a constant (stock's specialization) runs eager's own
kernel, a tensorified one runs the ops the pass chose instead.

Every case compiles ``fn(x, y, s)`` and calls it with three distinct floats ``s``, comparing
each call with eager: the dtype must be eager's and the values must match under torch's
per-dtype tolerances, under ``aot_eager`` (the traced ATen graph run op by op) and under
``inductor``. A scalar rounded where eager does not round it (a float16/bfloat16 ``alpha``
applied in float32 where eager's kernel rounds it to the element type) moves results far past
those tolerances wherever ``x`` and ``s * y`` cancel, and the inputs make sure some do.

The ops (``OPS``) are the call forms that carry a float into a kernel: ``alpha`` of
add/sub (functional and in-place methods), Python operators on tensors, composite float
expressions, clamp/lerp/addcmul/addcdiv/pow scalars, foreach ops with a scalar or ``alpha``,
and integer operands promoted by the float. Each runs in every floating dtype and in int64
where eager accepts it.

Tiers: FAST (default) every op in bfloat16 under ``aot_eager``, where a scalar's rounding
shows most and a compile costs least; with ``PYTORCH_TEST_WITH_SLOW=1`` (FULL) every op in
float32, float64, bfloat16, float16 and int64 under both backends.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

import torch
import torch._dynamo
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TEST_WITH_SLOW, TestCase, parametrize, run_tests
from torch.utils._pytree import tree_leaves

FULL: bool = bool(TEST_WITH_SLOW)

# Three distinct floats, none 0 or 1 (Dynamo treats those specially), with more mantissa
# bits than float16/bfloat16 hold, so that rounding a scalar to the element type changes it.
# Two are close to -1 and 1: x + s * x and x - s * x then cancel to a few hundredths of x,
# where a scalar rounded once more moves the result by percents.
FLOAT_VALUES: tuple[float, ...] = (-1.00871875, 0.30000000000000004, 1.00871875)

Op = Callable[[torch.Tensor, torch.Tensor, float], Any]

# name -> fn(x, y, s); x and y have the case's dtype, s is the Python float.
OPS: dict[str, Op] = {
    "add_alpha": lambda x, y, s: torch.add(x, y, alpha=s),
    "sub_alpha": lambda x, y, s: torch.sub(x, y, alpha=s),
    "add_alpha_same": lambda x, y, s: torch.add(x, x, alpha=s),
    "add_alpha_method": lambda x, y, s: x.add(y, alpha=s),
    "add__alpha": lambda x, y, s: x.clone().add_(y, alpha=s),
    "sub__alpha": lambda x, y, s: x.clone().sub_(y, alpha=s),
    "add_scalar": lambda x, y, s: x + s,
    "rsub_scalar": lambda x, y, s: s - x,
    "mul_scalar": lambda x, y, s: x * s,
    "div_scalar": lambda x, y, s: x / s,
    "rdiv_scalar": lambda x, y, s: s / (x.abs() + 1),
    "mul__scalar": lambda x, y, s: x.clone().mul_(s),
    "div__scalar": lambda x, y, s: x.clone().div_(s),
    "torch_mul": lambda x, y, s: torch.mul(x, s),
    "composite": lambda x, y, s: x * (0.5 * s) + y * (s * s),
    "composite_alpha": lambda x, y, s: torch.add(x, y, alpha=-s / (1 - 0.999) ** 0.5),
    "pow_scalar": lambda x, y, s: (x.abs() + 1) ** s,
    "clamp": lambda x, y, s: torch.clamp(x, -abs(s), abs(s)),
    "lerp": lambda x, y, s: torch.lerp(x, y, s),
    "addcmul": lambda x, y, s: torch.addcmul(x, y, y, value=s),
    "addcdiv": lambda x, y, s: torch.addcdiv(x, y, y.abs() + 1, value=s),
    "foreach_add_alpha": lambda x, y, s: torch._foreach_add([x, y], [y, x], alpha=s),
    "foreach_add__alpha": lambda x, y, s: torch._foreach_add_([x.clone(), y.clone()], [y, x], alpha=s),
    "foreach_mul_scalar": lambda x, y, s: torch._foreach_mul([x, y], s),
    "foreach_sub_scalar": lambda x, y, s: torch._foreach_sub([x, y], s),
}

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
BACKENDS = ("aot_eager", "inductor")


@dataclass(frozen=True)
class Case:
    op: str
    dtype: torch.dtype
    backend: str

    @property
    def name(self) -> str:
        return f"{self.op}__{str(self.dtype).removeprefix('torch.')}__{self.backend}"


def _in_tier(dtype: torch.dtype, backend: str) -> bool:
    return FULL or (backend == "aot_eager" and dtype == torch.bfloat16)


def _cases() -> list[Case]:
    dtypes = (*FLOAT_DTYPES, torch.int64)
    return [Case(op, dtype, backend) for op, dtype, backend in product(OPS, dtypes, BACKENDS)
            if _in_tier(dtype, backend)]


def _inputs(dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    # Odd length: vectorized kernels also run their scalar tail. Every other element of y
    # is x's, so that x and s * y cancel there.
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randn(67, generator=g, dtype=torch.float64) * 4 for _ in range(2))
    y[::2] = x[::2]
    return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)


class TestFloatScalars(TestCase):
    def setUp(self) -> None:
        super().setUp()
        torch._dynamo.reset()
        patch = torch._dynamo.config.patch(specialize_float=False, cache_size_limit=8)
        patch.__enter__()
        self.addCleanup(patch.__exit__, None, None, None)
        self.addCleanup(torch._dynamo.reset)

    def _compare(self, actual: list[torch.Tensor], expected: list[torch.Tensor], where: str) -> None:
        self.assertEqual(len(actual), len(expected), msg=where)
        for k, (a, e) in enumerate(zip(actual, expected)):
            self.assertEqual(a.dtype, e.dtype, msg=f"{where} output {k} dtype")
            self.assertEqual(a, e, msg=f"{where} output {k}")

    @parametrize("c", _cases(), name_fn=lambda c: c.name)
    def test_case(self, device: str, c: Case) -> None:
        fn = OPS[c.op]
        x, y = _inputs(c.dtype, device)
        compiled = torch.compile(fn, backend=c.backend)
        for s in FLOAT_VALUES:
            where = f"{c.name} s={s!r}:"
            try:
                expected = tree_leaves(fn(x, y, s))
            except RuntimeError as e:  # eager rejects it (a float into an integer in place)
                with self.assertRaises(Exception, msg=f"{where} eager raised {e}"):
                    compiled(x, y, s)
                continue
            self._compare(tree_leaves(compiled(x, y, s)), expected, where)


instantiate_device_type_tests(TestFloatScalars, globals())

if __name__ == "__main__":
    run_tests()
