"""Python side of OpenReg's own operators, ``torch.ops.openreg.*``.

The operators and their device and Meta kernels are defined in C++
(csrc/aten/OpenRegKernels.cpp); this module adds what is most naturally written
in Python, as a backend author would: the autograd formula of
``custom_abs``. (``custom_flat_view`` needs none: it is built from ``view``,
which autograd already knows, and returns an alias of its input.)
"""

from __future__ import annotations

from typing import Any

import torch


def _setup_context(ctx: Any, inputs: tuple[torch.Tensor], output: torch.Tensor) -> None:
    (x,) = inputs
    ctx.save_for_backward(x)


def _custom_abs_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (x,) = ctx.saved_tensors
    return grad * x.sgn()


torch.library.register_autograd("openreg::custom_abs", _custom_abs_backward, setup_context=_setup_context)
