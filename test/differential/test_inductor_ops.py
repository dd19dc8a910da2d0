# Owner(s): ["module: inductor"]
"""Differential corpus: ``torch.compile(backend="inductor")`` against eager on the ops
that the overlay's patches reach.

The same file runs on stock torch 2.9.1 and on the overlay; every test is then
classified by comparing the two outcomes (agree-pass, agree-fail, fixed,
regressed).  Eager is the oracle: every compiled result (forward outputs, inputs
the program mutates, and the gradients of every input that requires grad) must
equal eager's under torch's default per-dtype tolerances.

Two generators produce the cases; none is picked by hand:

* ``TestInductorPrograms``: a table of small programs (``FAMILIES``), one per op
  family and call form (functional, method, in-place method, operator,
  ``__setitem__``), crossed with a table of variants (``Variant``):

  - ``overlap``: one operand is an expanded (stride-0) view, and the backward is
    seeded by ``out.sum()`` so that the gradient flowing into the op is itself
    expanded (the layout the scatter meta kernels used to preserve);
  - ``dynamic``: ``torch.compile(dynamic=False)`` or ``dynamic=True``;
  - ``index``: for ops that take an int index, a Python int or an unbacked
    SymInt (a 0-d int tensor read with ``.item()`` inside the compiled function,
    ``capture_scalar_outputs=True``, ``fullgraph=True``);
  - ``scalar``: the scalar operand is a Python float or a 0-d tensor.

  Every program takes a scalar ``s`` and is called with three distinct values
  of it (and, for index ops, changing indices), each call compared with eager:
  a float baked into a compiled graph as a stale constant shows up as a
  mismatch on the second or third call.

* ``TestInductorOpInfo``: the ``op_db`` entries of the same ops, the first
  samples of ``sample_inputs``, forward and backward, static and dynamic.

Tiers: by default (FAST, ~30 tests) a deterministic subset in float32 that
still covers every op family and every variant value (see ``_fast_variants``
and ``OPINFO_FAST``); with ``PYTORCH_TEST_WITH_SLOW=1`` (FULL) every program
in the whole variant cross product in float32, every program's dynamic=True
overlap variants in float16 and bfloat16, and every listed OpInfo entry (two
samples; float32 static and dynamic, float16/bfloat16 dynamic).  Full-only
cases are not registered in the fast tier (no skips).

Run (fresh inductor cache per run, never shared between two torch builds)::

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python -m pytest test/differential/test_inductor_ops.py
    PYTORCH_TEST_WITH_SLOW=1 TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python -m pytest ...
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable, Optional, Sequence

import torch
import torch._dynamo
import torch.nn.functional as F
from torch.testing._internal.common_device_type import (
    OpDTypes,
    dtypes,
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import (
    TEST_WITH_SLOW,
    TestCase,
    parametrize,
    run_tests,
)
from torch.utils._pytree import tree_flatten, tree_map


FULL: bool = bool(TEST_WITH_SLOW)

# Three distinct values for every float argument; none is 0 or 1 (Dynamo treats
# those specially) and all keep clamp bounds ordered (-s < s) and eps positive.
FLOAT_VALUES: tuple[float, ...] = (0.3, 0.75, 1.5)



# --------------------------------------------------------------------------- #
# Operands
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Operand:
    """A tensor operand of a program.

    kind: "float" (randn), "positive" (uniform in [0.5, 1.5), e.g. a running
    variance), "index_unique" (int64 indices in [0, high), no duplicates along
    the last dim, so scatter/index_put/index_copy are deterministic) or
    "index_any" (int64 in [0, high), duplicates allowed: accumulating ops).
    """

    kind: str
    shape: tuple[int, ...]
    grad: bool = True
    high: int = 0


def _f(*shape: int, grad: bool = True) -> Operand:
    return Operand("float", shape, grad)


def _make_operand(op: Operand, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    # Generated on the CPU with an explicit generator, then moved: identical
    # data on every device and on both sides of the comparison.
    if op.kind == "float":
        return torch.randn(op.shape, generator=gen).to(dtype)
    if op.kind == "positive":
        return (torch.rand(op.shape, generator=gen) + 0.5).to(dtype)
    if op.kind == "index_any":
        return torch.randint(0, op.high, op.shape, generator=gen)
    if op.kind == "index_unique":
        if len(op.shape) == 1:
            return torch.randperm(op.high, generator=gen)[: op.shape[0]]
        rows = torch.rand((*op.shape[:-1], op.high), generator=gen)
        return rows.argsort(dim=-1)[..., : op.shape[-1]].contiguous()
    raise ValueError(f"unknown operand kind {op.kind!r}")


# --------------------------------------------------------------------------- #
# Program families
# --------------------------------------------------------------------------- #

# A program body is ``body(i, s, *tensors)``: ``i`` is the int index (None for
# families without one), ``s`` the scalar (Python float or 0-d tensor).
Body = Callable[..., Any]

PY = "pyfloat"
T0 = "tensor0d"


@dataclass(frozen=True)
class Family:
    name: str
    body: Body
    operands: tuple[Operand, ...]
    # Index values used by the three calls (cycled); None: the op takes no index.
    indices: Optional[tuple[int, ...]] = None
    scalar_kinds: tuple[str, ...] = (PY,)
    # Which operand is replaced by an expanded view in the "overlap" variant.
    overlap_arg: int = 0
    # Whether a 0-d tensor scalar requires grad (eager itself cannot
    # differentiate _foreach_mul w.r.t. a 0-d tensor scalar).
    scalar_grad: bool = True
    # Part of the fast tier's representative subset (at least one program per
    # op family: scatter, indexing, add/sub/mul/div, clamp, norm).
    fast: bool = False


# ---- index ops: select / slice / narrow / __setitem__ / *_scatter with an int index


def select_scatter(i, s, x, src):
    return torch.select_scatter(x, src * s, 0, i)


def slice_scatter(i, s, x, src):
    return torch.slice_scatter(x, src * s, dim=1, start=i, end=i + 2)


def select(i, s, x):
    return x.select(1, i) * s


def narrow(i, s, x):
    return torch.narrow(x, 1, i, 2) * s


def getitem_slice(i, s, x):
    return x[:, i : i + 2] * s


def setitem(i, s, x, v):
    z = x.clone()
    z[i] = v * s
    return z


def setitem_iadd(i, s, x, v):
    z = x.clone()
    z[i] += v * s
    return z


def select_copy_(i, s, x, v):
    z = x.clone()
    z.select(0, i).copy_(v * s)
    return z


def select_add_(i, s, x, v):
    z = x.clone()
    z.select(1, i).add_(v, alpha=s)
    return z


def input_setitem_iadd(i, s, x, v):
    # Mutates a graph input; the caller must see the mutation.
    x[i] += v * s


# ---- scatter / index ops with tensor indices


def diagonal_scatter(i, s, x, src):
    return torch.diagonal_scatter(x, src * s, offset=1)


def scatter(i, s, x, idx, src):
    return x.scatter(1, idx, src * s)


def scatter_add(i, s, x, idx, src):
    return torch.scatter_add(x, 1, idx, src * s)


def index_put(i, s, x, idx, v):
    return torch.index_put(x, (idx,), v * s)


def index_put_accumulate(i, s, x, idx, v):
    return x.index_put((idx,), v * s, accumulate=True)


def index_put_inplace(i, s, x, idx, v):
    z = x.clone()
    z.index_put_((idx,), v * s, accumulate=True)
    return z


def index_copy(i, s, x, idx, src):
    return x.index_copy(0, idx, src * s)


# ---- add / sub / mul / div
#
# One function per program, even where two differ only in the op (`duplicates`
# lists the mul_* and div_* programs as a same-shape pair): the body is what
# dynamo traces, so its exact call form (functional, method, in-place method,
# operator) is the case under test, and each Family names its function.


def add_alpha(i, s, x, y):
    return torch.add(x, y, alpha=s)


def add_scalar(i, s, x):
    return torch.add(x, s)


def add_method_inplace(i, s, x, y):
    z = x * 1.0
    z.add_(y, alpha=s)
    return z


def iadd_operator(i, s, x):
    z = x.clone()
    z += s
    return z


def sub_alpha(i, s, x, y):
    return torch.sub(x, y, alpha=s)


def sub_method_inplace(i, s, x):
    z = x.clone()
    z.sub_(s)
    return z


def rsub_operator(i, s, x):
    return s - x


def mul_scalar(i, s, x):
    return torch.mul(x, s)


def mul_method_inplace(i, s, x):
    z = x.clone()
    z.mul_(s)
    return z


def mul_composite(i, s, x):
    # A composite expression of the float (a SymFloat expression, not a symbol).
    return x.mul(s * s + 0.5 * s)


def div_scalar(i, s, x):
    return torch.div(x, s)


def div_method_inplace(i, s, x):
    z = x.clone()
    z.div_(s)
    return z


def div_trunc(i, s, x):
    return torch.div(x * 4, s, rounding_mode="trunc")


def div_floor_method_inplace(i, s, x):
    z = x * 4
    z.div_(s, rounding_mode="floor")
    return z


def foreach_add_alpha(i, s, x, y):
    return torch._foreach_add([x, y], [y, x], alpha=s)


def foreach_mul_scalar(i, s, x, y):
    return torch._foreach_mul([x, y], s)


# ---- clamp family: most mix a tensorifiable use of s with a bound use


def clamp(i, s, x):
    return torch.clamp(x * s, min=-s, max=s)


def clip(i, s, x):
    return torch.clip(x + s, max=s)


def clamp_min(i, s, x):
    return torch.clamp_min(x * s, s * 0.5)


def clamp_max(i, s, x):
    return x.clamp_max(s)


def clamp_method_inplace(i, s, x):
    z = x.clone()
    z.mul_(s)
    z.clamp_(min=-s, max=s)
    return z


def hardtanh(i, s, x):
    return F.hardtanh(x / s, max_val=s)


# ---- norms: eps (and momentum) are floats that cannot be tensorified


def layer_norm(i, s, x, w, b):
    return F.layer_norm(x * s, (6,), w, b, eps=s)


def group_norm(i, s, x, w, b):
    return F.group_norm(x, 3, w, b, eps=s)


def rms_norm(i, s, x, w):
    return F.rms_norm(x, (6,), w, eps=s)


def batch_norm_train(i, s, x, rm, rv, w, b):
    # Updates the running stats (graph inputs) with a float momentum.
    return F.batch_norm(x, rm, rv, w, b, training=True, momentum=s / 2, eps=s)


def batch_norm_eval(i, s, x, rm, rv, w, b):
    return F.batch_norm(x, rm, rv, w, b, training=False, eps=s)


SEL_IDX = (2, -1, 3)  # select on a dim of size >= 4, a negative index included
SLICE_IDX = (1, 3, 4)  # start of a width-2 slice of a dim of size 6
BOTH = (PY, T0)

FAMILIES: tuple[Family, ...] = (
    Family("select_scatter", select_scatter, (_f(4, 6), _f(6)), SEL_IDX, fast=True),
    Family("slice_scatter", slice_scatter, (_f(4, 6), _f(4, 2)), SLICE_IDX, fast=True),
    Family("select", select, (_f(4, 6),), SEL_IDX),
    Family("narrow", narrow, (_f(4, 6),), SLICE_IDX, fast=True),
    Family("getitem_slice", getitem_slice, (_f(4, 6),), SLICE_IDX),
    Family("setitem", setitem, (_f(4, 6), _f(6)), SEL_IDX),
    Family("setitem_iadd", setitem_iadd, (_f(4, 6), _f(6)), SEL_IDX, fast=True),
    Family("select_copy_", select_copy_, (_f(4, 6), _f(6)), SEL_IDX, fast=True),
    Family("select_add_", select_add_, (_f(4, 6), _f(4)), SEL_IDX),
    Family(
        "input_setitem_iadd",
        input_setitem_iadd,
        (_f(4, 6, grad=False), _f(6, grad=False)),
        SEL_IDX,
        overlap_arg=1,  # the mutated input itself cannot overlap (eager refuses)
    ),
    Family("diagonal_scatter", diagonal_scatter, (_f(4, 6), _f(4)), fast=True),
    Family(
        "scatter",
        scatter,
        (_f(4, 6), Operand("index_unique", (4, 3), False, 6), _f(4, 3)),
    ),
    Family(
        "scatter_add",
        scatter_add,
        (_f(4, 6), Operand("index_any", (4, 3), False, 6), _f(4, 3)),
        fast=True,
    ),
    Family(
        "index_put", index_put, (_f(4, 6), Operand("index_unique", (3,), False, 4), _f(3, 6))
    ),
    Family(
        "index_put_accumulate",
        index_put_accumulate,
        (_f(4, 6), Operand("index_any", (5,), False, 4), _f(5, 6)),
        fast=True,
    ),
    Family(
        "index_put_inplace",
        index_put_inplace,
        (_f(4, 6), Operand("index_any", (5,), False, 4), _f(5, 6)),
    ),
    Family(
        "index_copy", index_copy, (_f(4, 6), Operand("index_unique", (3,), False, 4), _f(3, 6))
    ),
    Family("add_alpha", add_alpha, (_f(4, 6), _f(4, 6)), fast=True),
    Family("add_scalar", add_scalar, (_f(4, 6),), scalar_kinds=BOTH),
    Family("add_method_inplace", add_method_inplace, (_f(4, 6), _f(4, 6))),
    Family("iadd_operator", iadd_operator, (_f(4, 6),), scalar_kinds=BOTH),
    Family("sub_alpha", sub_alpha, (_f(4, 6), _f(4, 6))),
    Family("sub_method_inplace", sub_method_inplace, (_f(4, 6),), scalar_kinds=BOTH, fast=True),
    Family("rsub_operator", rsub_operator, (_f(4, 6),), scalar_kinds=BOTH),
    Family("mul_scalar", mul_scalar, (_f(4, 6),), scalar_kinds=BOTH),
    Family("mul_method_inplace", mul_method_inplace, (_f(4, 6),), scalar_kinds=BOTH),
    Family("mul_composite", mul_composite, (_f(4, 6),), scalar_kinds=BOTH),
    Family("div_scalar", div_scalar, (_f(4, 6),), scalar_kinds=BOTH),
    Family("div_method_inplace", div_method_inplace, (_f(4, 6),), scalar_kinds=BOTH),
    Family("div_trunc", div_trunc, (_f(4, 6),), scalar_kinds=BOTH),
    Family(
        "div_floor_method_inplace",
        div_floor_method_inplace,
        (_f(4, 6),),
        scalar_kinds=BOTH,
        fast=True,
    ),
    Family("foreach_add_alpha", foreach_add_alpha, (_f(4, 6), _f(4, 6)), fast=True),
    Family(
        "foreach_mul_scalar",
        foreach_mul_scalar,
        (_f(4, 6), _f(4, 6)),
        scalar_kinds=BOTH,
        scalar_grad=False,
    ),
    Family("clamp", clamp, (_f(4, 6),), scalar_kinds=BOTH, fast=True),
    Family("clip", clip, (_f(4, 6),), scalar_kinds=BOTH),
    Family("clamp_min", clamp_min, (_f(4, 6),), scalar_kinds=BOTH),
    Family("clamp_max", clamp_max, (_f(4, 6),), scalar_kinds=BOTH),
    Family("clamp_method_inplace", clamp_method_inplace, (_f(4, 6),), scalar_kinds=BOTH),
    Family("hardtanh", hardtanh, (_f(4, 6),), fast=True),
    Family("layer_norm", layer_norm, (_f(4, 6), _f(6), _f(6)), fast=True),
    Family("group_norm", group_norm, (_f(4, 6, 5), _f(6), _f(6))),
    Family("rms_norm", rms_norm, (_f(4, 6), _f(6))),
    Family(
        "batch_norm_train",
        batch_norm_train,
        (_f(4, 6, 5), _f(6, grad=False), Operand("positive", (6,), False), _f(6), _f(6)),
        fast=True,
    ),
    Family(
        "batch_norm_eval",
        batch_norm_eval,
        (_f(4, 6, 5), _f(6, grad=False), Operand("positive", (6,), False), _f(6), _f(6)),
    ),
)


# --------------------------------------------------------------------------- #
# Variants and the two tiers
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Variant:
    family: Family
    overlap: bool
    dynamic: bool
    index: Optional[str]  # "static" | "unbacked" | None (no index)
    scalar: str  # PY | T0

    @property
    def name(self) -> str:
        parts = [
            self.family.name,
            "overlap" if self.overlap else "dense",
            "dynamic" if self.dynamic else "static",
        ]
        if self.index is not None:
            parts.append(f"idx_{self.index}")
        parts.append(self.scalar)
        return "__".join(parts)


def _variants(family: Family) -> list[Variant]:
    index_modes: Sequence[Optional[str]] = (
        ("static", "unbacked") if family.indices is not None else (None,)
    )
    return [
        Variant(family, overlap, dynamic, index, scalar)
        for overlap, dynamic, index, scalar in product(
            (False, True), (False, True), index_modes, family.scalar_kinds
        )
    ]


def _fast_variants(family: Family, k: int) -> list[Variant]:
    """The fast tier's variants of the k-th fast program (a fixed rule, not a choice of cases).

    Baseline: dynamic=True, static index, Python float (one compile serves the
    three float values, so a stale constant would be visible).  Every fast
    program runs the baseline with ``overlap``; index programs also run it
    dense with an unbacked index; every third fast program also runs the
    opposite corner (dense, dynamic=False, its last scalar kind) so that
    dynamic=False and 0-d tensor scalars are covered too.
    """
    has_index = family.indices is not None
    idx = "static" if has_index else None
    chosen = [Variant(family, True, True, idx, PY)]
    if has_index:
        chosen.append(Variant(family, False, True, "unbacked", PY))
    if k % 3 == 0:
        chosen.append(Variant(family, False, False, idx, family.scalar_kinds[-1]))
    return chosen


def _float32_variants() -> list[Variant]:
    if FULL:
        return [v for fam in FAMILIES for v in _variants(fam)]
    fast = [fam for fam in FAMILIES if fam.fast]
    return [v for k, fam in enumerate(fast) for v in _fast_variants(fam, k)]


def _reduced_precision_variants() -> list[Variant]:
    """Full tier only: float16/bfloat16 with dynamic=True and an overlapping operand.

    The rest of the cross product is float32 only, to fit the full tier's
    budget: dynamic=False compiles once per float value and exercises the same
    meta/lowering paths as float32, and the dense layout is covered there too.
    """
    if not FULL:
        return []
    return [v for fam in FAMILIES for v in _variants(fam) if v.dynamic and v.overlap]


VARIANTS_F32: list[Variant] = _float32_variants()
VARIANTS_REDUCED: list[Variant] = _reduced_precision_variants()


# --------------------------------------------------------------------------- #
# Running one program variant
# --------------------------------------------------------------------------- #


def _build_fn(body: Body, index: Optional[str]) -> Callable[..., Any]:
    """A fresh function object with the calling convention of the variant."""
    if index == "unbacked":

        def fn(n, s, *ts):
            return body(n.item(), s, *ts)

    elif index == "static":

        def fn(i, s, *ts):
            return body(i, s, *ts)

    else:

        def fn(s, *ts):
            return body(None, s, *ts)

    return fn


def _seed(name: str) -> int:
    # Stable across processes (unlike hash()): the same data on both sides.
    return zlib.crc32(name.encode())


@dataclass
class _Inputs:
    leaves: list[torch.Tensor]  # what gradients are compared on
    args: list[Any]  # what the program receives


def _make_inputs(
    v: Variant, base: list[torch.Tensor], call: int, device: str, dtype: torch.dtype
) -> _Inputs:
    """Fresh leaves and call arguments (built twice per call: eager and compiled)."""
    fam = v.family
    leaves: list[torch.Tensor] = []
    tensors: list[torch.Tensor] = []
    for k, (spec, data) in enumerate(zip(fam.operands, base)):
        overlap = v.overlap and k == fam.overlap_arg
        # The overlapping operand is a single row broadcast along dim 0.
        src = data[:1] if overlap else data
        leaf = src.clone().to(device)
        if spec.grad:
            leaf.requires_grad_(True)
        leaves.append(leaf)
        tensors.append(leaf.expand(data.shape) if overlap else leaf)

    s_value = FLOAT_VALUES[call]
    s: Any = s_value
    if v.scalar == T0:
        s = torch.tensor(s_value, dtype=dtype, device=device, requires_grad=fam.scalar_grad)
        leaves.append(s)

    lead: list[Any] = []
    if v.index is not None:
        i = fam.indices[call % len(fam.indices)]
        lead.append(torch.tensor(i, device=device) if v.index == "unbacked" else i)
    return _Inputs(leaves, [*lead, s, *tensors])


def _outputs(out: Any) -> list[torch.Tensor]:
    flat, _ = tree_flatten(out)
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _loss(outs: list[torch.Tensor], weights: Optional[list[torch.Tensor]]) -> Optional[torch.Tensor]:
    """out.sum() (an expanded gradient) or a weighted sum (a dense gradient)."""
    terms = []
    for k, o in enumerate(outs):
        if not o.requires_grad:
            continue
        terms.append(o.sum() if weights is None else (o * weights[k]).sum())
    if not terms:
        return None
    return torch.stack([t.float() for t in terms]).sum()


class TestInductorPrograms(TestCase):
    def _compile(self, fn: Callable[..., Any], v: Variant) -> Callable[..., Any]:
        return torch.compile(
            fn, backend="inductor", dynamic=v.dynamic, fullgraph=v.index == "unbacked"
        )

    def _run_variant(self, v: Variant, device: str, dtype: torch.dtype) -> None:
        torch._dynamo.reset()
        fam = v.family
        gen = torch.Generator().manual_seed(_seed(v.name))
        base = [_make_operand(op, gen, dtype) for op in fam.operands]
        fn = _build_fn(fam.body, v.index)
        compiled = self._compile(fn, v)

        for call in range(len(FLOAT_VALUES)):
            where = (
                f"[{v.name}, {dtype}, call {call}: s={FLOAT_VALUES[call]}"
                + (
                    f", index={fam.indices[call % len(fam.indices)]}"
                    if v.index is not None
                    else ""
                )
                + "]"
            )
            eager_in = _make_inputs(v, base, call, device, dtype)
            comp_in = _make_inputs(v, base, call, device, dtype)

            expected = fn(*eager_in.args)
            try:
                actual = compiled(*comp_in.args)
            except Exception as e:  # report which variant/value broke the compile
                raise AssertionError(
                    f"{where} compiled forward raised {type(e).__name__}: {e}"
                ) from e

            exp_outs, act_outs = _outputs(expected), _outputs(actual)
            self.assertEqual(len(act_outs), len(exp_outs), msg=f"{where} number of outputs")
            for k, (a, e) in enumerate(zip(act_outs, exp_outs)):
                self.assertEqual(a, e, msg=f"{where} forward output {k}")
            # Inputs the program mutates (graph-input mutation, running stats).
            for k, (a, e) in enumerate(zip(comp_in.args, eager_in.args)):
                if isinstance(e, torch.Tensor):
                    self.assertEqual(a, e, msg=f"{where} input {k} after the call")

            weights = None
            if not v.overlap:
                weights = [
                    torch.randn(o.shape, generator=gen).to(device=device, dtype=o.dtype)
                    for o in exp_outs
                ]
            exp_loss = _loss(exp_outs, weights)
            if exp_loss is None:
                continue
            exp_loss.backward()
            act_loss = _loss(act_outs, weights)
            try:
                act_loss.backward()
            except Exception as e:
                raise AssertionError(
                    f"{where} compiled backward raised {type(e).__name__}: {e}"
                ) from e
            for k, (a, e) in enumerate(zip(comp_in.leaves, eager_in.leaves)):
                if e.requires_grad:
                    self.assertEqual(a.grad, e.grad, msg=f"{where} grad of leaf {k}")

    def _run(self, v: Variant, device: str, dtype: torch.dtype) -> None:
        # specialize_float=False is 2.9.1's default; pinned so that Python
        # floats stay symbolic (and get tensorified) whatever the environment.
        patches: dict[str, Any] = {"specialize_float": False}
        if v.index == "unbacked":
            patches["capture_scalar_outputs"] = True
        with torch._dynamo.config.patch(**patches):
            self._run_variant(v, device, dtype)

    @dtypes(torch.float32)
    @parametrize("v", VARIANTS_F32, name_fn=lambda v: v.name)
    def test_program(self, device: str, dtype: torch.dtype, v: Variant) -> None:
        self._run(v, device, dtype)

    if FULL:  # not even registered in the fast tier

        @dtypes(torch.float16, torch.bfloat16)
        @parametrize("v", VARIANTS_REDUCED, name_fn=lambda v: v.name)
        def test_program_reduced_precision(
            self, device: str, dtype: torch.dtype, v: Variant
        ) -> None:
            self._run(v, device, dtype)


# --------------------------------------------------------------------------- #
# OpInfo
# --------------------------------------------------------------------------- #

OPINFO_NAMES: tuple[str, ...] = (
    "add",
    "sub",
    "mul",
    "div",  # three variants: no_rounding_mode, trunc_rounding, floor_rounding
    "clamp",
    "clamp_min",
    "clamp_max",
    "nn.functional.hardtanh",
    "nn.functional.layer_norm",
    "nn.functional.group_norm",
    "nn.functional.rms_norm",
    "nn.functional.batch_norm",
    "slice_scatter",
    "select_scatter",
    "diagonal_scatter",
    "scatter",
    "scatter_add",
    "index_put",
    "index_copy",
    "narrow",
    "select",
    "slice",
    "__getitem__",
)

# Fast tier: a few ops that reach the patched meta kernels and lowerings
# (slice/diagonal scatter), the arithmetic and the norm families, first sample
# only, dynamic=True, float32.
OPINFO_FAST: frozenset[tuple[str, str]] = frozenset(
    {
        ("add", ""),
        ("nn.functional.batch_norm", ""),
        ("slice_scatter", ""),
        ("diagonal_scatter", ""),
    }
)
OPINFO_SAMPLES: int = 2 if FULL else 1


def _opinfo_ops() -> list:
    return [
        op
        for op in op_db
        if op.name in OPINFO_NAMES
        and (FULL or (op.name, op.variant_test_name) in OPINFO_FAST)
    ]


OPINFO_OPS = _opinfo_ops()
OPINFO_DYNAMIC: tuple[bool, ...] = (False, True) if FULL else (True,)


def _detach_clone(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    return x


class TestInductorOpInfo(TestCase):
    def _run(self, device: str, dtype: torch.dtype, op, dynamic: bool) -> None:
        torch.manual_seed(0)
        samples = op.sample_inputs(device, dtype, requires_grad=op.supports_autograd)
        for n, sample in enumerate(samples):
            if n >= OPINFO_SAMPLES:
                break
            with torch._dynamo.config.patch(specialize_float=False):
                self._check_sample(op, sample, n, dynamic)

    @ops(OPINFO_OPS, dtypes=OpDTypes.supported, allowed_dtypes=(torch.float32,))
    @parametrize("dynamic", OPINFO_DYNAMIC)
    def test_opinfo(self, device: str, dtype: torch.dtype, op, dynamic: bool) -> None:
        self._run(device, dtype, op, dynamic)

    if FULL:  # float16/bfloat16 with dynamic=True only (budget, see above)

        @ops(
            OPINFO_OPS,
            dtypes=OpDTypes.supported,
            allowed_dtypes=(torch.float16, torch.bfloat16),
        )
        def test_opinfo_reduced_precision(self, device: str, dtype: torch.dtype, op) -> None:
            self._run(device, dtype, op, True)

    def _check_sample(self, op, sample, n: int, dynamic: bool) -> None:
        torch._dynamo.reset()
        variant = op.variant_test_name or "default"
        # summary(): shapes and dtypes, not the tensors' values.
        where = f"[{op.name}.{variant} sample {n}: {sample.summary()}, dynamic={dynamic}]"
        packed = (sample.input, sample.args, sample.kwargs)
        eager_in = tree_map(_detach_clone, packed)
        comp_in = tree_map(_detach_clone, packed)

        def fn(inp, args, kwargs):
            return op.op(inp, *args, **kwargs)

        compiled = torch.compile(fn, backend="inductor", dynamic=dynamic, fullgraph=False)
        expected = fn(*eager_in)
        try:
            actual = compiled(*comp_in)
        except Exception as e:
            raise AssertionError(f"{where} compiled forward raised {type(e).__name__}: {e}") from e
        self.assertEqual(actual, expected, msg=f"{where} forward")
        self.assertEqual(comp_in, eager_in, msg=f"{where} inputs after the call")

        exp_loss = _loss(_outputs(expected), None)
        if exp_loss is None:
            return
        exp_loss.backward()
        try:
            _loss(_outputs(actual), None).backward()
        except Exception as e:
            raise AssertionError(f"{where} compiled backward raised {type(e).__name__}: {e}") from e
        exp_leaves = [t for t in tree_flatten(eager_in)[0] if isinstance(t, torch.Tensor)]
        act_leaves = [t for t in tree_flatten(comp_in)[0] if isinstance(t, torch.Tensor)]
        for k, (a, e) in enumerate(zip(act_leaves, exp_leaves)):
            if e.requires_grad:
                self.assertEqual(a.grad, e.grad, msg=f"{where} grad of input {k}")


# CPU and CUDA only.  OpenReg (the PrivateUse1 test backend this project loads)
# would double the wall time, which neither tier's budget allows, and the
# patched code (meta kernels, tensorify pass, lowerings) is device independent;
# the patch suites restrict themselves the same way.
_DEVICES = ("cpu", "cuda")
instantiate_device_type_tests(TestInductorPrograms, globals(), only_for=_DEVICES)
instantiate_device_type_tests(TestInductorOpInfo, globals(), only_for=_DEVICES)

if __name__ == "__main__":
    run_tests()
