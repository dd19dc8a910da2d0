"""OpenReg: PyTorch's reference PrivateUse1 backend, built for the test suite.

Importing this package
  * loads the compiled backend (``lib/libtorch_openreg.so``), which registers
    the allocator, device guard, hooks, ATen kernels and the CPU fallback for
    the PrivateUse1 dispatch key,
  * renames PrivateUse1 to ``"openreg"``,
  * registers ``torch.openreg`` (device, RNG, memory and AMP functions),
  * generates ``Tensor.openreg()`` / ``Tensor.is_openreg`` / ``Module.openreg()``,
  * registers the autograd formulas of ``torch.ops.openreg.*`` (:mod:`.custom_ops`),
  * registers the ``"openreg"`` torch.compile backend and Dynamo's
    ``DeviceInterface`` (:mod:`.compiler`) as soon as ``torch._dynamo`` is
    imported, not before: importing Dynamo costs seconds, and with autoload
    this package is imported by every ``import torch``.

Inductor support (:mod:`.inductor`) is found by Inductor itself, through
``torch.openreg``. ``_autoload`` is the target for the ``torch.backends``
entry point (``torch_openreg:_autoload``).

The package is staged by the CMake build (``python -m torch_overlay.artifacts.openreg``);
put the staging directory (``<build dir>/python``) on ``sys.path``.
"""

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import ModuleType


def _autoload() -> None:
    """The `torch.backends` entry point: importing this package did the registering.

    Defined before `import torch`: when this package is imported first, that import autoloads
    the entry point while this module is still half-initialised.
    """


import torch  # noqa: E402

BACKEND_NAME = "openreg"
_LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
_LIBRARY = os.path.join(_LIB_DIR, "libtorch_openreg.so")


def _load_library() -> None:
    if not os.path.exists(_LIBRARY):
        raise ImportError(
            f"torch_openreg is not built: {_LIBRARY} does not exist. Build it with "
            "`python -m torch_overlay.artifacts.openreg --torch-dir <torch pkg dir> --build-dir <dir>` "
            "and put <dir>/python on sys.path."
        )
    torch.ops.load_library(_LIBRARY)


def _register_backend() -> None:
    # Renaming is process-wide and can only happen once; importing twice (or
    # after someone else renamed it to "openreg") is fine.
    if torch._C._get_privateuse1_backend_name() != BACKEND_NAME:
        torch.utils.rename_privateuse1_backend(BACKEND_NAME)
    from . import openreg as _device_module

    if getattr(torch, BACKEND_NAME, None) is not _device_module:
        torch._register_device_module(BACKEND_NAME, _device_module)
    if not hasattr(torch.Tensor, BACKEND_NAME):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )


class _AfterDynamoImport(importlib.abc.MetaPathFinder):
    """Imports :mod:`.compiler` right after ``torch._dynamo`` finishes
    importing (one shot), so the Dynamo registrations exist before any
    compilation without making ``import torch_openreg`` import Dynamo."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            from . import compiler  # noqa: F401

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _register_dynamo_parts() -> None:
    if "torch._dynamo" in sys.modules:
        from . import compiler  # noqa: F401
    elif not any(isinstance(finder, _AfterDynamoImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterDynamoImport())


_load_library()
_register_backend()
_register_dynamo_parts()

from . import custom_ops  # noqa: E402,F401  (autograd of torch.ops.openreg.*)
from .openreg import (  # noqa: E402,F401
    current_device,
    device_count,
    is_available,
    manual_seed,
    memory_allocated,
    set_device,
)
