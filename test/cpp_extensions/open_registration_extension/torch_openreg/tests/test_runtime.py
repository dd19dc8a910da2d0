# Owner(s): ["module: PrivateUse1"]
"""Eager-mode behaviour of the OpenReg backend: copies, devices and the device
guard, memory accounting, RNG, error handling and device-mixing rules.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import ctypes
import gc
import os
import signal
import subprocess
import sys
import unittest

import torch
import torch_openreg
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
)
from torch.testing._internal.common_utils import run_tests, TestCase


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Raw bit pattern of a tensor, so NaN payloads and -0.0 compare exactly."""
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.contiguous().view(torch.uint8)


class TestOpenRegCopies(TestCase):
    @dtypes(
        torch.float32, torch.float64, torch.float16, torch.bfloat16,
        torch.int8, torch.int64, torch.uint8, torch.bool, torch.complex64,
    )  # fmt: skip
    def test_round_trip_is_bit_exact(self, device, dtype):
        if dtype.is_floating_point:
            src = torch.randn(37, 5).to(dtype)
            src[0, 0] = float("nan")
            src[0, 1] = -0.0
            src[0, 2] = float("inf")
        elif dtype == torch.bool:
            src = torch.rand(37, 5) > 0.5
        elif dtype.is_complex:
            src = torch.randn(37, 5, dtype=dtype)
        else:
            src = torch.randint(-100 if dtype.is_signed else 0, 100, (37, 5), dtype=dtype)
        dev = src.to(device)
        self.assertEqual(dev.device.type, "openreg")
        self.assertEqual(dev.dtype, dtype)
        back = dev.cpu()
        self.assertTrue(torch.equal(_bits(back), _bits(src)))

    def test_non_contiguous_sources_and_destinations(self, device):
        src = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
        dev = src.to(device)
        self.assertEqual(dev.transpose(0, 2).cpu(), src.transpose(0, 2), atol=0, rtol=0)
        self.assertEqual(dev[:, 1:, ::2].cpu(), src[:, 1:, ::2], atol=0, rtol=0)
        self.assertEqual(dev.expand(2, 3, 4, 5).cpu(), src.expand(2, 3, 4, 5), atol=0, rtol=0)
        # Copy into a strided view of a device tensor: only the view changes.
        dst = torch.zeros(3, 4, 5, device=device)
        dst[:, :, 1].copy_(torch.ones(3, 4))
        expected = torch.zeros(3, 4, 5)
        expected[:, :, 1] = 1
        self.assertEqual(dst.cpu(), expected, atol=0, rtol=0)

    def test_dtype_conversion_during_copy(self, device):
        src = torch.arange(10, dtype=torch.int32)
        self.assertEqual(src.to(device, torch.float64).cpu(), src.double(), atol=0, rtol=0)
        self.assertEqual(src.to(device).to(torch.float16).cpu(), src.half(), atol=0, rtol=0)

    def test_views_share_device_storage(self, device):
        base = torch.zeros(4, 6, device=device)
        base[1].fill_(3.0)  # select -> as_strided view, fill_ kernel
        base[:, 2].add_(1.0)  # non-dense view through the CPU fallback
        base.view(24)[0] = 7.0
        expected = torch.zeros(4, 6)
        expected[1] = 3.0
        expected[:, 2] += 1.0
        expected.view(24)[0] = 7.0
        self.assertEqual(base.cpu(), expected, atol=0, rtol=0)

    def test_resize_and_set(self, device):
        t = torch.empty(0, device=device)
        t.resize_(3, 4)
        t.fill_(2.0)
        self.assertEqual(t.cpu(), torch.full((3, 4), 2.0))
        alias = torch.empty(0, device=device).set_(t)
        alias.add_(1.0)
        self.assertEqual(t.cpu(), torch.full((3, 4), 3.0))
        self.assertEqual(alias.untyped_storage().data_ptr(), t.untyped_storage().data_ptr())

    def test_scalar_reads(self, device):
        x = torch.tensor([1.5, -2.0], device=device)
        self.assertEqual(x[0].item(), 1.5)
        self.assertEqual(x.sum().item(), -0.5)
        self.assertTrue(bool(x.lt(0).any()))

    def test_eager_autograd(self, device):
        x = torch.randn(5, 3)
        w = torch.randn(3, 2)
        xd = x.to(device).requires_grad_()
        wd = w.to(device).requires_grad_()
        (xd @ wd).relu().sum().backward()
        xc = x.clone().requires_grad_()
        wc = w.clone().requires_grad_()
        (xc @ wc).relu().sum().backward()
        self.assertEqual(xd.grad.device.type, "openreg")
        self.assertEqual(xd.grad.cpu(), xc.grad)
        self.assertEqual(wd.grad.cpu(), wc.grad)


