# Owner(s): ["module: dynamo"]
"""Differential corpus part: metadata and autograd-metadata mutation under ``torch.compile``.

Eager is the oracle. A program makes a target tensor (an intermediate ``x * 2`` or the graph
input ``x`` itself), mutates its metadata in place with one op of ``OPS``, then reads the
target's metadata inside the compiled region (shape, stride(), is_contiguous(), dim(),
size(0), numel(), requires_grad, is_leaf, and ``grad_fn is None`` in the ``grad_fn`` read
mode), uses it (``reshape(t.size(0), -1)``) and computes with the target. Compared: every
output's values, shape, stride, requires_grad and whether grad_fn is None; the metadata read
inside the region; the final values, shape, stride and requires_grad of every input. Where
eager raises, the compiled program must raise an exception of the same type.

``OPS`` (none picked by hand, the class of the upstream reports): the autograd-metadata
mutation ``detach_`` (method, ``torch.detach_``, unbound ``torch.Tensor.detach_``), the
metadata mutations ``as_strided_`` (method and ``torch.as_strided_``), ``t_``, ``transpose_``,
``swapdims_``, ``swapaxes_``, ``unsqueeze_``, ``squeeze_``, ``resize_``, each also chained
through the alias an in-place op returns; and the in-place writes of an operand requiring grad
(``add_``, ``copy_``, ``mul_``, ``+=``, ``index_add_``, ``torch.index_put_``, and through a
returned alias), and ``requires_grad_(False)`` after ``detach_``. Crossed with ``TARGETS``
(intermediate, graph input), ``GRAD`` (the input requires grad, or the operand ``w`` does)
and ``dynamic=False``/``True``, and ``READS`` (with or without reading ``grad_fn``: a stale
``grad_fn`` makes Dynamo graph break, which hides the other stale reads).

Known upstream reports are members of the cross product: #176854 is ``detach_*`` on the
intermediate with the input requiring grad; #185888 is ``as_strided_*`` on the intermediate.
``UPSTREAM_ISSUES`` maps case-name patterns to them; a failure's message starts with
``[upstream #N]``.

Tiers: FAST (default) runs every (op, target) pair once, rotating over the (grad, dynamic,
read) modes, under ``aot_eager`` (the bugs are in Dynamo; aot_eager runs AOTAutograd's
functionalization too). ``PYTORCH_TEST_WITH_SLOW=1`` (FULL) runs every mode under
``aot_eager`` and ``inductor``.

Run (fresh inductor cache per run)::

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python -m pytest test/differential/test_metadata_mutation.py
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable, Optional

import torch
import torch._dynamo
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TEST_WITH_SLOW, TestCase, parametrize, run_tests

FULL: bool = bool(TEST_WITH_SLOW)


def _idx(t: torch.Tensor, *v: int) -> torch.Tensor:
    return torch.tensor(v, device=t.device)


# name -> fn(t, w) mutating t in place; t and w are (2, 3)
OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "detach_": lambda t, w: t.detach_(),
    "detach__torch_fn": lambda t, w: torch.detach_(t),
    "detach__unbound": lambda t, w: torch.Tensor.detach_(t),
    "detach__alias": lambda t, w: t.detach_().detach_(),
    "detach__requires_grad_noop": lambda t, w: t.detach_().requires_grad_(False),
    "as_strided_": lambda t, w: t.as_strided_((3, 2), (1, 3)),
    "as_strided__torch_fn": lambda t, w: torch.as_strided_(t, (3, 2), (1, 3)),
    "as_strided__flat": lambda t, w: t.as_strided_((6,), (1,)),
    "t_": lambda t, w: t.t_(),
    "t__alias": lambda t, w: t.t_().t_(),
    "transpose_": lambda t, w: t.transpose_(0, 1),
    "swapdims_": lambda t, w: t.swapdims_(1, 0),
    "swapaxes_": lambda t, w: t.swapaxes_(0, 1),
    "unsqueeze_": lambda t, w: t.unsqueeze_(1),
    "unsqueeze__alias_squeeze_": lambda t, w: t.unsqueeze_(0).squeeze_(0),
    "unsqueeze__alias_transpose_": lambda t, w: t.unsqueeze_(2).transpose_(0, 2),
    "resize_": lambda t, w: t.resize_(3, 2),
    "add_": lambda t, w: t.add_(w),
    "copy_": lambda t, w: t.copy_(w),
    "mul__unbound": lambda t, w: torch.Tensor.mul_(t, w),
    "iadd": lambda t, w: t.__iadd__(w),
    "index_add_": lambda t, w: t.index_add_(0, _idx(t, 1, 0), w),
    "index_put__torch_fn": lambda t, w: torch.index_put_(t, (_idx(t, 1),), w[0]),
    "add__alias_mul_": lambda t, w: t.add_(1.0).mul_(w),
}
TARGETS = ("intermediate", "input")
GRAD = ("x_grad", "w_grad")
READS = ("meta", "grad_fn")

# (case-name pattern, upstream issue reporting that failure on stock torch). First match wins.
UPSTREAM_ISSUES: tuple[tuple[str, int], ...] = (
    (r"^detach_.*__intermediate__x_grad__", 176854),
    (r"^as_strided_.*__intermediate__", 185888),
)


def upstream_issue(case: str) -> Optional[int]:
    return next((n for pattern, n in UPSTREAM_ISSUES if re.search(pattern, case)), None)


def _reads(t: torch.Tensor, with_grad_fn: bool) -> tuple:
    r = (tuple(t.shape), tuple(t.stride()), t.is_contiguous(), t.dim(), t.size(0), t.numel(),
         t.requires_grad, t.is_leaf)
    return r + (t.grad_fn is None,) if with_grad_fn else r


@dataclass(frozen=True)
class Case:
    op: str
    target: str
    grad: str
    dynamic: bool
    read: str
    backend: str

    @property
    def name(self) -> str:
        dyn = "dynamic" if self.dynamic else "static"
        return f"{self.op}__{self.target}__{self.grad}__{dyn}__{self.read}__{self.backend}"

    def body(self) -> Callable[..., Any]:
        op, target, with_grad_fn = OPS[self.op], self.target, self.read == "grad_fn"

        def fn(x: torch.Tensor, w: torch.Tensor) -> Any:
            t = x * 2.0 if target == "intermediate" else x
            op(t, w)
            flat = t.reshape(t.size(0), -1)
            return t + 1.0, flat * w.sum(), _reads(t, with_grad_fn)

        return fn


def _cases() -> list[Case]:
    modes = list(product(GRAD, (False, True), READS))
    if FULL:
        return [Case(op, target, g, d, r, b)
                for op, target, (g, d, r), b in product(OPS, TARGETS, modes, ("aot_eager", "inductor"))]
    cases = []
    for k, (op, target) in enumerate(product(OPS, TARGETS)):
        g, d, r = modes[(k + k // len(modes)) % len(modes)]
        cases.append(Case(op, target, g, d, r, "aot_eager"))
    return cases


def _int(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return tuple(_int(e) for e in v)
    return int(v) if isinstance(v, torch.SymInt) else v


def _state(t: torch.Tensor) -> tuple:
    return (tuple(t.shape), t.stride(), t.requires_grad, t.grad_fn is None)


class TestMetadataMutation(TestCase):
    def _run(self, c: Case, device: str) -> None:
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(sum(map(ord, c.name)))
        xv, wv = torch.randn(2, 3, generator=gen), torch.randn(2, 3, generator=gen)

        def inputs() -> tuple[torch.Tensor, torch.Tensor]:
            return (xv.to(device).clone().requires_grad_(c.grad == "x_grad"),
                    wv.to(device).clone().requires_grad_(c.grad == "w_grad"))

        eager_in, comp_in = inputs(), inputs()
        fn = c.body()
        compiled = torch.compile(fn, backend=c.backend, dynamic=c.dynamic)
        where = f"[{c.name}, {device}]"
        try:
            expected = fn(*eager_in)
        except Exception as e:
            with self.assertRaises(type(e), msg=f"{where} eager raised {type(e).__name__}: {e}"):
                compiled(*comp_in)
            return
        actual = compiled(*comp_in)
        for k, (e, a) in enumerate(zip(expected[:2], actual[:2])):
            self.assertEqual(a, e, msg=f"{where} output {k}")
            self.assertEqual(_state(a), _state(e), msg=f"{where} output {k} metadata")
        self.assertEqual(_int(actual[2]), expected[2], msg=f"{where} metadata read in the region")
        for k, (e, a) in enumerate(zip(eager_in, comp_in)):
            self.assertEqual(a.detach(), e.detach(), msg=f"{where} input {k} after the call")
            self.assertEqual((tuple(a.shape), a.stride(), a.requires_grad),
                             (tuple(e.shape), e.stride(), e.requires_grad),
                             msg=f"{where} input {k} metadata after the call")

    @parametrize("c", _cases(), name_fn=lambda c: c.name)
    def test_case(self, device: str, c: Case) -> None:
        try:
            self._run(c, device)
        except AssertionError as e:
            issue = upstream_issue(c.name)
            if issue is None:
                raise
            raise AssertionError(f"[upstream #{issue}] {e}") from e


instantiate_device_type_tests(TestMetadataMutation, globals())

if __name__ == "__main__":
    run_tests()
