# Owner(s): ["module: fakeTensor"]
"""Differential corpus part: FakeTensor and meta-device crossref over the OpInfo database.

For every OpInfo in ``op_db`` and every sample its ``sample_inputs`` generates, the op is run
three ways and the *metadata* of the results is compared, eager being the oracle:

* eager, on the real tensors of the sample;
* under ``FakeTensorMode``, on ``mode.from_tensor`` conversions of the same tensors;
* on the ``meta`` device, on ``MetaConverter`` conversions (same sizes, strides, storage
  offsets and view relationships as the real tensors).

Compared per output tensor: shape, dtype, device (``meta`` for the meta leg), the conj/neg
bits, whether the output *is* one of the inputs (in-place and out= results must be their
destination), and, where eager defines them, the strides and storage offset.

"Eager defines the strides" means: a strided (dense layout) output with at least one element,
of an op whose output layout is not left to a backend library (see
``UNSPECIFIED_STRIDE_OPS``); only the significant strides are compared (dims of size 1 may
carry any stride), as ``torch._prims_common.check_significant_strides`` does. torch's own
checks only do this on CUDA (pytorch/pytorch#77553); here it is done on every device, since
eager is the oracle of this corpus and the overlay changes meta strides (patch 0002).

Test methods, each parametrized by ``@ops`` over op x device x dtype (a separate method per
call form, so that one form's failure does not hide another form's change of outcome):

* ``test_functional``: ``op(input, *args, **kwargs)``;
* ``test_inplace``: ``op.inplace_variant`` (ops that have one);
* ``test_out``: ``op(..., out=...)`` into zero-sized out tensors that must be resized (ops
  that support out=);
* ``test_mixed_device`` / ``test_inplace_mixed_device``: the sample's first tensor operand
  ("other") or its input replaced by a tensor of another device: ``other`` on ``meta``
  (variant ``other_on_meta``), a cpu 0-dim ``other`` with the input on another device
  (``cpu_scalar_other``), a cpu 0-dim input with ``other`` on another device
  (``cpu_scalar_self``); "another device" is the test device when it is not cpu, ``meta``
  otherwise. Binary ops and the patched ops with a tensor operand (scatter, index, clamp
  families). Only the fake leg runs here: eager on the mixed inputs is the oracle.
* ``test_layouts`` / ``test_inplace_layouts``: the sample with all its tensors made
  non-contiguous (OpInfo's own ``SampleInput.noncontiguous``, variant ``noncontiguous``),
  with its input replaced by an expanded tensor with internal overlap (a stride-0 dim of
  size > 1, variant ``overlapping_input``), by a copy laid out transposed in its last two
  dims (variant ``transposed_input``) and, for a 4-d or 5-d input, by a channels_last or
  channels_last_3d copy (variant ``channels_last_input``): the layouts whose output strides
  eager's kernels decide and references and meta kernels have got wrong
  (pytorch/pytorch#168381, #198364).

Errors: when eager raises, fake and meta must raise too (any exception type); when eager
succeeds they must succeed with matching metadata. For the synthesized layout variants only
layout errors of eager (internal overlap on a written tensor) are held against fake/meta; a
value-dependent rejection of the synthesized input (e.g. a singular matrix) is not applicable.

"Not applicable" (n/a) marks a sample/leg whose result says nothing about correctness:

* fake raises ``DynamicOutputShapeException``, ``DataDependentOutputException``,
  ``UnsupportedOperatorException`` or ``UnsupportedFakeTensorException``: fake tensors are
  allowed to refuse data-dependent or unsupported ops;
* the meta leg raises ``NotImplementedError`` (no meta kernel) or an error that names the
  meta device (data access on meta, e.g. ``.item()``), or the sample has no tensor or names
  its device (factory functions), or its inputs cannot be converted;
* either leg fails reading tensor data ("data is not allocated yet"): the op is
  data-dependent;
* on a device backed by a CPU fallback (a PrivateUse1 backend) eager itself lacks the op
  (``NotImplementedError``).

A test whose every sample is n/a is skipped with the reasons; otherwise n/a samples are
simply not compared. Every mismatch of a test is collected and reported together, each with
its sample index, variant and a short description of the sample.

Tiers (the same file, chosen by torch's own ``TEST_WITH_SLOW``; the test names of a tier
are the same on every torch):

* fast (default): the ops whose name or alias is on the paths the overlay patches
  (add/sub/mul/div families incl. in-place, the scatter family, select/slice/narrow/index
  ops, clone/contiguous, clamp and norm families) plus a seeded draw of 16 other ops;
  float32; the first 2 samples of each op. About 580 cases for cpu + one PrivateUse1
  device, under a minute of one core.
* full (``PYTORCH_TEST_WITH_SLOW=1``): every op of ``op_db``; float32, float16 and
  bfloat16 where the OpInfo supports them on the device for the direct call forms, float32
  for the synthesized variants; the first 32 samples of each op (all samples of all but a
  few dozen OpInfos whose combinatorial sweeps generate hundreds; 8 on a PrivateUse1
  backend, whose CPU fallback makes every sample about four times as expensive, and 2 for
  its layout variants, which cost several times more again). Nothing of
  the full tier is registered in the fast tier.

Known disagreements: a full-tier case that fails on stock and on the overlay alike names its
upstream issue or reason (``KNOWN_DISAGREEMENTS``, ``KNOWN_REASONS``) at the start of its failure
message, as ``[upstream #N]`` or ``[upstream <reason>]``, which the gate records per case.

Determinism: every test reseeds torch and ``random`` and clears FakeTensorMode's
process-wide dispatch cache in ``setUp`` (OpInfo reseeds per sample as well), so each test
gives the same result alone or in any order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import random
import re
import warnings
from typing import Any, Callable, Iterator, Optional

import torch
import torch.utils._pytree as pytree
from torch._prims_common import check_significant_strides
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    UnsupportedFakeTensorException,
    UnsupportedOperatorException,
)
from torch._subclasses.meta_utils import MetaConverter
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import (
    clear_tracked_input,
    run_tests,
    TEST_WITH_SLOW,
    TestCase,
)
from torch.testing._internal.opinfo.core import BinaryUfuncInfo, OpInfo, SampleInput


# ----------------------------------------------------------------------------- tiers

FULL_TIER = TEST_WITH_SLOW

# Samples compared per op and test: the first ones the OpInfo generates, so the choice is
# deterministic. The full tier's cap only cuts the combinatorial sweeps of a few dozen
# OpInfos (pooling, linspace/logspace, unique, norms generate hundreds of samples each):
# every sample of every op at every dtype does not fit the full tier's time budget.
FAST_SAMPLE_CAP = 2
FULL_SAMPLE_CAP = 32
# A PrivateUse1 backend such as OpenReg runs every op through a CPU fallback (copies both
# ways, stream synchronization): about four times the cost of cpu per sample, so its full
# tier compares fewer samples per op to stay within the budget.
FULL_SAMPLE_CAP_FALLBACK_DEVICE = 8
# Its layout variants cost more again (measured: ~1.4 s per op against ~0.2 s on cpu, as
# each non-contiguous or expanded operand makes the fallback copy it): the first 2 samples,
# as in the fast tier. Layout handling lives in the meta and fake kernels, which cpu's 32
# samples per op already exercise; the fallback device's own path is in the other tests.
FULL_SAMPLE_CAP_FALLBACK_DEVICE_LAYOUTS = 2


def sample_cap(device: str, layouts: bool = False) -> int:
    if not FULL_TIER:
        return FAST_SAMPLE_CAP
    if torch.device(device).type in ("cpu", "cuda"):
        return FULL_SAMPLE_CAP
    return FULL_SAMPLE_CAP_FALLBACK_DEVICE_LAYOUTS if layouts else FULL_SAMPLE_CAP_FALLBACK_DEVICE

# Fast tier: how many ops outside the patched families are drawn, and the draw's seed.
FAST_RANDOM_OPS = 16
FAST_RANDOM_SEED = 20251124

# Dtypes. The direct call forms (functional, in-place, out=) run at float32 and, in the
# full tier, at the reduced-precision floating dtypes too, whose dtype promotion and meta
# paths differ; the synthesized variants (layouts, mixed devices) are about layout and
# device, not dtype, and run at float32. An op is instantiated for the dtypes of this list
# that its OpInfo supports on the device.
FAST_DTYPES = (torch.float32,)
FULL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
CALL_DTYPES = FULL_DTYPES if FULL_TIER else FAST_DTYPES
VARIANT_DTYPES = FAST_DTYPES

# Ops on the code paths the overlay patches (fake device propagation of in-place binary ops,
# the meta kernels of the scatter family, select/slice views, float scalars of clamp/norm).
# Matched against an OpInfo's name and the names of its aliases.
_PATCHED_FAMILY = re.compile(
    r"""^(
        (add|sub|mul|div|rsub|true_divide|floor_divide)
      | addc(mul|div)
      | (slice|select|diagonal|as_strided|masked)_scatter | scatter(_add|_reduce)?
      | select | slice | narrow(_copy)? | __getitem__
      | index_(put|add|copy|fill|select)
      | clone | contiguous
      | clamp(_min|_max)? | clip
      | (re)?norm | linalg\.(vector_|matrix_)?norm
      | nn\.functional\.(normalize|layer_norm|rms_norm) | native_layer_norm
    )$""",
    re.VERBOSE,
)

# Outputs whose strides are chosen by a backend library (FFT plans, LAPACK drivers) rather
# than specified by the op. torch's own fake-tensor crossref (test_ops.py,
# fake_tensor_stride_failing_ops) excludes the FFTs and the SVDs from its stride check; the
# other LAPACK eigen/singular-value drivers (eig) and the ops whose outputs are SVD outputs
# (the low-rank factorizations) are in the same situation.
UNSPECIFIED_STRIDE_OPS = frozenset(
    {
        "fft.fft", "fft.fft2", "fft.fftn", "fft.hfft", "fft.hfft2", "fft.hfftn",
        "fft.ifft", "fft.ifft2", "fft.ifftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn",
        "fft.irfft", "fft.irfft2", "fft.irfftn", "fft.rfft", "fft.rfft2", "fft.rfftn",
        "svd", "linalg.svd", "linalg.eig", "pca_lowrank", "svd_lowrank",
    }
)

# Ops whose eager run kills the process (SIGSEGV) on a PrivateUse1 backend in this project:
# OpenReg's CPU fallback materializes the conjugate bit of a complex tensor (hfft takes the
# conjugate of its input) by reading device memory from the host. A crash would lose every
# case of this file, so on PrivateUse1 devices these ops are skipped, with this reason.
PRIVATEUSE1_CRASHING_OPS = frozenset({"fft.hfft", "fft.hfft2", "fft.hfftn"})

# Known disagreements: the full tier's cases that fail on stock and on the overlay alike, by
# case-name pattern (first match wins), with the upstream issue or the reason, which the
# failure message states as `[upstream #N]` or `[upstream <reason>]` (the gate records it per
# case). A tag only explains a failure: a case that passes on stock still counts as regressed.
KNOWN_REASONS: dict[str, str] = {
    "norm-stats-per-backend": (
        "batch/layer norm statistics: eager's cpu kernel returns them in the input's reduced "
        "precision and, in eval mode, empty; cuda returns float32 and (C,). Fake tensors follow "
        "the kernel their device runs (cpu's for cpu and a CPU-fallback device); the meta "
        "device has no backend and keeps cuda's convention (pytorch/pytorch#100985, #85960; "
        "upstream's test_meta lists these as expected failures on cpu), so the meta leg differs"
    ),
    "out-handling": (
        "linalg.matrix_rank out= on the meta device: its C++ composite treats a meta tensor as "
        "a tensor subclass (isTensorSubclassLike includes the Meta backend) and rebinds its "
        "result to a fresh at::sum, so the call returns a new tensor instead of out; fake "
        "tensors agree with eager; the fix is in C++"
    ),
    "py-inplace-checks": (
        "addr_'s destination rule depends on the backend: cpu's addr.out refuses to write into "
        "its own input unless it is the 2-D result, OpenReg (whose fallback runs cpu's addr.out "
        "with the destination as out=) resizes it; the device-less meta kernel follows the "
        "latter, so cpu's meta leg differs"
    ),
    "renorm-by-value": (
        "embedding with max_norm renormalizes the looked-up rows of its weight in place; eager's "
        "cpu kernel scales a row (and so refuses a weight with internal overlap) only when that "
        "row's norm exceeds max_norm, which depends on values fake and meta tensors do not have"
    ),
    "unpool-grad-layout": (
        "max_unpool2d's output (the OpInfo's `grad` variant samples channels-last inputs): "
        "eager's cpu kernel keeps the input's channels-last layout, cuda's returns a contiguous "
        "output, and the decomposition fake and meta run returns a contiguous one"
    ),
    "meta-source-copy": (
        "a cpu call with a meta operand that eager copies from (copy_ from meta raises in eager); "
        "the fake path runs the meta kernel, which does not copy"
    ),
    "view-copy-ref": "view_copy of a non-viewable layout: the Python ref raises, eager's C++ kernel copies",
    "as-strided-bounds": (
        "as_strided_scatter into a 0-dim cpu self (an openreg src): eager's composite views "
        "a clone of self with as_strided, whose storage bounds check refuses the larger view "
        "(setStorage: ... out of bounds); fake and meta as_strided do not check the view "
        "against the storage's size"
    ),
}
KNOWN_DISAGREEMENTS: tuple[tuple[str, str], ...] = (
    # addr_ writes its destination through addr.out, a C++ composite without the overlap check.
    (r"^test_inplace_layouts_addr_", "#126474"),
    (r"^test_layouts_nn_functional_embedding(_bag)?_cpu_", "renorm-by-value"),
    (r"^test_functional_(native_batch_norm|_native_batch_norm_legit|_batch_norm_with_update"
     r"|native_layer_norm)_(cpu|openreg)_", "norm-stats-per-backend"),
    (r"^test_(out|layouts)_native_batch_norm_(cpu|openreg)_", "norm-stats-per-backend"),
    (r"^test_layouts__native_batch_norm_legit_(cpu|openreg)_", "norm-stats-per-backend"),
    (r"^test_out_linalg_matrix_rank(_hermitian)?_(cpu|openreg)_", "out-handling"),
    (r"^test_inplace_addr_cpu_", "py-inplace-checks"),
    (r"^test_(functional|layouts)_nn_functional_max_unpool2d_grad_(cpu|openreg)_", "unpool-grad-layout"),
    (r"^test_mixed_device_as_strided_scatter_cpu_", "meta-source-copy"),
    (r"^test_layouts_view_copy_cpu_", "view-copy-ref"),
    (r"^test_mixed_device_as_strided_scatter_openreg_", "as-strided-bounds"),
)


def known_disagreement(test_name: str) -> Optional[str]:
    """The upstream issue ("#N") or reason of a known disagreement, for a test method's name."""
    return next((tag for pattern, tag in KNOWN_DISAGREEMENTS if re.search(pattern, test_name)), None)


