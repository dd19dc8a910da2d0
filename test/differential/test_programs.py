# Owner(s): ["module: inductor"]
"""Differential corpus part: whole programs under ``torch.compile`` (inductor) against eager.

Eager is the oracle. Every case builds the same program twice from one seed (the compiled
copy is a ``deepcopy`` of the eager one, made before either runs), runs it eagerly and
compiled, and compares everything the program produces. Three families:

* ``TestModuleDbPrograms``: every module of ``common_modules.module_db`` (the fast tier: a
  fixed, representative handful) on samples from its own ``module_inputs_func``: forward,
  backward with seeded cotangents; outputs, parameter and input gradients and buffers
  (running statistics are mutated in place, which is what the reinplace pass rewrites) are
  compared.
* ``TestSmallModelPrograms``: MLP, small CNN, ``nn.TransformerEncoderLayer``, embedding +
  LSTM and embedding + GRU, each trained for several steps by a *compiled train step*
  (forward, loss, backward, ``opt.step()`` in one compiled function; Dynamo breaks the
  graph at ``backward()`` and compiles the optimizer step as its own frame) while a StepLR
  scheduler changes the Python float ``lr`` between steps.
* ``TestOptimizerPrograms``: configurations of ``common_optimizers.optim_db`` (``foreach``
  both ways where supported) driven by StepLR, CosineAnnealingLR or LambdaLR; the
  optimizer step is ``torch.compile(opt.step)``; parameters and optimizer state are
  compared after ``OPTIM_STEPS`` steps. The learning rate is a Python float that changes
  between steps: exactly where a stale float baked into a compiled graph would show.

Tiers. The fast tier (default) registers only a representative float32 subset (< 150 s on
one CPU core). ``PYTORCH_TEST_WITH_SLOW=1`` (``TEST_WITH_SLOW``) registers the full tier:
every module of module_db for every supported float dtype, every small model in float32,
bfloat16 and float16 with two optimizers, and every optim_db configuration x scheduler.
The fast tier does not register the full-only cases at all, so it reports no mass of skips.

The corpus runs unchanged on stock torch 2.9.1 and on the overlay; test names depend only
on module_db / optim_db contents and the tables below, so they are identical on both sides.
"""

from __future__ import annotations

import contextlib
import copy
import re
import unittest
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo
import torch._dynamo.config as dynamo_config
import torch._inductor.config as inductor_config
from torch import nn
from torch.optim import lr_scheduler
from torch.optim.optimizer import Optimizer
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import (
    ModuleInfo,
    ModuleInput,
    TrainEvalMode,
    module_db,
    modules,
)
from torch.testing._internal.common_optimizers import OptimizerInfo, optim_db
from torch.testing._internal.common_utils import (
    TEST_WITH_SLOW,
    TestCase,
    parametrize,
    run_tests,
)
from torch.utils._pytree import tree_flatten, tree_map

FULL_TIER: bool = TEST_WITH_SLOW
SEED: int = 0

# --------------------------------------------------------------------------------------
# Tolerances
# --------------------------------------------------------------------------------------

# None means torch's own per-dtype defaults of `assertEqual`.
Tolerance = tuple[float | None, float | None]  # (atol, rtol)
DEFAULT_TOL: Tolerance = (None, None)

# Low precision: inductor computes bfloat16/float16 pointwise chains in float32 and rounds
# once, eager rounds after every op, so compiled and eager legitimately differ by a few
# ulps of the storage dtype; torch's inductor tests compare such programs with
# atol/rtol around 1e-2 (bf16) and 1e-3 (fp16) as well.
LOW_PRECISION_TOL: dict[torch.dtype, Tolerance] = {
    torch.bfloat16: (1e-2, 1.6e-2),
    torch.float16: (1e-3, 1e-3),
}

