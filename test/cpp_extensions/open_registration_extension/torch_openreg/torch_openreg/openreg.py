"""The ``torch.openreg`` device module (registered by ``import torch_openreg``).

Mirrors the parts of ``torch.cuda`` that PyTorch's generic device code looks
up on a PrivateUse1 backend module: device selection, RNG (``torch.manual_seed``
calls ``manual_seed_all`` here), memory statistics and the AMP dtype list.
All work is forwarded to ``torch.ops._openreg`` custom ops in the C++ library.
"""

from __future__ import annotations

from typing import Any, Union

import torch

_ops = torch.ops._openreg
_DEVICE_TYPE = "openreg"
_UINT64_MASK = (1 << 64) - 1

DeviceLike = Union[torch.device, str, int, None]

__all__ = [
    "current_device",
    "device",
    "device_count",
    "get_amp_supported_dtype",
    "get_rng_state",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "synchronize",
]


def _device_index(device: DeviceLike, *, optional: bool = True) -> int:
    """Index of an openreg device; -1 ("current") for None when optional."""
    if device is None:
        if optional:
            return -1
        raise ValueError("Expected an openreg device, got None")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if not isinstance(device, torch.device):
        raise TypeError(f"Expected a torch.device, str or int, got {type(device).__name__}")
    if device.type != _DEVICE_TYPE:
        raise ValueError(f"Expected an openreg device, got {device}")
    return -1 if device.index is None else device.index


def _to_int64(seed: int) -> int:
    # Op schemas only carry int64; seeds are uint64 like torch.Generator's.
    seed = int(seed) & _UINT64_MASK
    return seed - (1 << 64) if seed >= (1 << 63) else seed


# ------------------------------------------------------------------ devices


def is_available() -> bool:
    return device_count() > 0


def device_count() -> int:
    return _ops.device_count()


def current_device() -> int:
    return _ops.current_device()


def set_device(device: DeviceLike) -> None:
    index = _device_index(device)
    if index >= 0:
        _ops.set_device(index)


def synchronize(device: DeviceLike = None) -> None:
    _ops.synchronize(_device_index(device))


def is_initialized() -> bool:
    return True  # the runtime initializes itself when the library loads


def _lazy_init() -> None:
    pass


def _is_in_bad_fork() -> bool:
    return False


class device:
    """Context manager that makes ``idx`` the current openreg device."""

    def __init__(self, device: DeviceLike) -> None:
        self.idx = _device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx >= 0:
            self.prev_idx = _ops.exchange_device(self.idx)

    def __exit__(self, *exc: Any) -> bool:
        if self.prev_idx >= 0:
            _ops.set_device(self.prev_idx)
        return False


# ---------------------------------------------------------------------- RNG


def manual_seed(seed: int) -> None:
    """Seed the current device's default generator."""
    _ops.manual_seed(-1, _to_int64(seed))


def manual_seed_all(seed: int) -> None:
    for index in range(device_count()):
        _ops.manual_seed(index, _to_int64(seed))


def seed() -> None:
    _ops.seed(-1)


def seed_all() -> None:
    value = _ops.seed(-1) & _UINT64_MASK
    manual_seed_all(value)


def initial_seed() -> int:
    return _ops.initial_seed(-1) & _UINT64_MASK


def get_rng_state(device: DeviceLike = _DEVICE_TYPE) -> torch.Tensor:
    return _ops.get_rng_state(_device_index(device))


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = _DEVICE_TYPE) -> None:
    _ops.set_rng_state(_device_index(device), new_state)


# ------------------------------------------------------------------- memory


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes currently allocated on the device (live tensor storage)."""
    return _ops.memory_allocated(_device_index(device))


def max_memory_allocated(device: DeviceLike = None) -> int:
    return _ops.max_memory_allocated(_device_index(device))


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    _ops.reset_peak_memory_stats(_device_index(device))


def _allocation_count(device: DeviceLike = None) -> int:
    """Number of live allocations on the device (for leak checks)."""
    return _ops.allocation_count(_device_index(device))


# ---------------------------------------------------------------------- AMP


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]
