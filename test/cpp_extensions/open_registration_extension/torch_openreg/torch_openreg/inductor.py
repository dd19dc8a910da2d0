"""Inductor integration: ``torch.compile(backend="inductor")`` on openreg.

OpenReg device memory is host memory that only OpenReg's own code touches,
so Inductor's C++ (CPU) code generator can serve as the device compiler:
its kernels take raw pointers and run in the host process. What makes them
"device" kernels is done here:

* :class:`OpenRegWrapperCodegen` is Inductor's Python wrapper for the
  device: it runs each generated C++ kernel inside :func:`device_access`,
  which waits for the current stream of the kernel's device (so the kernel
  sees every queued copy and kernel before it: OpenReg work runs
  asynchronously on stream workers) and opens a device access window
  (device memory is not host-accessible otherwise).
* :class:`OpenRegDeviceOpOverrides`: the device snippets of that wrapper.
* :class:`OpenRegScheduling`: ``CppScheduling``, made to generate code as
  for the CPU (see its doc).

Inductor finds this module lazily, through the hook it has for PrivateUse1
backends: on first use it asks the device module (``torch.openreg``) for
``Scheduling``, ``PythonWrapperCodegen``, ``CppWrapperCodegen`` and
``WrapperFxCodegen`` (``torch._inductor.codegen.common.init_backend_registration``);
``torch.openreg`` answers by importing this module, so ``import torch_openreg``
does not pay for importing Inductor. Dynamo's ``DeviceInterface`` lives in
:mod:`.compiler`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch._inductor.codegen.common import (
    DeviceOpOverrides,
    get_device_op_overrides,
    register_device_op_overrides,
)
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

from .compiler import OpenRegInterface

BACKEND_NAME = "openreg"


class OpenRegDeviceOpOverrides(DeviceOpOverrides):
    """The Python snippets Inductor's wrapper emits for device handling."""

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from torch_openreg.inductor import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.openreg.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.openreg.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.openreg.device({device_idx})"


def get_raw_stream(device_idx: int) -> int:
    """Inductor's stream handle for the device: the current stream's id."""
    return OpenRegInterface.get_raw_stream(device_idx)


@contextlib.contextmanager
def device_access(device_index: int) -> Iterator[None]:
    """Wraps each generated C++ kernel call (see the module doc)."""
    torch.ops._openreg.device_access_begin(device_index)
    try:
        yield
    finally:
        torch.ops._openreg.device_access_end()


class OpenRegWrapperCodegen(PythonWrapperCodegen):
    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: PythonWrapperCodegen | None,
        partition_signatures: Any | None = None,
    ) -> PythonWrapperCodegen:
        if is_subgraph:
            # Subgraphs (cond/while bodies) share the parent's header.
            return PythonWrapperCodegen.create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures)
        return OpenRegWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.splice("from torch_openreg.inductor import device_access", strip=True)

    def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, *, device: Any = None,
                                     triton: bool = True, **kwargs: Any) -> None:
        device = device or torch._inductor.virtualized.V.graph.get_current_device_or_throw()
        if device.type != BACKEND_NAME:
            super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton, **kwargs)
            return
        index = -1 if device.index is None else device.index
        self.writeline(f"with device_access({index}): {self.wrap_kernel_call(kernel_name, call_args)}")


# The Scheduler's loop rewrites made while it pairs nodes up for fusion, each
# refused for CPU nodes (``node.is_cpu()``) because the C++ kernel generator
# does not support them, with what each returns when refusing. Those that a
# torch does not have are left alone: 2.9.1 has only the first.
_CPP_UNSUPPORTED_LOOP_REWRITES: dict[str, Any] = {
    "shared_data_after_reordering_loop": -1,  # (node1, node2) -> score; -1: not done
    "shared_data_after_inverting_indexing": -1,  # (node1, node2) -> score; -1: not done
    "_try_reindex_pointwise_for_reduction": False,  # (node1, node2) -> reindexed?
    "_selected_tiling_memory": None,  # (nodes) -> Triton tiling cost; None: unknown
}


