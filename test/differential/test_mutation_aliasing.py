# Owner(s): ["module: inductor"]
"""Differential corpus part: mutation and aliasing under ``torch.compile(backend="inductor")``.

Eager is the oracle. Every case builds its inputs twice from one seed (the compiled copy is
made before either side runs), runs the program eagerly and compiled (a fresh
``torch._dynamo.reset()`` first) and compares:

* every output's values, and the final state of every tensor input (what the program
  mutated, directly or through a view);
* ALIASING: for every (output, input) and (output, output) pair, whether the two share a
  storage (``untyped_storage().data_ptr()``) must be what eager says: a compiled function
  that returns a fresh tensor where eager returns the mutated input (or the other way round)
  fails, even when every value is right;
* with ``grad``: the gradients of every leaf, from a seeded weighted sum of the outputs and of
  the mutated inputs;
* where eager raises (forward or backward), the compiled program must raise an exception of
  the same type at the same step.

Three generators produce the cases; none is picked by hand:

* ``TestMutationPrograms``: ``OPS`` (the in-place family: ``index_put_`` with and without
  accumulate, ``index_add_``, ``index_copy_``, ``index_fill_``, ``scatter_``,
  ``scatter_add_``, ``masked_fill_``, ``copy_``, ``add_``, ``mul_``, ``__setitem__`` with an
  int, a slice, an index tensor and a bool mask, ``narrow(...).copy_``; and the functional
  forms ``select_scatter``, ``slice_scatter``, ``diagonal_scatter``, ``index_put`` both ways,
  ``index_copy``, ``index_add``, ``index_fill``) crossed with ``TARGETS`` (what the op writes
  into: a graph input, an intermediate, ``zeros(1, n).expand(m, -1)`` created inside or
  passed in, a slice of an intermediate that is returned too and overlaps it, a view of an
  input, an intermediate that is also returned, and, for functional forms, a graph input that
  the program mutates after the op: zeroed or overwritten with the op's result), with
  ``SOURCES`` (the source is independent, the target itself, a view of the target, or the
  index is computed from the target), with ``grad`` (inference graph, or a joint graph and a
  backward), and with ``dynamic=False``/``True``.
* ``TestSavedForBackward``: an input saved for the backward of ``x @ w``, ``bmm``,
  ``einsum`` or a 3-D ``F.linear`` is mutated (inside the compiled program after the op, or
  by the caller between forward and backward): eager raises at backward, so must compiled.
* ``TestFunctorchWrappers``: ``torch.func.vmap``, ``grad`` and ``vmap(grad_and_value(...))``
  of small programs that index, scatter or write in place into an intermediate.

Known upstream reports are members of these cross products, not extra cases (``FAST_REPROS``
keeps the literal ones in the fast tier): #183986 is ``index_{add,copy,fill,put}``
(functional) into ``expanded_inside``, source ``none``; #198094 is ``slice_scatter`` into
``input_zeroed_after``; #195451 is ``slice_scatter`` into ``input_copied_back``; #156786 is
``index_put``/``index_copy`` (functional) into ``intermediate`` with source ``self``;
#197887 is ``TestSavedForBackward``; #188084 is ``TestFunctorchWrappers``
``index_select_stack`` under ``vmap_grad_and_value``.  ``UPSTREAM_ISSUES`` maps a case-name
pattern and a failure kind (values, aliasing, grad, compiled raised, compiled did not raise)
to the upstream issue that reports that failure on stock torch; such a failure's message
starts with ``[upstream #N]``, which the gate's record carries.

Combinations not generated: none because eager raises (the compiled program must raise
too); only those where eager's own result is nondeterministic, the order of the writes
deciding it: a non-accumulating indexed write (``index_put_``/``index_copy_``/``scatter_``
without accumulate, ``__setitem__`` with a tensor) never meets duplicate indices (such ops
take duplicate-free indices, also when computed from the target: a stable argsort); the
in-place ops that eager lets write into an expanded target with only a deprecation warning
(``WARN_ONLY_ON_EXPANDED``) are not crossed with the expanded targets; and internally
overlapping targets that eager does not detect (``as_strided`` rows sharing memory) are not
targets.  Also not generated, as meaningless: a source for an op that takes none, an index
computed from the target for an op without index, and a mutation after an in-place op
(a second in-place op, covered by the in-place rows).

Tiers: by default (FAST) a deterministic subset (``_fast_programs``, ``_saved_cases``,
``_wrapped_cases``): the literal reproducers, every op, target, source kind, (grad,
dynamic) mode, saved-for-backward mutation site and wrapper.  With
``PYTORCH_TEST_WITH_SLOW=1`` (FULL): every applicable (op, target, source) triple, each in
one of the four (grad, dynamic) modes, rotating per op (``_all_programs``: all four for
every triple would quadruple the tier past its budget), and every saved-for-backward and
wrapper case in both dynamic values (about 26 minutes per side on 2 cores, cpu and
openreg).  Full-only cases are not registered in the fast tier.
Devices: cpu, cuda, and the PrivateUse1 device when its inductor backend is registered.

Run (fresh inductor cache per run, never shared between two torch builds)::

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python -m pytest test/differential/test_mutation_aliasing.py
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, Optional

import torch
import torch._dynamo
import torch.nn.functional as F
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import (
    TEST_WITH_SLOW,
    TestCase,
    parametrize,
    run_tests,
)
from torch.utils._pytree import tree_flatten

FULL: bool = bool(TEST_WITH_SLOW)

ROWS, COLS = 4, 8  # every target is (ROWS, COLS), or a (ROWS - 1, COLS) slice of one
FILL = 2.5

# How a case can disagree with eager (a failure's kind).
VALUES = "values"  # an output or a mutated input differs
ALIASING = "aliasing"  # a pair shares a storage on one side only
GRAD = "grad"  # a gradient differs
RAISES = "raises"  # compiled raised where eager did not (or another exception type)
NO_RAISE = "no-raise"  # eager raised, compiled did not
NO_RAISE_OVERLAP = "no-raise-overlap"  # ... eager's memory-overlap check ("... memory location")
# The compiled forward raised autograd's saved-tensor version check, which eager raises at
# backward only: AOTAutograd traces the backward while compiling the forward.
RAISES_VERSION_CHECK_EARLY = "raises-version-check-early"
VERSION_CHECK = "modified by an inplace operation"

# (case-name pattern (re.search, the name without its device suffix), failure kinds, the
# upstream issue reporting that failure on stock torch).  First match wins.  A case that
# fails in a kind its pattern does not list is not attributed.
UPSTREAM_ISSUES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    (r"^saved__", (NO_RAISE,), 197887),
    # Eager's backward checks the version of a saved source the compiled backward never reads.
    (r"__input_zeroed_after__self__grad__", (NO_RAISE,), 197887),
    (r"^index_select_stack__vmap_grad_and_value__", (VALUES, GRAD), 188084),
    (r"^index_(add|copy|fill|put)__expanded_(inside|input)__", (VALUES, RAISES), 183986),
    (r"__input_zeroed_after__", (VALUES,), 198094),
    (r"_scatter__input_copied_back__", (ALIASING,), 195451),
    (r"", (RAISES_VERSION_CHECK_EARLY,), 158561),
    # Compiled backward raises the version check where eager's backward runs: the runtime
    # epilogue's write into a mutated input (or view of one) bumps a version the saved tensors see.
    (r"__input_copied_back__.*__grad__", (RAISES,), 185497),
    (r"^mul___view_of_input__.*__grad__", (RAISES,), 185497),
    (r"^index_(put|copy)__intermediate__self__", (VALUES,), 156786),
    # Compiled code refuses a write into a tensor with internal overlap that eager performs (a
    # copy onto the same elements of an expanded tensor, a row written through an expanded
    # input): functionalization's overlap check at trace time, or the runtime epilogue's copy_
    # into the expanded input.
    (r"^(copy_|narrow_copy_|setitem_int|setitem_slice)__expanded_(inside|input)__", (RAISES,), 165409),
    # functorch's C++ batching and grad rules read concrete sizes: vmap/grad under
    # torch.compile(dynamic=True) fails in fake-tensor propagation.
    (r"__(vmap|grad|vmap_grad_and_value)__dynamic$", (RAISES,), 181384),
    # Eager's memory-overlap checks (an operand overlapping the target, a written-to tensor
    # with internal overlap) are not made by compiled code on stock torch. The overlay makes
    # them while tracing (0021, and 0027 for `t.add_(s, alpha=a)`, `t.addcdiv_(s, u, value=v)` and
    # `t.addcmul_(s, u, value=v)`, which Dynamo rewrites as an add_ of a fresh product); what
    # still runs compiled is tagged here.
    (r"", (NO_RAISE_OVERLAP,), 126474),
)


def upstream_issue(case: str, kind: str) -> Optional[int]:
    return next((n for pattern, kinds, n in UPSTREAM_ISSUES if kind in kinds and re.search(pattern, case)), None)


class Mismatch(AssertionError):
    """A disagreement with eager, and its kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Checker(TestCase):
    """The comparisons every case makes; failures name their upstream issue when known."""

    def _tagged(self, case: str, check: Callable[[], None]) -> None:
        try:
            check()
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

    def _same_exception(self, where: str, step: str, expected: BaseException,
                        run: Callable[[], Any]) -> None:
        try:
            run()
        except Exception as e:
            if not isinstance(e, type(expected)):
                raise Mismatch(RAISES, f"{where} {step}: eager raised {type(expected).__name__}, "
                                       f"compiled raised {type(e).__name__}: {e}") from e
            return
        text = str(expected).splitlines()[0] if str(expected) else ""
        kind = NO_RAISE_OVERLAP if "memory location" in text else NO_RAISE
        raise Mismatch(kind, f"{where} {step}: eager raised {type(expected).__name__}: {text}; "
                             "compiled did not raise")

    def _compiled_raised(self, where: str, step: str, e: Exception) -> Mismatch:
        kind = RAISES_VERSION_CHECK_EARLY if step == "forward" and VERSION_CHECK in str(e) else RAISES
        return Mismatch(kind, f"{where} compiled {step} raised {type(e).__name__}: {e}")

    def _compare_state(self, where: str, exp_outs: list[torch.Tensor], act_outs: list[torch.Tensor],
                       exp_ins: list[torch.Tensor], act_ins: list[torch.Tensor]) -> None:
        def values() -> None:
            self.assertEqual(len(act_outs), len(exp_outs), msg=f"{where} number of outputs")
            for k, (a, e) in enumerate(zip(act_outs, exp_outs)):
                self.assertEqual(a, e, msg=f"{where} output {k}")
            for k, (a, e) in enumerate(zip(act_ins, exp_ins)):
                self.assertEqual(a, e, msg=f"{where} input {k} after the call")

        self._expect(VALUES, values)
        self._expect(ALIASING, lambda: self.assertEqual(
            _aliasing(act_outs, act_ins), _aliasing(exp_outs, exp_ins),
            msg=f"{where} aliasing (pairs sharing a storage)"))