# except_for rather than only_for="openreg": see tests/test_compile.py.
instantiate_device_type_tests(TestOpenRegCopies, globals(), except_for=("cpu", "cuda"))


# The runtime simulates 2 devices unless OPENREG_DEVICE_COUNT says otherwise.
needs_two_devices = unittest.skipIf(torch.openreg.device_count() < 2, "needs 2 openreg devices")


class TestOpenRegDevices(TestCase):
    def test_device_module(self):
        self.assertIs(torch.openreg, torch.get_device_module("openreg"))
        self.assertTrue(torch.openreg.is_available())
        self.assertEqual(torch.openreg.device_count(), int(os.environ.get("OPENREG_DEVICE_COUNT", "2")))
        self.assertEqual(torch._C._get_privateuse1_backend_name(), "openreg")
        x = torch.ones(2).openreg()
        self.assertTrue(x.is_openreg)
        self.assertFalse(torch.ones(2).is_openreg)
        m = torch.nn.Linear(2, 2).openreg()
        self.assertEqual(m.weight.device.type, "openreg")

    @needs_two_devices
    def test_two_devices_and_guard(self):
        self.assertGreaterEqual(torch.openreg.device_count(), 2)
        self.assertEqual(torch.openreg.current_device(), 0)
        with torch.openreg.device(1):
            self.assertEqual(torch.openreg.current_device(), 1)
            t = torch.ones(3, device="openreg")  # no index: the current device
        self.assertEqual(torch.openreg.current_device(), 0)
        self.assertEqual(t.device, torch.device("openreg", 1))
        # Ops run on their inputs' device, whatever the current device is.
        self.assertEqual((t + 1).device, torch.device("openreg", 1))
        # Device-to-device copy.
        u = t.to("openreg:0")
        self.assertEqual(u.device, torch.device("openreg", 0))
        self.assertEqual(u.cpu(), torch.ones(3))
        torch.openreg.set_device(1)
        try:
            self.assertEqual(torch.empty(1, device="openreg").device.index, 1)
        finally:
            torch.openreg.set_device(0)
        # The C++ device guard restores the device after a kernel that used it.
        with torch.openreg.device(1):
            torch.zeros(2, device="openreg:0")
            self.assertEqual(torch.openreg.current_device(), 1)

    @needs_two_devices
    def test_memory_accounting_per_device(self):
        torch.openreg.synchronize()
        gc.collect()
        torch.openreg.empty_cache()
        before = [torch.openreg.memory_allocated(i) for i in range(2)]
        segments_before = torch.openreg._allocation_count(0)
        torch.openreg.reset_peak_memory_stats(0)
        a = torch.randn(256, 256).to("openreg:0")
        b = torch.empty(1000, dtype=torch.float64, device="openreg:1")
        # Blocks are rounded up to 512 bytes.
        self.assertEqual(torch.openreg.memory_allocated(0), before[0] + 256 * 256 * 4)
        self.assertEqual(torch.openreg.memory_allocated(1), before[1] + 8192)
        c = (a @ a).relu()  # results of fallback ops are device allocations too
        self.assertGreater(torch.openreg.memory_allocated(0), before[0] + 256 * 256 * 4)
        peak = torch.openreg.max_memory_allocated(0)
        self.assertGreaterEqual(peak, torch.openreg.memory_allocated(0))
        # The generic accelerator API reads the same DeviceAllocator.
        self.assertEqual(torch.accelerator.memory_allocated(0), torch.openreg.memory_allocated(0))
        self.assertEqual(torch.accelerator.memory_stats(0)["allocated_bytes.all.peak"], peak)
        del a, b, c
        torch.openreg.synchronize()  # queued work may still hold the blocks
        gc.collect()
        self.assertEqual([torch.openreg.memory_allocated(i) for i in range(2)], before)
        # Freed blocks stay cached (reserved) until empty_cache.
        self.assertGreater(torch.openreg.memory_reserved(0), torch.openreg.memory_allocated(0))
        self.assertEqual(torch.openreg.max_memory_allocated(0), peak)
        torch.accelerator.empty_cache()
        self.assertEqual(torch.openreg.memory_reserved(0), torch.openreg.memory_allocated(0))
        self.assertEqual(torch.openreg._allocation_count(0), segments_before)
        torch.accelerator.reset_peak_memory_stats(0)
        self.assertEqual(torch.openreg.max_memory_allocated(0), torch.openreg.memory_allocated(0))

    def test_cached_blocks_are_reused(self):
        torch.openreg.synchronize()
        torch.openreg.empty_cache()
        x = torch.empty(1024, device="openreg")
        segments = torch.openreg.memory_stats()["segment.all.current"]
        del x
        y = torch.empty(1000, device="openreg")  # fits the freed block
        self.assertEqual(torch.openreg.memory_stats()["segment.all.current"], segments)
        self.assertGreater(torch.openreg.memory_stats()["num_device_alloc"], 0)
        del y

    def test_manual_seed_determinism(self):
        torch.manual_seed(123)
        a = torch.randn(16, device="openreg")
        b = torch.rand(4, 4, device="openreg").bernoulli()
        torch.manual_seed(123)
        self.assertEqual(torch.randn(16, device="openreg").cpu(), a.cpu(), atol=0, rtol=0)
        self.assertEqual(torch.rand(4, 4, device="openreg").bernoulli().cpu(), b.cpu(), atol=0, rtol=0)
        # The device generator is independent of the CPU one.
        torch.openreg.manual_seed(7)
        c = torch.randn(16, device="openreg")
        torch.manual_seed(99)  # reseeds openreg too (manual_seed_all)
        torch.openreg.manual_seed(7)
        torch.randn(3)  # consumes CPU randomness only
        self.assertEqual(torch.randn(16, device="openreg").cpu(), c.cpu(), atol=0, rtol=0)
        self.assertEqual(torch.openreg.initial_seed(), 7)
        self.assertFalse(torch.equal(c.cpu(), a.cpu()))
        # RNG state round trip and explicit generators.
        state = torch.openreg.get_rng_state()
        d = torch.randn(8, device="openreg")
        torch.openreg.set_rng_state(state)
        self.assertEqual(torch.randn(8, device="openreg").cpu(), d.cpu(), atol=0, rtol=0)
        g = torch.Generator(device="openreg")
        self.assertEqual(g.device.type, "openreg")
        g.manual_seed(5)
        e = torch.randn(8, device="openreg", generator=g)
        g.manual_seed(5)
        self.assertEqual(torch.randn(8, device="openreg", generator=g).cpu(), e.cpu(), atol=0, rtol=0)

    def test_storages(self):
        s = torch.UntypedStorage(16, device="openreg")
        self.assertEqual((s.device.type, s.nbytes()), ("openreg", 16))
        moved = torch.arange(4, dtype=torch.float32).untyped_storage().openreg()
        self.assertTrue(moved.is_openreg)
        moved.resize_(32)  # grows on the device, keeping the first 16 bytes
        view = torch.tensor([], device="openreg").set_(moved)
        self.assertEqual(view[:4].cpu(), torch.arange(4.0))
        self.assertEqual(moved.cpu()[:16].tolist(), torch.arange(4.0).untyped_storage().tolist())
        t = torch.ones(3, device="openreg")
        t.untyped_storage().fill_(0)  # storage writes reach the tensor
        self.assertEqual(t.cpu(), torch.zeros(3))

    def test_invalid_device_index_raises(self):
        msg = f"The device index is out of range: invalid openreg device index 7, there are {torch.openreg.device_count()} openreg device"
        with self.assertRaisesRegex(RuntimeError, msg):
            torch.empty(3, device="openreg:7")
        with self.assertRaisesRegex(RuntimeError, msg):
            torch.ones(3).to("openreg:7")
        with self.assertRaisesRegex(RuntimeError, "out of range: invalid openreg device index 9"):
            torch.openreg.set_device(9)
        with self.assertRaisesRegex(RuntimeError, "The device index is out of range"):
            torch.openreg.memory_allocated(42)
        with self.assertRaisesRegex(RuntimeError, "The device index is out of range"):
            with torch.openreg.device(3):
                pass
        # Nothing was left half-switched.
        self.assertEqual(torch.openreg.current_device(), 0)
        self.assertEqual(torch.ones(2, device="openreg").cpu(), torch.ones(2))

    def test_device_mixing_like_an_accelerator(self):
        x = torch.ones(3, 4, device="openreg")
        mismatch = "Expected all tensors to be on the same device, but found at least two devices"
        with self.assertRaisesRegex(RuntimeError, mismatch):
            x + torch.ones(3, 4)
        with self.assertRaisesRegex(RuntimeError, mismatch):
            x.add_(torch.ones(4))
        with self.assertRaisesRegex(RuntimeError, mismatch):
            torch.cat([x, torch.ones(3, 4)])
        with self.assertRaisesRegex(RuntimeError, mismatch):
            x.mm(torch.ones(4, 2))
        if torch.openreg.device_count() >= 2:
            with self.assertRaisesRegex(RuntimeError, mismatch):
                x + torch.ones(3, 4, device="openreg:1")
        # 0-dim CPU tensors behave like Python scalars.
        y = x * torch.tensor(2.5)
        self.assertEqual(y.device, x.device)
        self.assertEqual(y.cpu(), torch.full((3, 4), 2.5))
        self.assertEqual(torch.where(x > 0, x, torch.tensor(0.0)).device, x.device)
        # Explicit transfers are always fine.
        self.assertEqual((x.cpu() + torch.ones(3, 4)).sum().item(), 24.0)


