"""The ``torch.openreg`` device module (registered by ``import torch_openreg``).

Mirrors the parts of ``torch.cuda`` that PyTorch's generic device code looks
up on a PrivateUse1 backend module: initialization (and fork safety), device
selection, streams and events, RNG (``torch.manual_seed`` calls
``manual_seed_all`` here), memory statistics and the AMP dtype list. All work
is forwarded to ``torch.ops._openreg`` custom ops in the C++ library.
"""

from __future__ import annotations

import collections
from typing import Any

import torch

_ops = torch.ops._openreg
_DEVICE_TYPE = "openreg"
_UINT64_MASK = (1 << 64) - 1

DeviceLike = torch.device | str | int | None

__all__ = [
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_offset",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_offset",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
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


def init() -> None:
    """Initialize OpenReg explicitly (any allocation or stream use does it
    implicitly). Raises in a child forked from an initialized process."""
    _ops.init()


def is_initialized() -> bool:
    return _ops.is_initialized()


def _lazy_init() -> None:
    _ops.init()


def _is_in_bad_fork() -> bool:
    return _ops.is_in_bad_fork()


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


# ------------------------------------------------------------------ streams


class Stream(torch.Stream):
    """An openreg stream: a FIFO of device work run by its own worker."""

    def __new__(cls, device: DeviceLike = None, priority: int = 0, **kwargs: Any) -> Stream:
        if kwargs:  # re-wrapping an existing stream (stream_id=..., ...)
            return super().__new__(cls, priority=priority, **kwargs)
        index = _device_index(device)
        target = _DEVICE_TYPE if index < 0 else torch.device(_DEVICE_TYPE, index)
        return super().__new__(cls, device=target, priority=priority)


class _EventType(type):
    """Metaclass of :class:`Event`: every ``torch.Event`` on openreg is one."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, torch.Event) and instance.device.type == _DEVICE_TYPE


class Event(torch.Event, metaclass=_EventType):
    """An openreg event (``enable_timing=True`` for ``elapsed_time``).

    Constructing one gives a plain ``torch.Event`` on openreg, not an instance
    of a subclass: from 2.15.0 on, torch's C++ event API takes only exact
    ``torch.Event`` objects as the *other* event (``elapsed_time``'s argument,
    ``Stream.record_event``'s), refusing a subclass' instances with "expected
    other to be a torch.Event object". The class still derives from
    ``torch.Event``: Dynamo captures a device's ``Event`` only if it does (see
    :mod:`.compiler`), and ``isinstance(e, torch.openreg.Event)`` holds for
    every openreg ``torch.Event`` (see :class:`_EventType`).
    """

    def __new__(  # type: ignore[misc]
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> torch.Event:
        return torch.Event(device=_DEVICE_TYPE, enable_timing=enable_timing, blocking=blocking,
                           interprocess=interprocess)


def _stream(packed: list[int]) -> Stream:
    stream_id, device_index, device_type = packed
    return Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def current_stream(device: DeviceLike = None) -> Stream:
    """The current stream of the device (this thread's; default stream 0)."""
    return _stream(_ops.current_stream(_device_index(device)))


def default_stream(device: DeviceLike = None) -> Stream:
    return _stream(_ops.default_stream(_device_index(device)))


def set_stream(stream: torch.Stream | None) -> None:
    """Make ``stream`` the current stream of its device (None: no-op)."""
    if stream is not None:
        _ops.set_stream(stream.device_index, stream.stream_id)


class stream:
    """Context manager that makes ``s`` the current stream of its device
    (and its device the current device)."""

    def __init__(self, s: torch.Stream | None) -> None:
        self.stream = s
        self.prev: list[torch.Stream] = []
        self.device = device(None if s is None else s.device_index)

    def __enter__(self) -> torch.Stream | None:
        if self.stream is not None:
            self.device.__enter__()
            self.prev.append(current_stream())
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: Any) -> bool:
        if self.stream is not None:
            set_stream(self.prev.pop())
            self.device.__exit__(*exc)
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


def get_offset(device: DeviceLike = _DEVICE_TYPE) -> int:
    """Offset of the device's default generator: 4 per random kernel run since it was seeded."""
    return _ops.get_offset(_device_index(device)) & _UINT64_MASK


def set_offset(offset: int, device: DeviceLike = _DEVICE_TYPE) -> None:
    """Move the device's default generator to `offset` (a multiple of 4): the next random
    kernel then draws what the kernel run at that offset after seeding drew."""
    _ops.set_offset(_device_index(device), _to_int64(offset))


def get_rng_state_all() -> list[torch.Tensor]:
    """The RNG state of every device: 16 bytes each, the seed then the offset."""
    return [_ops.get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    states = list(new_states)
    if len(states) != device_count():
        raise ValueError(f"Expected {device_count()} RNG states (one per openreg device), got {len(states)}")
    for index, state in enumerate(states):
        _ops.set_rng_state(index, state)


# ------------------------------------------------------------------- memory

# Order of the statistics returned by torch.ops._openreg.memory_stats.
_STAT_ARRAYS = (
    "allocation", "segment", "active", "inactive_split", "allocated_bytes",
    "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
)  # fmt: skip
_STAT_FIELDS = ("current", "peak", "allocated", "freed")
_STAT_COUNTERS = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")


def memory_stats(device: DeviceLike = None) -> collections.OrderedDict[str, int]:
    """The caching allocator's statistics, named like ``torch.cuda.memory_stats``
    (only the ``all`` pool: OpenReg has no small/large pools)."""
    values = iter(_ops.memory_stats(_device_index(device)))
    stats: dict[str, int] = {}
    for array in _STAT_ARRAYS:
        for field in _STAT_FIELDS:
            stats[f"{array}.all.{field}"] = next(values)
    for counter in _STAT_COUNTERS:
        stats[counter] = next(values)
    return collections.OrderedDict(sorted(stats.items()))


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes of device memory occupied by tensors (in allocator blocks)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes held by the caching allocator (allocated plus cached)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: DeviceLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    _ops.reset_peak_memory_stats(_device_index(device))


def reset_accumulated_memory_stats(device: DeviceLike = None) -> None:
    _ops.reset_accumulated_memory_stats(_device_index(device))


def empty_cache() -> None:
    """Return every cached, unused block to the device runtime."""
    _ops.empty_cache()


def _allocation_count(device: DeviceLike = None) -> int:
    """Number of live runtime allocations on the device (for leak checks)."""
    return _ops.allocation_count(_device_index(device))


class _StreamBlock:
    """Holds a stream at its current end until released: work queued on it
    afterwards stays pending, which lets tests observe asynchrony and
    ordering deterministically, without sleeping. Use as a context manager."""

    def __init__(self, s: torch.Stream) -> None:
        self._handle: int | None = _ops.block_stream(s.device_index, s.stream_id)

    def release(self) -> None:
        if self._handle is not None:
            _ops.release_stream_block(self._handle)
            self._handle = None

    def __enter__(self) -> _StreamBlock:
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.release()
        return False


# ---------------------------------------------------------------------- AMP


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


# ----------------------------------------------------------------- Inductor

_INDUCTOR_HOOKS = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")


def __getattr__(name: str) -> Any:
    # Inductor looks these up on the device module the first time it
    # compiles for openreg; importing Inductor only then keeps
    # `import torch_openreg` light.
    if name in _INDUCTOR_HOOKS:
        from . import inductor

        return inductor.DEVICE_MODULE_HOOKS[name]
    raise AttributeError(f"module 'torch.openreg' has no attribute {name!r}")