# Several optimizer steps of a trained model accumulate float32 reordering differences
# (inductor fuses and reassociates the sqrt/div chains of the adaptive optimizers).
# torch's test_compiled_optimizers loosens Adadelta to (5e-5, 5.5e-4) and NAdam to
# (1.5e-5, 1.7e-5) after only two steps; for OPTIM_STEPS steps of a real program the same
# magnitude, applied uniformly to every float32 training case, is:
TRAINING_TOL_FP32: Tolerance = (1e-4, 1e-5)
# Adadelta divides by sqrt of tiny running averages; torch's own value, kept as is.
OPTIM_TOL_OVERRIDES: dict[str, Tolerance] = {"Adadelta": (5e-5, 5.5e-4)}


def training_tolerance(dtype: torch.dtype) -> Tolerance:
    return LOW_PRECISION_TOL.get(dtype, TRAINING_TOL_FP32)


# The weight gradient of an embedding sums every lookup of a row; inductor's compiled backward
# adds them with a scatter-add whose order varies from run to run across threads, on stock and
# on the overlay alike (measured on the PrivateUse1 device: a row summing 200 lookups differs by
# up to 3e-6 between two runs of the same compiled code, ~3e-6 relative against eager).
MODULE_TOL_OVERRIDES: dict[str, Tolerance] = {"nn.Embedding": (1e-5, 1e-5)}


def module_tolerance(dtype: torch.dtype, module_name: str) -> Tolerance:
    # A single forward/backward of a module_db module: torch's defaults for float32.
    return LOW_PRECISION_TOL.get(dtype, MODULE_TOL_OVERRIDES.get(module_name, DEFAULT_TOL))


# --------------------------------------------------------------------------------------
# Shared case setup
# --------------------------------------------------------------------------------------


def inductor_supports(device_type: str) -> bool:
    """Whether inductor has a backend for this device type.

    cpu and cuda always do; a PrivateUse1 backend only if it registered one (the openreg
    built here does); without one, the case is skipped rather than failed.
    """
    from torch._inductor.codegen.common import (
        get_scheduling_for_device,
        init_backend_registration,
    )

    init_backend_registration()
    return get_scheduling_for_device(device_type) is not None


class ProgramTestCase(TestCase):
    """Common setup: fresh Dynamo state and configs that make divergence visible."""

    def setUp(self) -> None:
        super().setUp()
        if not inductor_supports(torch.device(self.device_type).type):
            raise unittest.SkipTest(f"inductor has no backend for {self.device_type}")
        torch._dynamo.reset()
        self._patches = contextlib.ExitStack()
        # Reaching the recompile limit makes Dynamo silently run the frame eagerly, which
        # trivially equals eager and hides every bug: make it an error instead.
        self._patches.enter_context(
            dynamo_config.patch(fail_on_recompile_limit_hit=True)
        )
        # Inductor's own RNG does not reproduce eager's stream (by design); falling back
        # to the aten random ops is what torch's accuracy checker does to compare with
        # eager, and it keeps dropout/RReLU/fractional pooling comparable.
        self._patches.enter_context(inductor_config.patch(fallback_random=True))

    def tearDown(self) -> None:
        self._patches.close()
        torch._dynamo.reset()
        super().tearDown()

    def assert_close(self, expected: Any, actual: Any, tol: Tolerance, msg: str) -> None:
        atol, rtol = tol
        self.assertEqual(expected, actual, atol=atol, rtol=rtol, msg=msg)


def clone_inputs(tree: Any) -> Any:
    """Fresh leaves with the same values and requires_grad, so each path owns its grads."""

    def clone(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.detach().clone().requires_grad_(x.requires_grad)
        return copy.deepcopy(x)

    return tree_map(clone, tree)


def spread(n: int, limit: int | None) -> list[int]:
    """`limit` indices spread evenly over range(n), deterministic; all if limit is None."""
    if limit is None or n <= limit:
        return list(range(n))
    return sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)}) if limit > 1 else [0]


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def summary(e: BaseException) -> str:
    """The informative lines of a failure (assertEqual's mismatch report), on one line."""
    lines = []
    for line in str(e).strip().splitlines():
        if line.startswith("To execute this test"):
            break  # the repro hint that TestCase appends: same for every sample
        if line.strip():
            lines.append(line.strip())
    return f"{type(e).__name__}: " + " | ".join(lines)[:600]