# Exceptions fake tensors may legitimately raise instead of computing a result.
FAKE_NOT_APPLICABLE = (
    DataDependentOutputException,
    DynamicOutputShapeException,
    UnsupportedFakeTensorException,
    UnsupportedOperatorException,
)

# Eager's error for a write into a tensor with internal overlap: a layout error, which
# fake/meta see as well as eager (they have the strides).
_OVERLAP_ERROR = "more than one element of the written-to tensor refers to a single memory"


def full_name(op: OpInfo) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _in_patched_family(op: OpInfo) -> bool:
    names = [op.name] + [alias.name for alias in op.aliases]
    return any(_PATCHED_FAMILY.match(name) for name in names)


def _select_ops() -> list[OpInfo]:
    """The ops of the current tier, in op_db order."""
    if FULL_TIER:
        return list(op_db)
    patched = [op for op in op_db if _in_patched_family(op)]
    chosen = {full_name(op) for op in patched}
    # Other ops: a seeded draw among those that support float32 (the fast tier's dtype), so
    # every drawn op registers tests. Sorted names make the draw independent of op_db order.
    others = sorted(
        full_name(op)
        for op in op_db
        if full_name(op) not in chosen and torch.float32 in op.dtypes
    )
    chosen |= set(random.Random(FAST_RANDOM_SEED).sample(others, FAST_RANDOM_OPS))
    return [op for op in op_db if full_name(op) in chosen]


