"""A minimal torch.compile backend for OpenReg: ``torch.compile(fn, backend="openreg")``.

The backend validates the PyTorch side of the PrivateUse1 compile contract
and then runs the captured graph eagerly, where every op reaches the openreg
kernels / CPU fallback. It performs no lowering: real vendors do that in
their own backends, the point here is to exercise what all of them share
(registration, FX capture, FakeTensor device metadata, guards, graph breaks).

What it checks, precisely:

* ``gm.graph.lint()`` passes (well-formed graph).
* An *openreg input* is a placeholder whose example input (the value Dynamo
  hands the backend for that placeholder) is a tensor on the openreg device.
  Parameters and buffers of an ``nn.Module`` count too: Dynamo lifts them to
  placeholders. For every tensor placeholder, the FakeTensor Dynamo recorded
  (``node.meta["example_value"]``, or ``node.meta["val"]`` for graphs that
  went through AOT/make_fx) must exist and report exactly the example
  input's device (type and index). So an openreg input must carry
  ``device.type == "openreg"``, and a CPU input must not claim to be
  openreg. A mismatch raises :class:`OpenRegCompileError` (which Dynamo
  surfaces wrapped in ``torch._dynamo.exc.BackendCompilerFailed``).
  Inputs that are not tensors (SymInts from dynamic shapes, Python scalars)
  are not checked.

Then ``eliminate_dead_code()`` + ``recompile()`` (the transform-and-recompile
pattern), the generated code is logged at DEBUG level, and ``gm.forward`` is
returned.

This module also registers Dynamo's ``DeviceInterface`` for openreg
(:class:`OpenRegInterface`: devices, streams, events, synchronization and
properties, as Dynamo and Inductor query them for any device).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

log = logging.getLogger(__name__)

BACKEND_NAME = "openreg"


class OpenRegCompileError(RuntimeError):
    """The captured graph violates the openreg device contract."""


def _fake_value(node: torch.fx.Node) -> Any:
    meta = node.meta
    if "example_value" in meta:  # set by Dynamo while tracing
        return meta["example_value"]
    return meta.get("val")  # set by make_fx / AOT tracing


def _check_placeholder(node: torch.fx.Node, example: Any) -> None:
    if not isinstance(example, torch.Tensor):
        return  # SymInt / int / float inputs have no device
    fake = _fake_value(node)
    if not isinstance(fake, torch.Tensor):
        raise OpenRegCompileError(
            f"placeholder {node.name!r}: example input is a tensor on {example.device}, "
            f"but the graph carries no FakeTensor metadata for it (got {type(fake).__name__})"
        )
    if fake.device != example.device:
        raise OpenRegCompileError(
            f"placeholder {node.name!r}: FakeTensor device {fake.device} does not match "
            f"the example input device {example.device}; PrivateUse1 device propagation "
            f"through tracing is broken"
        )


def check_graph_devices(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> int:
    """Validate placeholder device metadata; returns the number of openreg inputs."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise OpenRegCompileError(
            f"graph has {len(placeholders)} placeholders but {len(example_inputs)} "
            f"example inputs were given"
        )
    openreg_inputs = 0
    for node, example in zip(placeholders, example_inputs, strict=True):
        _check_placeholder(node, example)
        if isinstance(example, torch.Tensor) and example.device.type == BACKEND_NAME:
            openreg_inputs += 1
    return openreg_inputs


def openreg_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **_: Any
) -> Callable[..., Any]:
    """The ``"openreg"`` backend: validate, clean up, run eagerly."""
    gm.graph.lint()
    openreg_inputs = check_graph_devices(gm, example_inputs)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    if log.isEnabledFor(logging.DEBUG):
        code = gm.graph.python_code(root_module="self").src
        log.debug("openreg backend: graph with %d openreg input(s):\n%s", openreg_inputs, code)
    return gm.forward


@dataclasses.dataclass(frozen=True)
class DeviceProperties:
    """What Inductor asks of a device (names as in torch.cuda's properties)."""

    name: str
    type: str
    index: int
    total_memory: int
    multi_processor_count: int


def _properties(device: torch.types.Device = None) -> DeviceProperties:
    index = torch.openreg._device_index(device)
    index = torch.openreg.current_device() if index < 0 else index
    return DeviceProperties(
        name="OpenReg simulated device",
        type=BACKEND_NAME,
        index=index,
        total_memory=0,  # host memory: no fixed capacity
        multi_processor_count=1,
    )


class OpenRegInterface(DeviceInterface):
    device = torch.openreg.device
    Event = torch.openreg.Event
    Stream = torch.openreg.Stream

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.openreg.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.openreg.current_device()

        @staticmethod
        def get_device_properties(device: torch.types.Device = None) -> DeviceProperties:
            return _properties(device)

    @staticmethod
    def current_device() -> int:
        return torch.openreg.current_device()

    @staticmethod
    def set_device(device: torch.types.Device) -> None:
        torch.openreg.set_device(device)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return torch.ops._openreg.exchange_device(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        return torch.ops._openreg.exchange_device(device)

    @staticmethod
    def device_count() -> int:
        return torch.openreg.device_count()

    @staticmethod
    def is_available() -> bool:
        return torch.openreg.is_available()

    @staticmethod
    def stream(stream: torch.Stream) -> Any:
        return torch.openreg.stream(stream)

    @staticmethod
    def current_stream() -> torch.Stream:
        return torch.openreg.current_stream()

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.openreg.set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        torch.ops._openreg.set_stream(device_index, stream_id)

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.openreg.current_stream(device_idx).stream_id

    @staticmethod
    def synchronize(device: torch.types.Device = None) -> None:
        torch.openreg.synchronize(device)

    @staticmethod
    def get_compute_capability(device: torch.types.Device = None) -> Any:
        return ""  # like the CPU: no architecture-specific code paths

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def memory_allocated(device: torch.types.Device = None) -> int:
        return torch.openreg.memory_allocated(device)


def _register(name: str = BACKEND_NAME) -> Callable[..., Any] | None:
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    if name in _COMPILER_FNS:  # re-import (e.g. importlib.reload): keep the first
        return None
    return register_backend(compiler_fn=openreg_backend, name=name)


_register()
register_interface_for_device(BACKEND_NAME, OpenRegInterface)