# --------------------------------------------------------------------------------------
# module_db programs
# --------------------------------------------------------------------------------------

# Fast tier: a fixed, representative handful (matmul, a norm with running buffers that
# are mutated in place, a norm without, an embedding lookup, a loss, a recurrent cell),
# two samples each; convolution is in the fast tier through the small CNN. The full tier takes every module and up to MODULE_SAMPLES_FULL samples each.
FAST_MODULES: tuple[str, ...] = (
    "nn.Linear",
    "nn.BatchNorm2d",
    "nn.LayerNorm",
    "nn.Embedding",
    "nn.CrossEntropyLoss",
    "nn.GRUCell",
)
MODULE_SAMPLES_FAST = 2
# Some modules have 40-100 samples; each sample is its own compile (1-5 s on CPU), so the
# full tier takes the first and the last (an evenly spread subset) to stay within budget.
MODULE_SAMPLES_FULL = 2

MODULE_DTYPES = (
    (torch.float32, torch.float16, torch.bfloat16) if FULL_TIER else (torch.float32,)
)
MODULES_UNDER_TEST: list[ModuleInfo] = (
    list(module_db) if FULL_TIER else [m for m in module_db if m.name in FAST_MODULES]
)


@dataclass
class FwdBwdResult:
    output: Any
    param_grads: list[torch.Tensor | None]
    input_grads: list[torch.Tensor | None]
    buffers: list[torch.Tensor]


def run_forward_backward(
    module: Callable[..., Any],
    owner: nn.Module,
    forward_input: Any,
) -> FwdBwdResult:
    """One forward and one backward with seeded cotangents; grads read from `owner`."""
    args, kwargs = clone_inputs((forward_input.args, forward_input.kwargs))
    # Seed right before forward: lazy modules initialise here and dropout draws here.
    torch.manual_seed(SEED)
    output = module(*args, **kwargs)
    outs = [
        t
        for t in tree_flatten(output)[0]
        if isinstance(t, torch.Tensor) and t.requires_grad
    ]
    if outs:
        # Cotangents from a CPU generator: identical for both paths on every device.
        gen = torch.Generator().manual_seed(SEED + 1)
        cotangents = [
            torch.randn(t.shape, generator=gen, dtype=t.dtype).to(t.device) for t in outs
        ]
        torch.autograd.backward(outs, cotangents)
    leaves = [
        t
        for t in tree_flatten((args, kwargs))[0]
        if isinstance(t, torch.Tensor) and t.requires_grad
    ]
    return FwdBwdResult(
        output=tree_map(
            lambda t: t.detach() if isinstance(t, torch.Tensor) else t, output
        ),
        param_grads=[p.grad for p in owner.parameters()],
        input_grads=[t.grad for t in leaves],
        buffers=[b.detach().clone() for b in owner.buffers()],
    )


def build_module(
    module_info: ModuleInfo,
    module_input: ModuleInput,
    device: str,
    dtype: torch.dtype,
    training: bool,
) -> nn.Module:
    ctor = module_input.constructor_input
    torch.manual_seed(SEED)
    module = module_info.module_cls(*ctor.args, **ctor.kwargs)
    module.to(device).to(dtype)
    module.train(training)
    return module