def _on_openreg(args: Any) -> bool:
    """Whether a scheduler node among ``args`` (nodes, or lists of nodes) runs on openreg."""
    nodes = [n for arg in args for n in (arg if isinstance(arg, (list, tuple)) else (arg,))]
    return any(
        (device := leaf.get_device()) is not None and device.type == BACKEND_NAME
        for node in nodes
        if hasattr(node, "get_nodes")
        for leaf in node.get_nodes()
    )


def _refuse_loop_rewrites_on_openreg(scheduler: Any) -> None:
    """Make ``scheduler`` refuse OpenReg's nodes the loop rewrites it refuses
    the CPU's (:data:`_CPP_UNSUPPORTED_LOOP_REWRITES`): it tells the two apart
    by device type, but OpenReg's kernels come from the same C++ generator.
    On 2.15.0, reindexing a pointwise for a reduction read an OpenReg node's
    C++ loop groups (a pair of size tuples) as Triton's (numel, rnumel) and
    failed ("can't multiply sequence by non-int of type 'tuple'")."""
    if getattr(scheduler, "_openreg_loop_rewrites_refused", False):
        return  # one backend per openreg device, all for the same scheduler
    scheduler._openreg_loop_rewrites_refused = True
    for name, refused in _CPP_UNSUPPORTED_LOOP_REWRITES.items():
        rewrite = getattr(scheduler, name, None)
        if rewrite is None:
            continue

        def refusing(*args: Any, _rewrite: Any = rewrite, _refused: Any = refused, **kwargs: Any) -> Any:
            return _refused if _on_openreg((*args, *kwargs.values())) else _rewrite(*args, **kwargs)

        setattr(scheduler, name, refusing)


class OpenRegScheduling(CppScheduling):
    """Inductor's C++ kernel generator for openreg.

    On 2.9.1, ``torch._inductor.utils.get_current_backend`` reports
    ``config.cuda_backend`` ("triton") for every device but the CPU and MPS,
    and the C++ kernel code generator consults it (e.g. for the result type
    of ``masked`` in ``codegen/common.py``), so kernels with masked loads
    failed to generate. While generating OpenReg's kernels, the backend is
    therefore named as what it is: "cpp".

    The Scheduler it serves refuses OpenReg's nodes the loop rewrites that
    the C++ generator does not support, as it does the CPU's
    (:func:`_refuse_loop_rewrites_on_openreg`).
    """

    def __init__(self, scheduler: Any) -> None:
        super().__init__(scheduler)
        if scheduler is not None:
            _refuse_loop_rewrites_on_openreg(scheduler)

    def codegen_node(self, node: Any) -> None:
        with torch._inductor.config.patch(cuda_backend="cpp"):
            super().codegen_node(node)

    def codegen_template(self, *args: Any, **kwargs: Any) -> Any:
        with torch._inductor.config.patch(cuda_backend="cpp"):
            return super().codegen_template(*args, **kwargs)

    def flush(self) -> None:
        with torch._inductor.config.patch(cuda_backend="cpp"):
            super().flush()


class OpenRegCppWrapperCodegen(PythonWrapperCodegen):
    """``cpp_wrapper=True`` would need a C++ wrapper that synchronizes the
    stream before each kernel; not provided, so refuse clearly."""

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> PythonWrapperCodegen:
        raise NotImplementedError(
            "torch._inductor.config.cpp_wrapper=True is not supported on openreg: "
            "compile with the default Python wrapper"
        )


# What Inductor asks the device module for, by name (see the module doc).
DEVICE_MODULE_HOOKS: dict[str, type] = {
    "Scheduling": OpenRegScheduling,
    "PythonWrapperCodegen": OpenRegWrapperCodegen,
    "CppWrapperCodegen": OpenRegCppWrapperCodegen,
    "WrapperFxCodegen": WrapperFxCodegen,
}

# The built-in op overrides register lazily, on the first lookup: do that
# first, or ours would keep them from ever being registered.
get_device_op_overrides("cpu")
register_device_op_overrides(BACKEND_NAME, OpenRegDeviceOpOverrides())