# Patched-family ops that take a tensor operand besides their input (src, values, index,
# bounds): the ones a mixed-device variant can be made of.
_TENSOR_OPERAND_FAMILY = re.compile(
    r"^((add|sub|mul|div|rsub|true_divide|floor_divide)|addc(mul|div)|.*scatter.*"
    r"|index_(put|add|copy|fill|select)|clamp(_min|_max)?|clip)$"
)


def _mixed_device_candidate(op: OpInfo) -> bool:
    # Binary ops take a second tensor operand; so do the scatter/index/clamp ops.
    names = [op.name] + [alias.name for alias in op.aliases]
    return isinstance(op, BinaryUfuncInfo) or any(
        _TENSOR_OPERAND_FAMILY.match(name) for name in names
    )


SELECTED_OPS = _select_ops()
INPLACE_OPS = [op for op in SELECTED_OPS if op.inplace_variant is not None]
OUT_OPS = [op for op in SELECTED_OPS if op.supports_out]
MIXED_OPS = [op for op in SELECTED_OPS if _mixed_device_candidate(op)]
INPLACE_MIXED_OPS = [op for op in MIXED_OPS if op.inplace_variant is not None]

# ----------------------------------------------------------------------------- outcomes


@dataclasses.dataclass
class Outcome:
    """What one leg produced: its result (a pytree) or the exception it raised."""

    value: Any = None
    error: Optional[BaseException] = None
    # Leaves of the (converted) arguments, to tell which outputs *are* inputs.
    arg_leaves: tuple = ()