class TestModuleDbPrograms(ProgramTestCase):
    def check_sample(
        self,
        module_info: ModuleInfo,
        module_input: ModuleInput,
        device: str,
        dtype: torch.dtype,
        training: bool,
    ) -> None:
        torch._dynamo.reset()
        try:
            eager = build_module(module_info, module_input, device, dtype, training)
            # Copies are taken before any forward (lazy modules are still uninitialised).
            eager_again, compiled_copy = copy.deepcopy(eager), copy.deepcopy(eager)
            expected = run_forward_backward(eager, eager, module_input.forward_input)
            repeat = run_forward_backward(
                eager_again, eager_again, module_input.forward_input
            )
        except Exception as e:  # eager itself rejects the sample: no oracle
            raise unittest.SkipTest(f"eager fails: {first_line(e)}") from e
        try:
            self.assertEqual(expected.output, repeat.output, atol=0, rtol=0)
            self.assertEqual(expected.param_grads, repeat.param_grads, atol=0, rtol=0)
            self.assertEqual(expected.input_grads, repeat.input_grads, atol=0, rtol=0)
        except AssertionError as e:
            raise unittest.SkipTest("eager is nondeterministic for this sample") from e

        compiled = torch.compile(compiled_copy, backend="inductor")
        actual = run_forward_backward(
            compiled, compiled_copy, module_input.forward_input
        )
        tol = module_tolerance(dtype, module_info.name)
        self.assert_close(expected.output, actual.output, tol, "forward output")
        self.assert_close(
            expected.param_grads, actual.param_grads, tol, "parameter gradients"
        )
        self.assert_close(expected.input_grads, actual.input_grads, tol, "input gradients")
        self.assert_close(expected.buffers, actual.buffers, tol, "buffers after forward")

    @modules(
        MODULES_UNDER_TEST,
        allowed_dtypes=MODULE_DTYPES,
        train_eval_mode=TrainEvalMode.train_only,
    )
    def test_forward_backward(
        self, device: str, dtype: torch.dtype, module_info: ModuleInfo, training: bool
    ) -> None:
        samples = module_info.module_inputs_func(
            module_info,
            device=device,
            dtype=dtype,
            requires_grad=True,
            training=training,
        )
        samples = [s for s in samples if s.forward_input is not None]
        limit = MODULE_SAMPLES_FULL if FULL_TIER else MODULE_SAMPLES_FAST
        failures: list[str] = []
        skipped: list[str] = []
        chosen = spread(len(samples), limit)
        # One case per module: every chosen sample runs, all failures are reported.
        for index in chosen:
            sample = samples[index]
            label = f"sample {index} ({sample.desc or 'no desc'})"
            try:
                self.check_sample(module_info, sample, device, dtype, training)
            except unittest.SkipTest as e:
                skipped.append(f"{label}: {e}")
            except Exception as e:
                failures.append(f"{label}: {summary(e)}")
        if failures:
            self.fail(f"{len(failures)}/{len(chosen)} samples differ:\n" + "\n".join(failures))
        if chosen and len(skipped) == len(chosen):
            self.skipTest("no comparable sample: " + "; ".join(skipped))
        if not chosen:
            self.skipTest("module_inputs_func gives no forward sample")


# --------------------------------------------------------------------------------------
# Small models trained by a compiled train step
# --------------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            # No bias before BatchNorm: BN cancels it, so its gradient is rounding noise
            # that Adam would normalise into full-size, sign-random updates.
            nn.Conv2d(3, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


class TinyTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        # dropout stays at its default: fallback_random keeps it comparable with eager.
        # bias=False: softmax is invariant to the key projection's bias, so its gradient
        # is pure rounding noise, which Adam normalises into full-size, sign-random updates.
        self.layer = nn.TransformerEncoderLayer(
            d_model=16, nhead=2, dim_feedforward=32, batch_first=True, bias=False
        )
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layer(x).mean(1))


class EmbeddingRNN(nn.Module):
    def __init__(self, rnn_cls: type[nn.Module]) -> None:
        super().__init__()
        self.embedding = nn.Embedding(20, 12)
        self.rnn = rnn_cls(12, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embedding(tokens))
        return self.head(out[:, -1])


@dataclass(frozen=True)
class ModelSpec:
    build: Callable[[], nn.Module]
    # Makes (input, target) for a batch on a device in a float dtype, from a generator.
    make_batch: Callable[[torch.Generator, str, torch.dtype], tuple[torch.Tensor, torch.Tensor]]


def float_batch(*shape: int) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    def make(gen: torch.Generator, device: str, dtype: torch.dtype):
        x = torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)
        y = torch.randn(shape[0], 4, generator=gen).to(device=device, dtype=dtype)
        return x, y

    return make


def token_batch(gen: torch.Generator, device: str, dtype: torch.dtype):
    tokens = torch.randint(0, 20, (4, 7), generator=gen).to(device)
    y = torch.randn(4, 4, generator=gen).to(device=device, dtype=dtype)
    return tokens, y