def _storage(t: torch.Tensor) -> Optional[int]:
    return t.untyped_storage().data_ptr() if t.numel() else None


def _aliasing(outs: Sequence[torch.Tensor], ins: Sequence[torch.Tensor]) -> list[str]:
    """Every (output, input) and (output, output) pair that shares a storage."""
    pairs = [(f"out{i}", o, f"in{j}", x) for i, o in enumerate(outs) for j, x in enumerate(ins)]
    pairs += [(f"out{i}", outs[i], f"out{j}", outs[j]) for i in range(len(outs)) for j in range(i + 1, len(outs))]
    return [f"{na}~{nb}" for na, a, nb, b in pairs if _storage(a) is not None and _storage(a) == _storage(b)]


def _tensors(out: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def _seed(name: str) -> int:
    # Stable across processes (unlike hash()): the same data on both sides.
    return zlib.crc32(name.encode())


def _loss(tensors: Sequence[torch.Tensor], gen: torch.Generator) -> Optional[torch.Tensor]:
    """A seeded weighted sum of every tensor that requires grad (a dense gradient)."""
    terms = [(t * torch.randn(t.shape, generator=gen).to(t.device, t.dtype)).sum()
             for t in tensors if t.requires_grad]
    return torch.stack(terms).sum() if terms else None


def inductor_supports(device_type: str) -> bool:
    """Whether inductor has a backend for this device type (a PrivateUse1 device only if it
    registered one); without one the case is skipped with that reason."""
    from torch._inductor.codegen.common import get_scheduling_for_device, init_backend_registration

    init_backend_registration()
    return get_scheduling_for_device(device_type) is not None


# --------------------------------------------------------------------------- #
# Ops: op(t, src, idx) writes into (or scatters onto) the target t
# --------------------------------------------------------------------------- #

# Index kinds: "unique" (duplicate-free rows), "dups" (accumulating ops: duplicates on
# purpose), "mask" (a bool row mask), None (the op takes no index).
UNIQUE, DUPS, MASK = "unique", "dups", "mask"


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable[[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]], torch.Tensor]
    index: Optional[str]
    takes_src: bool
    inplace: bool
    # The independent source's rows: 2 for indexed writes, 1 (broadcast) for elementwise ops.
    src_rows: int = 2


