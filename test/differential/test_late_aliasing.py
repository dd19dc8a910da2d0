# Owner(s): ["module: dynamo"]
"""Differential corpus part: a compiled program that mutates its inputs, called with inputs
that alias each other only at a later call than the one that compiled it (or the reverse).

Eager is the oracle.  A program ``f(x, y)`` mutates ``x`` and/or ``y`` in place (``OPS``).
It is compiled with ``torch.compile`` and then called several times, in an ``ORDERS``
sequence, with inputs that either do not alias (two fresh tensors) or alias in one of the
``ALIASINGS`` ways (the same tensor twice, overlapping or disjoint row views of one base,
overlapping column views (non-contiguous), a tensor and a view of it, a view and its base,
overlapping views in the other order).  At every call the inputs are built twice from one
seed (eager copy and compiled copy), and the outputs and the final value of every root
tensor (the base the views come from, or the two fresh tensors) are compared.  The number
of compiled frames over the whole sequence must stay bounded (``MAX_FRAMES``): a guard that
never holds would recompile at every call.

AOTAutograd handles inputs that alias a mutated input (a synthetic base) only when it sees
the aliasing while compiling; a graph compiled for non-aliasing inputs and reused for
aliasing ones gives wrong values (pytorch/pytorch#139789), and a graph compiled for aliasing
inputs, called with inputs that alias differently, hits an assertion in the synthetic-base
wrapper.  ``UPSTREAM_ISSUES`` tags such failures on stock torch.

Cases are the cross product ``OPS`` x ``ALIASINGS`` x ``ORDERS`` x ``MODES`` (backend
``aot_eager`` or ``inductor``, ``dynamic=False``/``True``); nothing is picked by hand.
Not generated: programs where eager itself raises because an in-place op's operand
partially overlaps the written-to tensor (for example ``x.add_(y)`` with overlapping views:
eager's memory-overlap check, a different class); every op here writes a value computed
from fresh tensors or from the written-to tensor itself.

Tiers: by default (FAST) the literal reproducer of #139789 with aot_eager and with
inductor (``FAST_REPROS``), then each op once under aot_eager, its aliasing, order and
``dynamic`` rotating with its position (``_fast_cases``), so every aliasing kind and both
orders are met (15 cases; the one inductor case pays inductor's first-compile cost).  With ``PYTORCH_TEST_WITH_SLOW=1``
(FULL): every (op, aliasing, order) triple, each in one of the four modes, rotating.
Devices: cpu, cuda, and the PrivateUse1 device when its inductor backend is registered
(the inductor cases are skipped on a device without one).

Run (fresh inductor cache per run, never shared between two torch builds)::

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python -m pytest test/differential/test_late_aliasing.py
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product
from typing import Optional

import torch
import torch._dynamo
import torch._dynamo.testing
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import (
    TEST_WITH_SLOW,
    TestCase,
    parametrize,
    run_tests,
)

FULL: bool = bool(TEST_WITH_SLOW)

ROWS, COLS = 4, 6
# Frames compiled over one whole sequence: one per distinct aliasing pattern met (at most
# three: none, and the one or two patterns of the sequence) is fine.
MAX_FRAMES = 3

VALUES = "values"  # an output or a root tensor differs from eager
RAISES = "raises"  # compiled raised where eager did not
FRAMES = "frames"  # more compiled frames than MAX_FRAMES

# (case-name pattern (re.search), failure kinds, upstream issue reporting it on stock torch)
UPSTREAM_ISSUES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    (r"", (VALUES, RAISES), 139789),
)


def upstream_issue(case: str, kind: str) -> Optional[int]:
    return next((n for pattern, kinds, n in UPSTREAM_ISSUES if kind in kinds and re.search(pattern, case)), None)


class Mismatch(AssertionError):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def inductor_supports(device_type: str) -> bool:
    from torch._inductor.codegen.common import get_scheduling_for_device, init_backend_registration

    init_backend_registration()
    return get_scheduling_for_device(device_type) is not None


# --------------------------------------------------------------------------- #
# Programs: f(x, y), both (ROWS, COLS); each mutates x and/or y
# --------------------------------------------------------------------------- #


def _rows(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor([0, 2], device=x.device)


def _mul_then_read(x, y):
    x.mul_(2)
    return x + y


def _add_then_read_other(x, y):
    x.add_(1)
    return y * 3


def _copy_fresh(x, y):
    x.copy_(x * 3 + 1)
    return y.sin() + x


def _index_put(x, y):
    x.index_put_((_rows(x),), torch.full((2, COLS), 7.0, device=x.device))
    return y + 1


def _index_add(x, y):
    x.index_add_(0, _rows(x), torch.ones(2, COLS, device=x.device))
    return y.sum(0)


def _masked_fill(x, y):
    x.masked_fill_(x > 0, 0.5)
    return y * 2


def _setitem_int(x, y):
    x[1] = 5.0
    return y * x


def _setitem_slice_tensor(x, y):
    x[1:3] = torch.full((2, COLS), -1.0, device=x.device)
    return y - 1


def _narrow_copy(x, y):
    x.narrow(0, 1, 2).copy_(torch.ones(2, COLS, device=x.device))
    return y.cos()


def _mul_through_select(x, y):
    x[0].mul_(3)
    return y + 2


def _mutate_both(x, y):
    y.add_(2)
    x.mul_(3)
    return x - y


def _read_then_mutate_second(x, y):
    out = x * 2
    y.mul_(5)
    return out + y


def _mutate_second_read_first(x, y):
    y.sub_(1)
    return x.sum(1)


OPS: tuple[tuple[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]], ...] = (
    ("mul_", _mul_then_read),
    ("add_", _add_then_read_other),
    ("copy_", _copy_fresh),
    ("index_put_", _index_put),
    ("index_add_", _index_add),
    ("masked_fill_", _masked_fill),
    ("setitem_int", _setitem_int),
    ("setitem_slice", _setitem_slice_tensor),
    ("narrow_copy_", _narrow_copy),
    ("select_mul_", _mul_through_select),
    ("mutate_both", _mutate_both),
    ("read_then_mutate_y", _read_then_mutate_second),
    ("mutate_y_read_x", _mutate_second_read_first),
)

# --------------------------------------------------------------------------- #
# Inputs: (x, y) and the roots to compare after the call
# --------------------------------------------------------------------------- #

Inputs = tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]]


def _randn(gen: torch.Generator, device: str, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen).to(device)


def _distinct(gen, device) -> Inputs:
    a, b = _randn(gen, device, ROWS, COLS), _randn(gen, device, ROWS, COLS)
    return (a, b), (a, b)


def _same(gen, device) -> Inputs:
    a = _randn(gen, device, ROWS, COLS)
    return (a, a), (a,)


def _overlapping_rows(gen, device) -> Inputs:
    base = _randn(gen, device, ROWS + 2, COLS)
    return (base[:ROWS], base[2:]), (base,)


def _disjoint_rows(gen, device) -> Inputs:
    base = _randn(gen, device, 2 * ROWS, COLS)
    return (base[:ROWS], base[ROWS:]), (base,)


def _overlapping_cols(gen, device) -> Inputs:
    base = _randn(gen, device, ROWS, COLS + 3)
    return (base[:, :COLS], base[:, 3:]), (base,)


def _tensor_and_view(gen, device) -> Inputs:
    a = _randn(gen, device, ROWS, COLS)
    return (a, a[:]), (a,)


def _view_and_base(gen, device) -> Inputs:
    a = _randn(gen, device, ROWS, COLS)
    return (a.view(ROWS, COLS), a), (a,)


def _reversed_rows(gen, device) -> Inputs:
    base = _randn(gen, device, ROWS + 2, COLS)
    return (base[2:], base[:ROWS]), (base,)


ALIASINGS: dict[str, Callable[[torch.Generator, str], Inputs]] = {
    "same_tensor": _same,
    "overlapping_rows": _overlapping_rows,
    "disjoint_rows": _disjoint_rows,
    "overlapping_cols": _overlapping_cols,
    "tensor_and_view": _tensor_and_view,
    "view_and_base": _view_and_base,
    "reversed_rows": _reversed_rows,
}

# The call sequences: "late" compiles for non-aliasing inputs, then meets the aliasing;
# "early" compiles for the aliasing inputs first, then meets non-aliasing and disjoint views.
DISTINCT, ALIAS, DISJOINT = "distinct", "alias", "disjoint"
ORDERS: dict[str, tuple[str, ...]] = {
    "late": (DISTINCT, DISTINCT, ALIAS, DISTINCT, ALIAS),
    "early": (ALIAS, DISTINCT, ALIAS, DISJOINT, ALIAS),
}

MODES: tuple[tuple[str, bool], ...] = (
    ("aot_eager", False),
    ("aot_eager", True),
    ("inductor", False),
    ("inductor", True),
)


@dataclass(frozen=True)
class Case:
    op: str
    aliasing: str
    order: str
    backend: str
    dynamic: bool

    @property
    def name(self) -> str:
        dyn = "dynamic" if self.dynamic else "static"
        return f"{self.op}__{self.aliasing}__{self.order}__{self.backend}__{dyn}"


def _all_cases() -> list[Case]:
    """FULL: every (op, aliasing, order) triple; the k-th triple runs in MODES[k % 4]."""
    triples = list(product((n for n, _ in OPS), ALIASINGS, ORDERS))
    return [Case(o, a, r, *MODES[k % len(MODES)]) for k, (o, a, r) in enumerate(triples)]


FAST_REPROS: tuple[Case, ...] = (
    Case("mul_", "overlapping_rows", "late", "aot_eager", False),  # #139789
    # the same with inductor: the recompile must not load the artifact cached for
    # non-aliasing inputs (the AOTAutograd cache key)
    Case("mul_", "overlapping_rows", "late", "inductor", False),
)


def _fast_cases() -> list[Case]:
    """FAST: the reproducers, then op k with aliasing k (mod 7), order k (mod 2) and
    aot_eager with dynamic k // 2 (mod 2); inductor only in the reproducer (its first compile in a
    process costs more than the rest of the tier)."""
    names = list(ALIASINGS)
    orders = list(ORDERS)
    cases = list(FAST_REPROS)
    for k, (op, _) in enumerate(OPS):
        case = Case(op, names[k % len(names)], orders[k % 2], *MODES[(k // 2) % 2])
        if case not in cases:
            cases.append(case)
    return cases


CASES: list[Case] = _all_cases() if FULL else _fast_cases()


class TestLateAliasing(TestCase):
    def _tagged(self, case: str, run: Callable[[], None]) -> None:
        try:
            run()
        except Mismatch as e:
            issue = upstream_issue(case, e.kind)
            if issue is None:
                raise
            raise AssertionError(f"[upstream #{issue}] {e}") from e

    def _expect(self, kind: str, check: Callable[[], None]) -> None:
        try:
            check()
        except AssertionError as e:
            raise Mismatch(kind, str(e)) from e

    def _run(self, c: Case, device: str) -> None:
        torch._dynamo.reset()
        fn = dict(OPS)[c.op]
        counter = torch._dynamo.testing.CompileCounterWithBackend(c.backend)
        compiled = torch.compile(fn, backend=counter, dynamic=c.dynamic)
        makers = {DISTINCT: _distinct, ALIAS: ALIASINGS[c.aliasing], DISJOINT: _disjoint_rows}
        seed = _seed(c.name)
        for step, kind in enumerate(ORDERS[c.order]):
            where = f"[{c.name}, {device}] call {step} ({kind})"
            make = makers[kind]
            (x, y), roots = make(torch.Generator().manual_seed(seed + step), device)
            (rx, ry), ref_roots = make(torch.Generator().manual_seed(seed + step), device)
            expected = fn(rx, ry)
            try:
                actual = compiled(x, y)
            except Exception as e:
                raise Mismatch(RAISES, f"{where}: compiled raised {type(e).__name__}: {e}") from e

            def values() -> None:
                self.assertEqual(actual, expected, msg=f"{where} output")
                for k, (a, e) in enumerate(zip(roots, ref_roots)):
                    self.assertEqual(a, e, msg=f"{where} root {k} after the call")

            self._expect(VALUES, values)
        self._expect(FRAMES, lambda: self.assertLessEqual(
            counter.frame_count, MAX_FRAMES, msg=f"[{c.name}, {device}] compiled frames"))

    @parametrize("c", CASES, name_fn=lambda c: c.name)
    def test_late_aliasing(self, device: str, c: Case) -> None:
        if c.backend == "inductor" and not inductor_supports(torch.device(device).type):
            self.skipTest(f"inductor has no backend for {device}")
        try:
            self._tagged(c.name, lambda: self._run(c, device))
        finally:
            torch._dynamo.reset()


instantiate_device_type_tests(TestLateAliasing, globals())

if __name__ == "__main__":
    run_tests()