MODELS: dict[str, ModelSpec] = {
    "mlp": ModelSpec(MLP, float_batch(8, 16)),
    "cnn": ModelSpec(SmallCNN, float_batch(4, 3, 8, 8)),
    "transformer_encoder_layer": ModelSpec(TinyTransformer, float_batch(4, 6, 16)),
    "embedding_lstm": ModelSpec(lambda: EmbeddingRNN(nn.LSTM), token_batch),
    "embedding_gru": ModelSpec(lambda: EmbeddingRNN(nn.GRU), token_batch),
}

# Optimizers for the small models (optim_db is covered by TestOptimizerPrograms).
MODEL_OPTIMIZERS: dict[str, Callable[[Any], Optimizer]] = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adamw": lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1),
}
MODEL_STEPS = 4

FAST_MODELS = ("mlp", "cnn")

def model_cases() -> list[tuple[str, str, torch.dtype]]:
    """(model, optimizer, dtype). Full: both optimizers in float32; SGD in bf16/fp16.

    Adam-like updates divide by sqrt of the second moment, so in bf16/fp16 a one-ulp
    difference in a tiny gradient becomes a full-size difference in the update: not a
    meaningful compiled-vs-eager comparison at low precision. SGD's update is linear.
    """
    if not FULL_TIER:
        return [(m, "adamw", torch.float32) for m in FAST_MODELS]
    cases = [(m, o, torch.float32) for m in MODELS for o in MODEL_OPTIMIZERS]
    cases += [(m, "sgd_momentum", d) for m in MODELS for d in (torch.bfloat16, torch.float16)]
    return cases


MODEL_CASES = model_cases()