def _scatter_index(i: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    return i[:, None].expand(-1, src.shape[1])


def _narrow_rows(src: torch.Tensor) -> int:
    return min(src.shape[0], 2)


def _setitem_int(t, s, i):
    t[1] = s[0]
    return t


def _setitem_slice(t, s, i):
    t[1:3] = s[:2]
    return t


def _setitem_tensor(t, s, i):
    t[i] = s
    return t


def _setitem_bool(t, s, i):
    t[i] = FILL
    return t


def _narrow_copy(t, s, i):
    rows = _narrow_rows(s)
    t.narrow(0, 1, rows).copy_(s[:rows])
    return t


OPS: tuple[Op, ...] = (
    Op("index_put_acc_", lambda t, s, i: t.index_put_((i,), s, accumulate=True), DUPS, True, True),
    Op("index_put_", lambda t, s, i: t.index_put_((i,), s), UNIQUE, True, True),
    Op("index_add_", lambda t, s, i: t.index_add_(0, i, s), DUPS, True, True),
    Op("index_copy_", lambda t, s, i: t.index_copy_(0, i, s), UNIQUE, True, True),
    Op("index_fill_", lambda t, s, i: t.index_fill_(0, i, FILL), UNIQUE, False, True),
    Op("scatter_", lambda t, s, i: t.scatter_(0, _scatter_index(i, s), s), UNIQUE, True, True),
    Op("scatter_add_", lambda t, s, i: t.scatter_add_(0, _scatter_index(i, s), s), DUPS, True, True),
    Op("masked_fill_", lambda t, s, i: t.masked_fill_(i[:, None], FILL), MASK, False, True),
    Op("copy_", lambda t, s, i: t.copy_(s), None, True, True, src_rows=1),
    Op("add_", lambda t, s, i: t.add_(s, alpha=0.5), None, True, True, src_rows=1),
    Op("addcdiv_", lambda t, s, i: t.addcdiv_(s, s.abs() + 1, value=0.5), None, True, True, src_rows=1),
    Op("addcmul_", lambda t, s, i: t.addcmul_(s, s, value=0.5), None, True, True, src_rows=1),
    Op("mul_", lambda t, s, i: t.mul_(s), None, True, True, src_rows=1),
    Op("setitem_int", _setitem_int, None, True, True),
    Op("setitem_slice", _setitem_slice, None, True, True),
    Op("setitem_tensor", _setitem_tensor, UNIQUE, True, True),
    Op("setitem_bool", _setitem_bool, MASK, False, True),
    Op("narrow_copy_", _narrow_copy, None, True, True),
    Op("select_scatter", lambda t, s, i: torch.select_scatter(t, s[0], 0, 1), None, True, False),
    Op("slice_scatter", lambda t, s, i: torch.slice_scatter(t, s[:2], 0, 1, 1 + _narrow_rows(s)),
       None, True, False),
    Op("diagonal_scatter", lambda t, s, i: torch.diagonal_scatter(t, s[0, : t.shape[0]]), None, True, False),
    Op("index_put", lambda t, s, i: torch.index_put(t, (i,), s), UNIQUE, True, False),
    Op("index_put_acc", lambda t, s, i: torch.index_put(t, (i,), s, accumulate=True), DUPS, True, False),
    Op("index_copy", lambda t, s, i: t.index_copy(0, i, s), UNIQUE, True, False),
    Op("index_add", lambda t, s, i: t.index_add(0, i, s), DUPS, True, False),
    Op("index_fill", lambda t, s, i: t.index_fill(0, i, FILL), UNIQUE, False, False),
)


def _fixed_index(kind: str, k: int, rows: int, device: str) -> torch.Tensor:
    """An index given as a graph input: k rows of a target with `rows` rows."""
    if kind == UNIQUE:
        return torch.tensor([rows - 1 - j for j in range(k)], device=device)
    if kind == DUPS:
        return torch.tensor([(j // 2) * 2 % rows for j in range(k)], device=device)
    return torch.tensor([j % 2 == 0 for j in range(rows)], device=device)


def _index_from(kind: str, t: torch.Tensor, k: int) -> torch.Tensor:
    """The same kind of index, computed from the target's values (before the op)."""
    col = t[:, 0]
    if kind == UNIQUE:
        return col[:k].argsort(stable=True)
    if kind == DUPS:
        return (col[:k] > 0).long()
    return col > 0


# --------------------------------------------------------------------------- #
# Targets and sources
# --------------------------------------------------------------------------- #

# How the program gets its target t from the graph input x ((ROWS, COLS), or (1, COLS)
# for expanded_input), and what it returns besides the op's result.
TARGETS: tuple[str, ...] = (
    "input",  # t = x
    "intermediate",  # t = x * 1.5
    "expanded_inside",  # t = zeros(1, COLS).expand(ROWS, -1), created in the program
    "expanded_input",  # x = zeros(1, COLS).expand(ROWS, -1) made by the caller, t = x
    "overlap_slice",  # base = x * 1.5; t = base[1:]; base returned too
    "view_of_input",  # t = x[1:] (the caller sees the write through x)
    "returned",  # t = x * 1.5, returned next to the op's result
    "input_zeroed_after",  # t = x; after the op, x.zero_() (functional ops only)
    "input_copied_back",  # t = x; after the op, x.copy_(result) (functional ops only)
)
POST_MUTATION = ("input_zeroed_after", "input_copied_back")

# none: an independent source input; self: the source is t; view: t[1:2]; index_from_self:
# an independent source, the index computed from t.
SOURCES: tuple[str, ...] = ("none", "self", "view", "index_from_self")


def _index_rows(src: Optional[torch.Tensor]) -> int:
    """How many rows an index selects: the source's, or 2 for an op without source (a fill)."""
    return 2 if src is None else src.shape[0]


def _target_rows(target: str) -> int:
    return ROWS - 1 if target in ("overlap_slice", "view_of_input") else ROWS


@dataclass(frozen=True)
class Program:
    op: Op
    target: str
    source: str
    grad: bool
    dynamic: bool

    @property
    def name(self) -> str:
        return "__".join([self.op.name, self.target, self.source,
                          "grad" if self.grad else "nograd", "dynamic" if self.dynamic else "static"])

    @property
    def src_rows(self) -> int:
        return self.op.src_rows if self.source in ("none", "index_from_self") else 0

    def body(self, x: torch.Tensor, src: Optional[torch.Tensor], idx: Optional[torch.Tensor]) -> Any:
        op, target = self.op, self.target
        base = None
        if target in ("input", "expanded_input", *POST_MUTATION):
            t = x
        elif target in ("intermediate", "returned"):
            t = x * 1.5
        elif target == "expanded_inside":
            t = torch.zeros(1, COLS, device=x.device, dtype=x.dtype).expand(ROWS, -1)
        elif target == "overlap_slice":
            base = x * 1.5
            t = base[1:]
        else:  # view_of_input
            t = x[1:]
        if self.source == "self":
            src = t
        elif self.source == "view":
            src = t[1:2]
        if self.source == "index_from_self":
            idx = _index_from(op.index, t, _index_rows(src))
        elif op.index is not None and idx is None:
            idx = _fixed_index(op.index, _index_rows(src), t.shape[0], t.device)
        out = op.fn(t, src, idx)
        if target == "input_zeroed_after":
            x.zero_()
        elif target == "input_copied_back":
            x.copy_(out)
        if target == "returned":
            return out, t
        if target == "overlap_slice":
            return out, base
        return out


# In-place ops that eager lets write into an expanded (stride-0) tensor with only a
# deprecation warning: which write lands last decides the value, so eager's result is
# nondeterministic and these combinations are not generated.
WARN_ONLY_ON_EXPANDED = frozenset({"index_put_acc_", "index_put_", "index_fill_", "masked_fill_",
                                   "setitem_tensor", "setitem_bool"})


# Device types whose eager in-place kernels reject a source that partially overlaps the
# target ("unsupported operation: ... memory location"); elsewhere such a case has no
# deterministic eager result.
CHECKED_OVERLAP = frozenset({"cpu", "cuda"})


def _rejected_on_cpu(p: "Program", data: dict[str, torch.Tensor]) -> bool:
    """Whether eager on cpu rejects the program for a memory overlap."""
    try:
        p.body(*_inputs(p, data, "cpu").args)
    except RuntimeError as e:
        return "memory location" in str(e)
    return False


def _applies(op: Op, target: str, source: str) -> bool:
    if target.startswith("expanded_") and op.name in WARN_ONLY_ON_EXPANDED:
        return False
    if target in POST_MUTATION and op.inplace:
        return False  # a later mutation of an in-place op's target is just a second in-place op
    if source in ("self", "view") and not op.takes_src:
        return False
    if source == "index_from_self" and op.index is None:
        return False
    if source == "none" and op.index is None and not op.takes_src:
        return False
    return True


MODES: tuple[tuple[bool, bool], ...] = ((False, False), (True, True), (False, True), (True, False))  # (grad, dynamic)


def _triples() -> list[tuple[Op, str, str]]:
    return [(op, t, s) for op, t, s in product(OPS, TARGETS, SOURCES) if _applies(op, t, s)]


def _all_programs() -> list[Program]:
    """The full tier: every applicable (op, target, source) triple, each in one (grad,
    dynamic) mode: an op's k-th triple gets ``MODES[k % 4]``, so every op meets every mode
    and the modes rotate through the targets and sources.  Crossing all four modes with every
    triple would quadruple the tier past its time budget."""
    programs, seen = [], dict.fromkeys(OPS, 0)
    for op, t, s in _triples():
        grad, dynamic = MODES[seen[op] % len(MODES)]
        seen[op] += 1
        programs.append(Program(op, t, s, grad, dynamic))
    return programs


# The literal upstream reproducers, in the fast tier too (their issues: UPSTREAM_ISSUES).
FAST_REPROS: tuple[str, ...] = (
    "index_add__expanded_inside__none__nograd__static",  # #183986
    "slice_scatter__input_zeroed_after__none__nograd__static",  # #198094
    "slice_scatter__input_copied_back__none__nograd__static",  # #195451
    "index_put__intermediate__self__nograd__static",  # #156786
    "index_copy__intermediate__self__nograd__static",  # #156786
)


def _fast_programs() -> list[Program]:
    """The fast tier: the upstream reproducers; then, for each op without one, the op's
    applicable (target, source) pairs in table order, of which its k-th (in ``OPS``) takes
    the pair at position k * 5 (mod their number), in mode ``MODES[k % 4]``; then every
    target and source no chosen program reached, once, with the first op it applies to."""
    by_name = {p.name: p for op, t, s in _triples() for g, d in MODES for p in [Program(op, t, s, g, d)]}
    chosen = [by_name[name] for name in FAST_REPROS]
    for k, op in enumerate(OPS):
        if any(p.op == op for p in chosen):
            continue
        pairs = [(t, s) for t, s in product(TARGETS, SOURCES) if _applies(op, t, s)]
        chosen.append(Program(op, *pairs[(k * 5) % len(pairs)], *MODES[k % len(MODES)]))
    for axis, values in (("target", TARGETS), ("source", SOURCES)):
        for value in values:
            if any(getattr(p, axis) == value for p in chosen):
                continue
            pair = (value, "none") if axis == "target" else ("input", value)
            op = next(op for op in OPS if _applies(op, *pair))
            chosen.append(Program(op, *pair, grad=True, dynamic=True))
    return chosen

def _full_programs() -> list[Program]:
    """The full tier holds the fast tier: the rotation, then the fast programs it missed."""
    programs = _all_programs()
    names = {p.name for p in programs}
    return programs + [p for p in _fast_programs() if p.name not in names]


PROGRAMS: list[Program] = _full_programs() if FULL else _fast_programs()


@dataclass
class _Run:
    args: list[Any]
    leaves: list[torch.Tensor]


def _inputs(p: Program, data: dict[str, torch.Tensor], device: str) -> _Run:
    """Fresh inputs (built twice: eager and compiled); with grad, leaves require grad and the
    program gets a clone of the target's leaf (an in-place write into a leaf is an error)."""
    leaves: list[torch.Tensor] = []

    def leaf(t: torch.Tensor) -> torch.Tensor:
        t = t.clone().to(device)
        if p.grad:
            t.requires_grad_(True)
            leaves.append(t)
        return t

    if p.target == "expanded_input":
        x = leaf(torch.zeros(1, COLS)).clone().expand(ROWS, -1)
    else:
        x = leaf(data["x"])
        x = x.clone() if p.grad else x
    src = leaf(data["src"]) if p.src_rows else None
    idx = None
    if p.op.index is not None and p.source == "none":
        idx = _fixed_index(p.op.index, _index_rows(src), _target_rows(p.target), device)
    return _Run([x, src, idx], leaves)


class TestMutationPrograms(Checker):
    def _run_program(self, p: Program, device: str) -> None:
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(_seed(p.name))
        data = {"x": torch.randn(ROWS, COLS, generator=gen),
                "src": torch.randn(max(p.src_rows, 1), COLS, generator=gen)}
        eager_in, comp_in = _inputs(p, data, device), _inputs(p, data, device)
        compiled = torch.compile(p.body, backend="inductor", dynamic=p.dynamic)
        where = f"[{p.name}, {device}]"
        try:
            expected = p.body(*eager_in.args)
        except Exception as e:
            self._same_exception(where, "forward", e, lambda: compiled(*comp_in.args))
            return
        if torch.device(device).type not in CHECKED_OVERLAP and _rejected_on_cpu(p, data):
            self.skipTest(f"eager on {device} does not reject the memory overlap that eager on cpu rejects: "
                          "its result depends on the order of the writes")
        try:
            actual = compiled(*comp_in.args)
        except Exception as e:
            raise self._compiled_raised(where, "forward", e) from e
        exp_outs, act_outs = _tensors(expected), _tensors(actual)
        exp_ins, act_ins = _tensors(eager_in.args), _tensors(comp_in.args)
        self._compare_state(where, exp_outs, act_outs, exp_ins, act_ins)
        if not p.grad:
            return
        # Outputs and the (possibly mutated) float inputs: gradients through the mutation too.
        exp_loss = _loss([*exp_outs, *exp_ins], torch.Generator().manual_seed(1))
        act_loss = _loss([*act_outs, *act_ins], torch.Generator().manual_seed(1))
        if exp_loss is None:
            return
        try:
            exp_loss.backward()
        except Exception as e:
            self._same_exception(where, "backward", e, act_loss.backward)
            return
        try:
            act_loss.backward()
        except Exception as e:
            raise self._compiled_raised(where, "backward", e) from e

        def grads() -> None:
            for k, (a, e) in enumerate(zip(comp_in.leaves, eager_in.leaves)):
                self.assertEqual(a.grad, e.grad, msg=f"{where} grad of leaf {k}")

        self._expect(GRAD, grads)

    @parametrize("p", PROGRAMS, name_fn=lambda p: p.name)
    def test_program(self, device: str, p: Program) -> None:
        if not inductor_supports(torch.device(device).type):
            self.skipTest(f"inductor has no backend for {device}")
        self._tagged(p.name, lambda: self._run_program(p, device))


# --------------------------------------------------------------------------- #
# An input saved for backward, mutated before backward runs (#197887)
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class SavedOp:
    name: str
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    x_shape: tuple[int, ...]
    w_shape: tuple[int, ...]


SAVED_OPS: tuple[SavedOp, ...] = (
    SavedOp("matmul", lambda x, w: x @ w, (2, 3), (3, 3)),
    SavedOp("bmm", torch.bmm, (2, 2, 3), (2, 3, 3)),
    SavedOp("einsum", lambda x, w: torch.einsum("ij,jk->ik", x, w), (2, 3), (3, 3)),
    SavedOp("linear_3d", lambda x, w: F.linear(x, w), (2, 2, 3), (3, 3)),
)
# Where x (which does not require grad; w does) is mutated: in the compiled program after
# the op, or by the caller after the call and before backward.
SAVED_WHEN: tuple[str, ...] = ("inside", "caller")


@dataclass(frozen=True)
class SavedCase:
    op: SavedOp
    when: str
    dynamic: bool

    @property
    def name(self) -> str:
        return f"saved__{self.op.name}__{self.when}__{'dynamic' if self.dynamic else 'static'}"

    def body(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        out = self.op.fn(x, w)
        if self.when == "inside":
            x.add_(1.0)
        return out


def _saved_cases() -> list[SavedCase]:
    cases = [SavedCase(op, when, dyn) for op, when, dyn in product(SAVED_OPS, SAVED_WHEN, (False, True))]
    if FULL:
        return cases
    # fast: the first and the last op, covering both mutation sites and both dynamic values
    return [SavedCase(SAVED_OPS[0], "inside", False), SavedCase(SAVED_OPS[-1], "caller", True)]


class TestSavedForBackward(Checker):
    """Eager raises at backward.  Compiled must raise the same exception type there, or
    earlier: compiling the joint graph may already find the mutated saved input (the
    program is rejected either way); a compiled program that raises nothing is #197887."""

    def _run_case(self, c: SavedCase, device: str) -> None:
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(_seed(c.name))
        x0 = torch.randn(c.op.x_shape, generator=gen)
        w0 = torch.randn(c.op.w_shape, generator=gen)
        compiled = torch.compile(c.body, backend="inductor", dynamic=c.dynamic)
        where = f"[{c.name}, {device}]"

        def run(fn: Callable[..., torch.Tensor]) -> tuple[list[torch.Tensor], Optional[str], Optional[Exception]]:
            x = x0.clone().to(device)
            w = w0.clone().to(device).requires_grad_(True)
            try:
                out = fn(x, w)
            except Exception as e:
                return [x, w], "forward", e
            if c.when == "caller":
                x.mul_(2.0)
            try:
                out.sum().backward()
            except Exception as e:
                return [out, x, w], "backward", e
            return [out, x, w], None, None

        expected, exp_step, exp_err = run(c.body)
        actual, act_step, act_err = run(compiled)
        if exp_err is not None:
            def reraise() -> None:
                if act_err is not None:
                    raise act_err

            self._same_exception(where, exp_step or "", exp_err, reraise)
            if act_step == exp_step:
                self._compare_state(where, expected[:-2], actual[:-2], expected[-2:], actual[-2:])
            return
        if act_err is not None:
            raise self._compiled_raised(where, act_step or "", act_err)
        self._compare_state(where, expected[:1], actual[:1], expected[1:], actual[1:])
        self._expect(GRAD, lambda: self.assertEqual(actual[-1].grad, expected[-1].grad, msg=f"{where} grad of w"))

    @parametrize("c", _saved_cases(), name_fn=lambda c: c.name)
    def test_saved(self, device: str, c: SavedCase) -> None:
        if not inductor_supports(torch.device(device).type):
            self.skipTest(f"inductor has no backend for {device}")
        self._tagged(c.name, lambda: self._run_case(c, device))


# --------------------------------------------------------------------------- #
# torch.func wrappers (#188084)
# --------------------------------------------------------------------------- #


def _index_select_stack(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    idx = torch.tensor([1, 0, 1], device=w.device)
    return torch.stack([w, w * 2, x]).index_select(0, idx).sum()


def _index_put_intermediate(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    y = w * 2
    y = torch.index_put(y, (torch.tensor([0, 2], device=w.device),), x[:2])
    return (y * y).sum()


def _inplace_intermediate(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    y = w * x
    y[1:3] = w[:2] * 3
    y.mul_(x)
    return y.sum()


def _slice_scatter_self(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    y = w + x
    return torch.slice_scatter(y, y[:2] * 2, 0, 1, 3).pow(2).sum()


WRAPPED: tuple[tuple[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]], ...] = (
    ("index_select_stack", _index_select_stack),
    ("index_put_intermediate", _index_put_intermediate),
    ("inplace_intermediate", _inplace_intermediate),
    ("slice_scatter_self", _slice_scatter_self),
)
WRAPPERS: tuple[str, ...] = ("vmap_grad_and_value", "vmap", "grad")
WRAP_ROWS, WRAP_BATCH = 4, 3


def _wrap(kind: str, f: Callable[..., torch.Tensor]) -> Callable[..., Any]:
    if kind == "vmap":
        return torch.func.vmap(f)
    if kind == "grad":
        return torch.func.grad(f)
    return torch.func.vmap(torch.func.grad_and_value(f))


@dataclass(frozen=True)
class WrappedCase:
    program: str
    wrapper: str
    dynamic: bool

    @property
    def name(self) -> str:
        return f"{self.program}__{self.wrapper}__{'dynamic' if self.dynamic else 'static'}"


def _wrapped_cases() -> list[WrappedCase]:
    names = [name for name, _ in WRAPPED]
    cases = [WrappedCase(n, w, d) for n, w, d in product(names, WRAPPERS, (False, True))]
    if FULL:
        return cases
    # fast: each program once, the wrappers and dynamic rotating (the first is #188084's)
    return [WrappedCase(n, WRAPPERS[k % len(WRAPPERS)], k % 2 == 1) for k, n in enumerate(names)]


class TestFunctorchWrappers(Checker):
    def _run_case(self, c: WrappedCase, device: str) -> None:
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(_seed(c.name))
        batched = c.wrapper != "grad"
        shape = (WRAP_BATCH, WRAP_ROWS) if batched else (WRAP_ROWS,)
        w0, x0 = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
        fn = _wrap(c.wrapper, dict(WRAPPED)[c.program])
        compiled = torch.compile(fn, backend="inductor", dynamic=c.dynamic)
        where = f"[{c.name}, {device}]"
        eager_in = [w0.clone().to(device), x0.clone().to(device)]
        comp_in = [w0.clone().to(device), x0.clone().to(device)]
        try:
            expected = fn(*eager_in)
        except Exception as e:
            self._same_exception(where, "forward", e, lambda: compiled(*comp_in))
            return
        try:
            actual = compiled(*comp_in)
        except Exception as e:
            raise self._compiled_raised(where, "call", e) from e
        self._compare_state(where, _tensors(expected), _tensors(actual), eager_in, comp_in)

    @parametrize("c", _wrapped_cases(), name_fn=lambda c: c.name)
    def test_wrapped(self, device: str, c: WrappedCase) -> None:
        if not inductor_supports(torch.device(device).type):
            self.skipTest(f"inductor has no backend for {device}")
        self._tagged(c.name, lambda: self._run_case(c, device))


instantiate_device_type_tests(TestMutationPrograms, globals())
instantiate_device_type_tests(TestSavedForBackward, globals())
instantiate_device_type_tests(TestFunctorchWrappers, globals())

if __name__ == "__main__":
    run_tests()