class TestOpenRegRuntimeLayer(TestCase):
    """The C runtime under the integration: its checks are what keep the
    c10 layer honest (copies must name real device ranges)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        lib = os.path.join(os.path.dirname(torch_openreg.__file__), "lib", "libopenreg_runtime.so")
        cls.rt = ctypes.CDLL(lib)
        cls.rt.orMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        cls.rt.orFree.argtypes = [ctypes.c_void_p]
        cls.rt.orMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        cls.rt.orGetErrorString.restype = ctypes.c_char_p

    def test_copies_are_range_checked(self):
        H2D, D2H = 1, 2
        ptr = ctypes.c_void_p()
        self.assertEqual(self.rt.orMalloc(ctypes.byref(ptr), 16), 0)
        host = ctypes.create_string_buffer(b"0123456789abcdef", 16)
        out = ctypes.create_string_buffer(16)
        self.assertEqual(self.rt.orMemcpy(ptr, host, 16, H2D), 0)
        self.assertEqual(self.rt.orMemcpy(out, ptr, 16, D2H), 0)
        self.assertEqual(out.raw, host.raw)
        # Out of bounds and host-as-device are refused, not performed.
        self.assertEqual(self.rt.orMemcpy(ptr, host, 17, H2D), 4)
        self.assertEqual(self.rt.orMemcpy(out, host, 4, D2H), 4)
        self.assertEqual(self.rt.orFree(ptr), 0)
        self.assertEqual(self.rt.orFree(ptr), 4)  # double free is detected
        self.assertEqual(self.rt.orGetErrorString(4), b"invalid device pointer")

    def test_device_memory_is_not_host_accessible(self):
        # Like a real accelerator: a host read of a device pointer faults.
        code = (
            "import ctypes, torch, torch_openreg\n"
            "t = torch.ones(4, device='openreg')\n"
            "torch.openreg.synchronize()\n"
            "print(ctypes.string_at(t.data_ptr(), 4))\n"
        )
        # cwd: the staged package's parent, so `-c` cannot pick up the
        # unbuilt source package from the current directory instead.
        staged = os.path.dirname(os.path.dirname(torch_openreg.__file__))
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=staged
        )
        self.assertEqual(proc.returncode, -signal.SIGSEGV, proc.stdout + proc.stderr)
        # Inside an access window (what OpenReg's kernels use) it is readable.
        t = torch.full((4,), 2.0, device="openreg")
        torch.openreg.synchronize()
        self.assertEqual(self.rt.orDeviceAccessBegin(), 0)
        try:
            raw = ctypes.string_at(t.data_ptr(), 16)
        finally:
            self.assertEqual(self.rt.orDeviceAccessEnd(), 0)
        self.assertEqual(torch.frombuffer(bytearray(raw), dtype=torch.float32), torch.full((4,), 2.0))
        self.assertEqual(self.rt.orDeviceAccessEnd(), 1)  # unbalanced End is refused


if __name__ == "__main__":
    run_tests()