def train_step(
    model: nn.Module, opt: Optimizer, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """The program: one full training step; compiled as a whole for the compiled path."""
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


@dataclass
class TrainRun:
    losses: list[torch.Tensor]
    params: list[torch.Tensor]
    grads: list[torch.Tensor | None]
    buffers: list[torch.Tensor]


def train(
    model: nn.Module,
    opt: Optimizer,
    sched: lr_scheduler.LRScheduler,
    step_fn: Callable[..., torch.Tensor],
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
) -> TrainRun:
    losses = []
    for index, (x, y) in enumerate(batches):
        torch.manual_seed(SEED + index)  # dropout draws the same mask on both paths
        losses.append(step_fn(model, opt, x, y))
        sched.step()  # the float lr changes between (compiled) steps
    return TrainRun(
        losses=losses,
        params=[p.detach().clone() for p in model.parameters()],
        grads=[p.grad for p in model.parameters()],
        buffers=[b.detach().clone() for b in model.buffers()],
    )


class TestSmallModelPrograms(ProgramTestCase):
    @parametrize(
        "model_name,optimizer,dtype",
        MODEL_CASES,
        # The device-type framework appends "_<device>_<dtype>" for a "dtype" parameter.
        name_fn=lambda m, o, d: f"{m}_{o}",
    )
    def test_train(
        self, device: str, model_name: str, optimizer: str, dtype: torch.dtype
    ) -> None:
        spec = MODELS[model_name]
        torch.manual_seed(SEED)
        eager_model = spec.build().to(device=device, dtype=dtype)
        compiled_model = copy.deepcopy(eager_model)
        gen = torch.Generator().manual_seed(SEED)
        batches = [spec.make_batch(gen, device, dtype) for _ in range(MODEL_STEPS)]

        def make_opt(model: nn.Module) -> tuple[Optimizer, lr_scheduler.LRScheduler]:
            opt = MODEL_OPTIMIZERS[optimizer](model.parameters())
            return opt, lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        try:
            expected = train(eager_model, *make_opt(eager_model), train_step, batches)
        except Exception as e:
            self.skipTest(f"eager fails: {first_line(e)}")
        compiled_step = torch.compile(train_step, backend="inductor")
        actual = train(compiled_model, *make_opt(compiled_model), compiled_step, batches)

        tol = training_tolerance(dtype)
        self.assert_close(expected.losses, actual.losses, tol, "losses per step")
        self.assert_close(expected.grads, actual.grads, tol, "last gradients")
        self.assert_close(expected.params, actual.params, tol, "parameters after training")
        self.assert_close(expected.buffers, actual.buffers, tol, "buffers after training")


# --------------------------------------------------------------------------------------
# optim_db optimizers x LR schedulers, compiled opt.step()
# --------------------------------------------------------------------------------------

# Every scheduler changes lr at every step, so every compiled step sees a new float.
SCHEDULERS: dict[str, Callable[[Optimizer], lr_scheduler.LRScheduler]] = {
    "StepLR": lambda opt: lr_scheduler.StepLR(opt, step_size=1, gamma=0.5),
    "CosineAnnealingLR": lambda opt: lr_scheduler.CosineAnnealingLR(opt, T_max=5),
    "LambdaLR": lambda opt: lr_scheduler.LambdaLR(opt, lr_lambda=lambda e: 1.0 / (e + 1)),
}
# Stock 2.9.1 recompiles the step for each new lr value: OPTIM_STEPS + 1 compiles per frame
# stay under Dynamo's default recompile limit (8), so the limit is not raised.
OPTIM_STEPS = 4


def excluded_reason(optim_info: OptimizerInfo) -> str | None:
    if optim_info.step_requires_closure:
        return "step() needs a closure (LBFGS-like): not a plain compiled step"
    if optim_info.only_supports_sparse_grads:
        return "needs sparse gradients, which inductor does not compile"
    return None


def instantiated_device_types() -> list[str]:
    """The device types instantiate_device_type_tests will make classes for. cuda always: the
    test processes of this project name the CUDA cases on every machine, skipped where CUDA is
    absent (torch_overlay/test_hooks/cuda_test_base.py), with the configs CUDA would run."""
    types = ["cpu", "cuda"]
    privateuse1 = torch._C._get_privateuse1_backend_name()
    if privateuse1 != "privateuse1":
        types.append(privateuse1)
    return types


def config_slug(desc: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", desc).strip("_").lower() or "default"


@dataclass(frozen=True)
class OptimCase:
    optim_info: OptimizerInfo
    desc: str
    foreach: bool | None  # None: the optimizer has no foreach implementation
    scheduler: str

    @property
    def name(self) -> str:
        impl = "" if self.foreach is None else f"_foreach_{self.foreach}"
        return f"{self.optim_info.name}_{config_slug(self.desc)}{impl}_{self.scheduler}"


def config_descs(optim_info: OptimizerInfo) -> list[str]:
    """Config descs in optim_db order, over the device types this run instantiates."""
    seen: dict[str, None] = {}
    for device_type in instantiated_device_types():
        try:
            inputs = optim_info.optim_inputs_func(device=device_type)
        except Exception:  # e.g. a device type optim_db knows nothing about
            continue
        for optim_input in inputs:
            seen.setdefault(optim_input.desc, None)
    return list(seen)


def full_optim_cases() -> Iterator[OptimCase]:
    """Every config x implementation, schedulers assigned in rotation.

    The full cross product with all three schedulers (~470 cases, each 2-3 compiles on
    stock because every new lr recompiles there) does not fit this part's share of the full
    tier's ~90 minutes (stock's side of this part alone measured ~46 minutes).
    All three schedulers change the float lr at every step and differ only in the float
    values and the expression computing them, so each config x impl gets one scheduler,
    rotated so that the two impls of a config get different ones and every optimizer
    meets every scheduler.
    """
    names = list(SCHEDULERS)
    for optim_info in optim_db:
        if excluded_reason(optim_info):
            continue
        impls = (False, True) if "foreach" in optim_info.supported_impls else (None,)
        for config_index, desc in enumerate(config_descs(optim_info)):
            for impl_index, foreach in enumerate(impls):
                scheduler = names[(2 * config_index + impl_index) % len(names)]
                yield OptimCase(optim_info, desc, foreach, scheduler)


def fast_optim_cases() -> Iterator[OptimCase]:
    """SGD with momentum and Adam/AdamW defaults, foreach both ways, under StepLR."""
    for optim_name, desc in (("SGD", "momentum"), ("Adam", "default"), ("AdamW", "default")):
        optim_info = next(o for o in optim_db if o.name == optim_name)
        for foreach in (False, True):
            yield OptimCase(optim_info, desc, foreach, "StepLR")


OPTIM_CASES: list[OptimCase] = list(full_optim_cases() if FULL_TIER else fast_optim_cases())
EXCLUDED_OPTIMS = [o for o in optim_db if excluded_reason(o)] if FULL_TIER else []
assert len({c.name for c in OPTIM_CASES}) == len(OPTIM_CASES), "optimizer case names collide"


def optim_model(device: str) -> nn.Module:
    # 2-D parameters only (no bias): Muon accepts nothing else, the rest do not care.
    return nn.Sequential(
        nn.Linear(6, 5, bias=False, device=device),
        nn.Tanh(),
        nn.Linear(5, 3, bias=False, device=device),
    )


def optimizer_kwargs(case: OptimCase, device: str) -> dict[str, Any] | None:
    for optim_input in case.optim_info.optim_inputs_func(device=device):
        if optim_input.desc == case.desc:
            kwargs = dict(optim_input.kwargs)
            if case.foreach is not None:
                kwargs["foreach"] = case.foreach
            return kwargs
    return None


def optimize(
    model: nn.Module,
    kwargs: dict[str, Any],
    case: OptimCase,
    compile_step: bool,
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[list[torch.Tensor], dict[str, Any], list[float]]:
    # deepcopy: a Tensor lr is mutated in place by the scheduler; never share it.
    opt = case.optim_info.optim_cls(model.parameters(), **copy.deepcopy(kwargs))
    sched = SCHEDULERS[case.scheduler](opt)
    step = torch.compile(opt.step, backend="inductor") if compile_step else opt.step
    lrs = []
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        step()
        sched.step()
        lrs.append(float(opt.param_groups[0]["lr"]))
    state = {
        f"{i}.{k}": v for i, p in enumerate(model.parameters()) for k, v in opt.state[p].items()
    }
    return [p.detach().clone() for p in model.parameters()], state, lrs


class TestOptimizerPrograms(ProgramTestCase):
    @parametrize("case", OPTIM_CASES, name_fn=lambda c: c.name)
    def test_step(self, device: str, case: OptimCase) -> None:
        kwargs = optimizer_kwargs(case, device)
        if kwargs is None:
            self.skipTest(f"optim_db has no '{case.desc}' config on {device}")
        torch.manual_seed(SEED)
        eager_model = optim_model(device)
        compiled_model = copy.deepcopy(eager_model)
        gen = torch.Generator().manual_seed(SEED)
        batches = [
            (torch.randn(4, 6, generator=gen).to(device), torch.randn(4, 3, generator=gen).to(device))
            for _ in range(OPTIM_STEPS)
        ]
        try:
            expected = optimize(eager_model, kwargs, case, False, batches)
        except Exception as e:
            self.skipTest(f"eager fails: {first_line(e)}")
        actual = optimize(compiled_model, kwargs, case, True, batches)

        tol = OPTIM_TOL_OVERRIDES.get(case.optim_info.name, TRAINING_TOL_FP32)
        self.assertEqual(expected[2], actual[2], msg="lr schedule")  # same floats on both paths
        self.assert_close(expected[0], actual[0], tol, "parameters after the steps")
        self.assert_close(expected[1], actual[1], tol, "optimizer state after the steps")

    if EXCLUDED_OPTIMS:

        @parametrize("optim_name", [o.name for o in EXCLUDED_OPTIMS])
        def test_step_excluded(self, device: str, optim_name: str) -> None:
            info = next(o for o in optim_db if o.name == optim_name)
            self.skipTest(excluded_reason(info))


instantiate_device_type_tests(TestModuleDbPrograms, globals())
instantiate_device_type_tests(TestSmallModelPrograms, globals())
instantiate_device_type_tests(TestOptimizerPrograms, globals())

if __name__ == "__main__":
    run_tests()
