# Owner(s): ["module: PrivateUse1"]
"""Operators on OpenReg beyond the OpInfo sweep: factories, the kernels
OpenReg implements itself (``empty*``, ``set_``, ``resize_``, ``fill_``,
copies, ``custom_abs``), the boxed CPU fallback (tensor lists, scalars,
out= with strides), fake tensors on the device, and the errors a device
refuses with: mixing devices in one op, and an operator neither OpenReg nor
the CPU has a kernel for.

Needs the built package on sys.path (``python -m torch_overlay.openreg``).
"""

import torch
import torch_openreg  # noqa: F401
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.testing._internal.common_utils import TestCase, run_tests

FACTORIES = {
    "empty": lambda **kw: torch.empty(2, 3, **kw),
    "empty_strided": lambda **kw: torch.empty_strided((2, 3), (1, 2), **kw),
    "zeros": lambda **kw: torch.zeros(2, 3, **kw),
    "ones": lambda **kw: torch.ones(2, 3, **kw),
    "full": lambda **kw: torch.full((2, 3), 1.5, **kw),
    "arange": lambda **kw: torch.arange(6, **kw),
    "eye": lambda **kw: torch.eye(3, **kw),
    "tensor": lambda **kw: torch.tensor([[1.0, 2.0]], **kw),
    "triu_indices": lambda **kw: torch.triu_indices(3, 3, **kw),
    "empty_tuple": lambda **kw: torch.tensor((), **kw),
}


class TestOpenRegFactories(TestCase):
    def test_factories_match_cpu(self):
        for name, make in FACTORIES.items():
            with self.subTest(factory=name):
                t = make(device="openreg")
                ref = make()
                self.assertEqual(t.device, torch.device("openreg", 0))
                self.assertEqual((t.shape, t.stride(), t.dtype), (ref.shape, ref.stride(), ref.dtype))
                if name not in ("empty", "empty_strided"):
                    self.assertEqual(t.cpu(), ref)

    def test_memory_formats_and_names(self):
        x = torch.empty(1, 2, 3, 4, device="openreg", memory_format=torch.channels_last)
        self.assertTrue(x.is_contiguous(memory_format=torch.channels_last))
        named = torch.empty(2, 3, device="openreg", names=("N", "C"))
        self.assertEqual(named.names, ("N", "C"))

    def test_fake_tensors_keep_the_device(self):
        with FakeTensorMode():
            x = torch.empty(3, 3, device="openreg")
            y = torch.empty(3, 3, device="openreg:0")
            z = x @ y + 1
        self.assertEqual(z.device, torch.device("openreg", 0))
        self.assertEqual(z.shape, (3, 3))


class TestOpenRegOwnKernels(TestCase):
    def test_set_resize_fill_and_views(self):
        x = torch.arange(12.0, device="openreg")
        y = torch.empty(0, device="openreg").set_(x.untyped_storage(), 2, (2, 3), (3, 1))
        self.assertEqual(y.cpu(), torch.arange(12.0)[2:8].view(2, 3))
        y.fill_(-1.0)
        self.assertEqual(x.cpu()[:9].tolist(), [0, 1, -1, -1, -1, -1, -1, -1, 8])
        x.resize_(2, 2)  # shrinking keeps the storage
        self.assertEqual(x.untyped_storage().nbytes(), 48)
        self.assertEqual(torch.as_strided(x, (2,), (2,)).cpu(), torch.tensor([0.0, -1.0]))
        self.assertEqual(x.expand(3, 2, 2).data_ptr(), x.data_ptr())

    def test_copies_between_devices_and_dtypes(self):
        src = torch.randn(4, 5)
        on_last = src.to(f"openreg:{torch.openreg.device_count() - 1}")
        self.assertEqual(on_last.to("openreg:0").cpu(), src)
        doubles = torch.empty(4, 5, dtype=torch.float64, device="openreg")
        doubles.copy_(on_last.to("openreg:0"), non_blocking=True)
        self.assertEqual(doubles.cpu(), src.double())
        self.assertNotEqual(on_last.clone().data_ptr(), on_last.data_ptr())

    def test_custom_abs(self):
        x = torch.tensor([[-1.0, 2.0], [3.0, -4.0]], device="openreg")
        self.assertEqual(torch.ops.openreg.custom_abs(x).cpu(), x.cpu().abs())
        self.assertEqual(torch.ops.openreg.custom_abs(x.t()).cpu(), x.cpu().t().abs())


class TestOpenRegFallback(TestCase):
    def test_tensor_lists_scalars_and_indices(self):
        v = torch.tensor([1.0, 2.0, 3.0], device="openreg")
        summed = torch._foreach_add((v, v), (v, v))
        self.assertEqual([t.cpu() for t in summed], [torch.tensor([2.0, 4.0, 6.0])] * 2)
        self.assertEqual((v * 2.0 + 1).cpu(), torch.tensor([3.0, 5.0, 7.0]))
        m = torch.arange(9.0, device="openreg").view(3, 3)
        idx = torch.tensor([2, 0], device="openreg")
        self.assertEqual(m[idx, idx].cpu(), torch.tensor([8.0, 0.0]))
        self.assertEqual(torch.masked_select(v, v.gt(1.5)).cpu(), torch.tensor([2.0, 3.0]))

    def test_out_with_strides(self):
        x = torch.randn(2, 2, 3)
        for step in (2, 3):  # a strided out=, then one the kernel must resize
            with self.subTest(step=step):
                out_cpu = torch.zeros(2, 2, 6)
                out_dev = out_cpu.to("openreg")
                torch.abs(x, out=out_cpu[:, :, 0:6:step])
                torch.abs(x.to("openreg"), out=out_dev[:, :, 0:6:step])
                self.assertEqual(out_dev.cpu(), out_cpu)

    def test_printing(self):
        self.assertIn("device='openreg:0'", repr(torch.ones(3, device="openreg")))


class TestOpenRegRefusedOps(TestCase):
    def test_mixing_devices(self):
        x = torch.ones(2, device="openreg")
        mismatch = "Expected all tensors to be on the same device"
        with self.assertRaisesRegex(RuntimeError, mismatch):
            x + torch.ones(2)
        if torch.openreg.device_count() > 1:
            with self.assertRaisesRegex(RuntimeError, mismatch):
                torch.cat([x, torch.ones(2, device="openreg:1")])

    def test_operator_without_any_kernel(self):
        # CUDA-only operators: no openreg kernel and no CPU one for the fallback.
        x = torch.ones(2, 4, device="openreg")
        calls = {
            "aten::_cudnn_rnn_flatten_weight": lambda: torch._cudnn_rnn_flatten_weight(
                [x], 1, 4, 0, 4, 0, 1, False, False
            ),
            "aten::_fused_dropout": lambda: torch._fused_dropout(x, 0.5),
        }
        for name, call in calls.items():
            with self.subTest(op=name):
                message = f"openreg has no kernel for {name} and cannot run it on the CPU"
                with self.assertRaisesRegex(NotImplementedError, message):
                    call()
        self.assertEqual((x + 1).cpu(), torch.full((2, 4), 2.0))

    def test_quantized_tensors_are_not_supported(self):
        # No quantized backend for openreg in 2.9.1's public API (no
        # QuantizedPrivateUse1 kernels): a clear error, not a crash.
        with self.assertRaisesRegex(NotImplementedError, "empty_quantized"):
            torch.quantize_per_tensor(torch.randn(3, device="openreg"), 0.1, 10, torch.qint8)


if __name__ == "__main__":
    run_tests()