@contextlib.contextmanager
def quiet_fake_logger() -> Iterator[None]:
    # FakeTensorMode logs every meta-kernel exception with its traceback before re-raising
    # it; raising is an outcome this corpus compares, so the log is noise (and slow).
    # (`disabled` rather than setLevel: setLevel clears every logger's cache, which is slow.)
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = disabled


def run_leg(
    fn: Callable[..., Any],
    sample: tuple[Any, tuple, dict],
    mode: Optional[FakeTensorMode] = None,
) -> Outcome:
    inp, args, kwargs = sample
    leaves = tuple(pytree.tree_leaves((inp, args, kwargs)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode is None:
                value = fn(inp, *args, **kwargs)
            else:
                with quiet_fake_logger(), mode:
                    value = fn(inp, *args, **kwargs)
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return Outcome(error=e, arg_leaves=leaves)
    return Outcome(value=value, arg_leaves=leaves)


# The error of reading the data of a tensor without storage (meta, or a fake tensor's meta
# storage): the op is data-dependent, like a DataDependentOutputException.
_NO_DATA_ERROR = "data is not allocated yet"


def leg_not_applicable(leg: str, error: BaseException) -> bool:
    """Whether the error of the fake or meta leg means "cannot tell", not "wrong"."""
    if _NO_DATA_ERROR in str(error):
        return True
    if leg == "fake":
        return isinstance(error, FAKE_NOT_APPLICABLE)
    # meta leg: a missing meta kernel, or an op that needs data the meta device lacks.
    return isinstance(error, NotImplementedError) or "meta" in str(error).lower()


def _error_line(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first[:160]}"


# ----------------------------------------------------------------------------- conversions


def to_fake(mode: FakeTensorMode, tree: Any) -> Any:
    # One mode per sample: from_tensor memoizes storages, so views of one base stay views.
    return pytree.tree_map_only(torch.Tensor, mode.from_tensor, tree)


def to_meta(tree: Any) -> Optional[Any]:
    """Meta copies with the same sizes, strides, offsets and aliasing, or None."""
    converter = MetaConverter()
    failed = False

    def convert(t: torch.Tensor) -> torch.Tensor:
        nonlocal failed
        if t.is_meta:
            return t
        r = converter(t)
        if r is NotImplemented or not isinstance(r, torch.Tensor):
            failed = True
            return t
        return r

    out = pytree.tree_map_only(torch.Tensor, convert, tree)
    return None if failed else out


def clone_tree(tree: Any) -> Any:
    """Fresh copies keeping strides and storage offsets (views lose their base)."""

    def clone(t: torch.Tensor) -> torch.Tensor:
        if t.layout != torch.strided:
            return t.clone()
        zero_dims = [d for d in range(t.dim()) if t.stride(d) == 0 and t.shape[d] > 1]
        if zero_dims:
            # An expanded tensor cannot be written into: copy its base, expand it again.
            base = t
            for d in zero_dims:
                base = base.narrow(d, 0, 1)
            return clone(base).expand(t.shape)
        # A buffer large enough for the view, then the same strided view of it.
        needed = t.storage_offset() + sum(
            (s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0
        ) + 1
        if t.numel() == 0:
            needed = t.storage_offset()
        buf = torch.empty(max(needed, 0), dtype=t.dtype, device=t.device)
        out = buf.as_strided(t.shape, t.stride(), t.storage_offset())
        if t.numel() > 0:
            out.copy_(t)
        return out

    return pytree.tree_map_only(torch.Tensor, clone, tree)


def sample_tuple(sample: SampleInput) -> tuple[Any, tuple, dict]:
    return sample.input, tuple(sample.args), dict(sample.kwargs)


# ----------------------------------------------------------------------------- descriptions


def short(x: Any, depth: int = 0) -> str:
    """A compact description of a sample argument for failure messages."""
    if isinstance(x, torch.Tensor):
        dtype = str(x.dtype).replace("torch.", "")
        extra = ""
        if x.layout != torch.strided:
            extra = f",{x.layout}"
        elif not x.is_contiguous():
            extra = f",stride={tuple(x.stride())}"
        return f"T{list(x.shape)}:{dtype}@{x.device.type}{extra}"
    if isinstance(x, (list, tuple)):
        if depth > 1 or len(x) > 6:
            return f"{type(x).__name__}[{len(x)}]"
        inner = ", ".join(short(v, depth + 1) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}={short(v, depth + 1)}" for k, v in x.items()) + "}"
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def describe_sample(sample: tuple[Any, tuple, dict]) -> str:
    inp, args, kwargs = sample
    parts = [short(inp)] + [short(a) for a in args]
    parts += [f"{k}={short(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


# ----------------------------------------------------------------------------- metadata


def strides_defined(t: torch.Tensor, op_name: str) -> bool:
    """Whether eager's output `t` has strides other implementations must reproduce."""
    return (
        t.layout == torch.strided
        and not t.is_quantized
        and not t.is_nested
        and t.numel() > 0
        and op_name not in UNSPECIFIED_STRIDE_OPS
    )


def tensor_meta(t: torch.Tensor, with_strides: bool, device: Optional[str] = None) -> dict:
    meta = {
        "shape": tuple(t.shape),
        "dtype": t.dtype,
        "device": device if device is not None else str(t.device),
        "layout": t.layout,
        "conj": t.is_conj(),
        "neg": t.is_neg(),
    }
    if with_strides:
        meta["storage_offset"] = t.storage_offset()
    return meta


def identity_map(outcome: Outcome) -> tuple:
    """For each output leaf: the index of the input leaf it *is*, or None."""
    ids = {id(leaf): i for i, leaf in enumerate(outcome.arg_leaves) if isinstance(leaf, torch.Tensor)}
    return tuple(ids.get(id(leaf)) for leaf in pytree.tree_leaves(outcome.value))


# ----------------------------------------------------------------------------- the test


class _Mismatch(Exception):
    """One metadata difference, with the message that names its sample."""


@dataclasses.dataclass
class Report:
    """Everything one test found, reported at its end."""

    compared: int = 0
    mismatches: list[str] = dataclasses.field(default_factory=list)
    not_applicable: list[str] = dataclasses.field(default_factory=list)


class TestFakeCrossref(TestCase):
    # Sample inputs are random: reseed before every test so each one is independent of the
    # ones that ran before it (TestCase.setUp seeds too; this keeps it explicit).
    def setUp(self) -> None:
        super().setUp()
        torch.manual_seed(0)
        random.seed(0)
        # FakeTensorMode's dispatch cache is shared by all modes of the process; a result
        # cached by an earlier test would make this one depend on the order tests run in.
        FakeTensorMode.cache_clear()

    # ---- sample iteration

    def _samples(self, op: OpInfo, device: str, dtype: torch.dtype, cap: int):
        samples = op.sample_inputs(device, dtype, requires_grad=False)
        for index, sample in enumerate(samples):
            if index >= cap:
                return
            yield index, sample

    def _finish(self, report: Report) -> None:
        # The mismatches name their samples; the harness would otherwise blame the last one.
        clear_tracked_input()
        if report.mismatches:
            shown = report.mismatches[:20]
            more = len(report.mismatches) - len(shown)
            tag = known_disagreement(self._testMethodName)
            self.fail(
                (f"[upstream {tag}] " if tag else "")
                + f"{len(report.mismatches)} mismatch(es) against eager"
                + (f" (first {len(shown)} shown)" if more else "")
                + ":\n  "
                + "\n  ".join(shown)
            )
        if report.compared == 0:
            reasons = sorted(set(report.not_applicable)) or ["no applicable sample"]
            self.skipTest("not applicable: " + "; ".join(reasons)[:500])

    # ---- comparison of one leg against eager

    def _compare_leg(
        self,
        report: Report,
        where: str,
        op: OpInfo,
        eager: Outcome,
        other: Outcome,
        leg: str,
        expected_device: Callable[[torch.Tensor], str],
        layout_variant: bool = False,
    ) -> None:
        """Record whether `other` (the fake or meta leg) agrees with eager."""
        if other.error is not None and leg_not_applicable(leg, other.error):
            report.not_applicable.append(f"{leg}: {_error_line(other.error)[:100]}")
            return
        if eager.error is not None:
            if other.error is not None:
                report.compared += 1  # both raise: they agree
                return
            if layout_variant and _OVERLAP_ERROR not in str(eager.error):
                # Eager rejected the values of a synthesized input, which fake/meta cannot see.
                report.not_applicable.append(f"eager rejects synthesized input: {_error_line(eager.error)[:80]}")
                return
            report.mismatches.append(
                f"{where}: {leg} succeeded where eager raised {_error_line(eager.error)}"
            )
            return
        if other.error is not None:
            report.mismatches.append(f"{where}: {leg} raised {_error_line(other.error)}; eager succeeded")
            return
        report.compared += 1
        try:
            self._assert_same_outputs(op, eager, other, leg, expected_device, where)
        except _Mismatch as e:
            report.mismatches.append(str(e))

    def _expect_equal(self, actual: Any, expected: Any, msg: str) -> None:
        try:
            self.assertEqual(actual, expected, msg=msg)
        except AssertionError:
            raise _Mismatch(msg) from None

    def _assert_same_outputs(
        self,
        op: OpInfo,
        eager: Outcome,
        other: Outcome,
        leg: str,
        expected_device: Callable[[torch.Tensor], str],
        where: str,
    ) -> None:
        e_leaves = pytree.tree_leaves(eager.value)
        o_leaves = pytree.tree_leaves(other.value)
        self._expect_equal(
            len(o_leaves), len(e_leaves),
            f"{where}: {leg} has {len(o_leaves)} outputs, eager {len(e_leaves)}",
        )
        self._expect_equal(
            identity_map(other), identity_map(eager),
            f"{where}: {leg} outputs that are inputs {identity_map(other)} != eager "
            f"{identity_map(eager)} (in-place/out= results must be their destination)",
        )
        op_name = full_name(op)
        for i, (e, o) in enumerate(zip(e_leaves, o_leaves)):
            if not isinstance(e, torch.Tensor):
                self._expect_equal(
                    isinstance(o, torch.Tensor), False,
                    f"{where}: {leg} output {i} is a tensor, eager's is not",
                )
                if type(e) is int:  # sizes, counts: fake must know them exactly
                    self._expect_equal(o, e, f"{where}: {leg} output {i} value {o} != eager {e}")
                continue
            self._expect_equal(
                isinstance(o, torch.Tensor), True, f"{where}: {leg} output {i} is not a tensor"
            )
            if leg == "fake":
                self._expect_equal(
                    isinstance(o, FakeTensor), True, f"{where}: fake output {i} is a real tensor"
                )
            with_strides = strides_defined(e, op_name) and o.layout == torch.strided
            expected = tensor_meta(e, with_strides, expected_device(e))
            actual = tensor_meta(o, with_strides)
            for key in expected:
                self._expect_equal(
                    actual[key], expected[key],
                    f"{where}: {leg} output {i} {key} {actual[key]} != eager {expected[key]}",
                )
            if with_strides:
                # torch's rule: only dims of size > 1 have significant strides.
                same, dim = check_significant_strides(e, o, only_cuda=False)
                if not same:
                    self._expect_equal(
                        tuple(o.stride()), tuple(e.stride()),
                        f"{where}: {leg} output {i} strides {tuple(o.stride())} != eager "
                        f"{tuple(e.stride())} (shape {tuple(e.shape)}, dim {dim})",
                    )

    # ---- one call form on one sample, all legs

    def _check_call(
        self,
        report: Report,
        op: OpInfo,
        device: str,
        fn: Callable[..., Any],
        sample: tuple[Any, tuple, dict],
        where: str,
        *,
        with_meta: bool = True,
        layout_variant: bool = False,
    ) -> None:
        """Run `fn` on `sample` with fake, meta and eager (in that order: eager may mutate)."""
        mode = FakeTensorMode()
        fake_sample = to_fake(mode, sample) if not _has_unfakeable(sample) else None
        # The meta leg moves the sample's tensors to meta; it says nothing about a sample
        # without tensors or one naming its device explicitly (factory functions).
        with_meta = with_meta and meta_leg_applies(sample)
        meta_sample = to_meta(sample) if with_meta else None
        fake = run_leg(fn, fake_sample, mode) if fake_sample is not None else None
        meta = run_leg(fn, meta_sample) if meta_sample is not None else None
        eager = run_leg(fn, sample)
        device_type = torch.device(device).type

        if device_type not in ("cpu", "cuda", "meta") and eager.error is not None and (
            isinstance(eager.error, NotImplementedError)
        ):
            report.not_applicable.append(f"eager on {device_type}: {_error_line(eager.error)[:80]}")
            return
        if fake is None:
            report.not_applicable.append("fake: input cannot be faked")
        else:
            self._compare_leg(
                report, where, op, eager, fake, "fake", lambda t: str(t.device), layout_variant
            )
        if with_meta:
            if meta is None:
                report.not_applicable.append("meta: input cannot be converted to meta")
            else:
                # Outputs on the sample's device move to meta; others (e.g. a cpu result of a
                # cuda op) stay where eager put them.
                def meta_device(t: torch.Tensor) -> str:
                    return "meta" if t.device.type in (device_type, "meta") else str(t.device)

                self._compare_leg(report, where, op, eager, meta, "meta", meta_device, layout_variant)

    # ---- test methods

    def _run_samples(
        self,
        op: OpInfo,
        device: str,
        dtype: torch.dtype,
        fn: Callable[..., Any],
        variants: Callable[[SampleInput], list[tuple[str, tuple[Any, tuple, dict]]]],
        *,
        with_meta: bool = True,
        layout_variant: bool = False,
    ) -> None:
        """Check `fn` on every variant of every sample, then report."""
        if (
            torch.device(device).type == torch._C._get_privateuse1_backend_name()
            and full_name(op) in PRIVATEUSE1_CRASHING_OPS
        ):
            self.skipTest("eager crashes the process on this backend (conj of a complex tensor)")
        report = Report()
        for index, sample in self._samples(op, device, dtype, sample_cap(device, layouts=layout_variant)):
            for variant, s in variants(sample):
                label = f" [{variant}]" if variant else ""
                where = f"sample {index}{label} ({describe_sample(s)})"
                self._check_call(
                    report, op, device, fn, s, where,
                    with_meta=with_meta, layout_variant=layout_variant,
                )
        if report.compared == 0 and not report.not_applicable and not report.mismatches:
            report.not_applicable.append("no sample yields this test's variant (tensor operand, out= template)")
        self._finish(report)

    @ops(SELECTED_OPS, allowed_dtypes=CALL_DTYPES)
    def test_functional(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        self._run_samples(op, device, dtype, op, lambda s: [("", sample_tuple(s))])

    @ops(INPLACE_OPS, allowed_dtypes=CALL_DTYPES)
    def test_inplace(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        self._run_samples(op, device, dtype, op.inplace_variant, lambda s: [("", sample_tuple(s))])

    @ops(OUT_OPS, allowed_dtypes=CALL_DTYPES)
    def test_out(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        self._run_samples(op, device, dtype, op, lambda s: out_variants(op, s))

    @ops(MIXED_OPS, allowed_dtypes=VARIANT_DTYPES)
    def test_mixed_device(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        # Only the fake leg: the inputs already mix devices, eager on them is the oracle.
        self._run_samples(
            op, device, dtype, op, lambda s: mixed_device_variants(s, device), with_meta=False
        )

    @ops(INPLACE_MIXED_OPS, allowed_dtypes=VARIANT_DTYPES)
    def test_inplace_mixed_device(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        self._run_samples(
            op, device, dtype, op.inplace_variant,
            lambda s: mixed_device_variants(s, device), with_meta=False,
        )

    @ops(SELECTED_OPS, allowed_dtypes=VARIANT_DTYPES)
    def test_layouts(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        self._run_samples(op, device, dtype, op, layout_variants, layout_variant=True)

    @ops(INPLACE_OPS, allowed_dtypes=VARIANT_DTYPES)
    def test_inplace_layouts(self, device: str, dtype: torch.dtype, op: OpInfo) -> None:
        self._run_samples(
            op, device, dtype, op.inplace_variant, layout_variants, layout_variant=True
        )


# ----------------------------------------------------------------------------- variants


def _has_unfakeable(sample: Any) -> bool:
    # Fake tensors of sparse/quantized/nested inputs are out of scope of this part.
    return any(
        isinstance(t, torch.Tensor) and (t.layout != torch.strided or t.is_quantized or t.is_nested)
        for t in pytree.tree_leaves(sample)
    )


def meta_leg_applies(sample: tuple[Any, tuple, dict]) -> bool:
    has_tensor = any(isinstance(t, torch.Tensor) for t in pytree.tree_leaves(sample))
    return has_tensor and "device" not in sample[2] and not _has_unfakeable(sample)


def _other_device(device: str) -> str:
    return "meta" if torch.device(device).type == "cpu" else device


def _cpu_scalar(t: torch.Tensor) -> torch.Tensor:
    value = t.reshape(-1)[0].item() if t.numel() > 0 else 0
    return torch.tensor(value, dtype=t.dtype, device="cpu")


Variant = tuple[str, tuple[Any, tuple, dict]]


def out_variants(op: OpInfo, sample: SampleInput) -> list[Variant]:
    """The sample with out= tensors mirroring eager's functional result, zero-sized.

    Same dtypes and devices as eager's result and no elements, so every implementation has
    to resize them (and pick their strides).
    """
    inp, args, kwargs = sample_tuple(sample)
    if "out" in kwargs:
        return []
    try:
        template_sample = clone_tree((inp, args, kwargs))
    except NotImplementedError:
        # The device lacks a kernel eager needs to copy the sample (OpenReg has no sparse
        # CSR kernels): not applicable, as when eager itself lacks the op there.
        return []
    functional = run_leg(op, template_sample)
    leaves = pytree.tree_leaves(functional.value)
    if functional.error is not None or not leaves:
        return []
    if not all(isinstance(t, torch.Tensor) and t.layout == torch.strided for t in leaves):
        return []
    out = pytree.tree_map_only(
        torch.Tensor, lambda t: torch.empty(0, dtype=t.dtype, device=t.device), functional.value
    )
    if isinstance(out, list):
        out = tuple(out)
    return [("", (inp, args, {**kwargs, "out": out}))]


def mixed_device_variants(sample: SampleInput, device: str) -> list[Variant]:
    """Copies of `sample` whose input or first tensor operand lives on another device."""
    inp, args, kwargs = sample_tuple(sample)
    if not isinstance(inp, torch.Tensor) or inp.layout != torch.strided:
        return []
    pos = next(
        (
            i
            for i, a in enumerate(args)
            if isinstance(a, torch.Tensor) and a.layout == torch.strided and a.device == inp.device
        ),
        None,
    )
    if pos is None:
        return []

    def with_(new_inp: Callable[[], torch.Tensor], new_other: Callable[[], torch.Tensor]) -> tuple:
        # Fresh copies per variant: an in-place call writes into them.
        rest_args, rest_kwargs = clone_tree((args, kwargs))
        new_args = rest_args[:pos] + (new_other(),) + rest_args[pos + 1 :]
        return new_inp(), new_args, rest_kwargs

    inp0, other0 = inp, args[pos]
    elsewhere = _other_device(device)
    variants: list[Variant] = []
    if torch.device(device).type != "meta":
        variants.append(("other_on_meta", with_(lambda: clone_tree(inp0), lambda: other0.to("meta"))))
    variants.append(
        ("cpu_scalar_other", with_(lambda: clone_tree(inp0).to(elsewhere), lambda: _cpu_scalar(other0)))
    )
    variants.append(
        ("cpu_scalar_self", with_(lambda: _cpu_scalar(inp0), lambda: clone_tree(other0).to(elsewhere)))
    )
    return variants


def _overlapping(t: torch.Tensor) -> Optional[torch.Tensor]:
    """A fresh tensor of `t`'s shape whose last dim of size > 1 is expanded (stride 0)."""
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    if not dims or t.layout != torch.strided:
        return None
    d = dims[-1]
    return clone_tree(t.narrow(d, 0, 1)).expand(t.shape)


def _transposed(t: torch.Tensor) -> Optional[torch.Tensor]:
    """A copy of `t` (same shape and values) laid out transposed in its last two dims."""
    if t.dim() < 2 or t.shape[-1] < 2 or t.shape[-2] < 2:
        return None
    return clone_tree(t).mT.contiguous().mT


def _channels_last(t: torch.Tensor) -> Optional[torch.Tensor]:
    """A channels_last (4-d) or channels_last_3d (5-d) copy of `t`, when that changes its strides."""
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    if t.dim() not in formats or t.shape[1] < 2 or math.prod(t.shape[2:]) < 2:
        return None
    return clone_tree(t).contiguous(memory_format=formats[t.dim()])


def layout_variants(sample: SampleInput) -> list[Variant]:
    """The sample with non-contiguous tensors, and with its input internally overlapping,
    transposed or channels-last."""
    variants: list[Variant] = []
    if _has_unfakeable(sample_tuple(sample)):
        return variants  # sparse/quantized/nested: no strides to vary
    if any(isinstance(t, torch.Tensor) for t in pytree.tree_leaves(sample_tuple(sample))):
        variants.append(("noncontiguous", sample_tuple(sample.noncontiguous())))
    inp, args, kwargs = sample_tuple(sample)
    if isinstance(inp, torch.Tensor) and inp.layout == torch.strided:
        for name, relaid in (("overlapping_input", _overlapping),
                             ("transposed_input", _transposed),
                             ("channels_last_input", _channels_last)):
            new_inp = relaid(inp)
            if new_inp is not None:
                variants.append((name, (new_inp, *clone_tree((args, kwargs)))))
    return variants


instantiate_device_type_tests(TestFakeCrossref, globals())

if __name__ == "__main__":
    run_tests()
