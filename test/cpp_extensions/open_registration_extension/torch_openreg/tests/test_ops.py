# Owner(s): ["module: PrivateUse1"]
"""Operators on OpenReg beyond the OpInfo sweep: factories, the kernels
OpenReg implements itself (``empty*``, ``set_``, ``resize_``, ``fill_``,
copies, ``custom_abs``), the boxed CPU fallback (tensor lists, scalars,
out= with strides, the CPU kernel on the device memory: aliasing, overlap and
out= resizing as on the CPU), fake tensors on the device, and the errors a device
refuses with: mixing devices in one op, and an operator neither OpenReg nor
the CPU has a kernel for.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import unittest

import torch
import torch.utils._pytree as pytree
import torch_openreg  # noqa: F401
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.testing._internal.common_methods_invocations import op_db
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

    def test_memory_formats(self):
        x = torch.empty(1, 2, 3, 4, device="openreg", memory_format=torch.channels_last)
        self.assertTrue(x.is_contiguous(memory_format=torch.channels_last))

    # Named tensors are gone from torch 2.15.0: its factories take no names=
    # (on the CPU too) and tensors have no .names, so there is nothing to check.
    @unittest.skipUnless(hasattr(torch.Tensor, "names"), "this torch has no named tensors (removed in 2.15.0)")
    def test_names(self):
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


def _expanded(t: torch.Tensor) -> torch.Tensor:
    """`t`'s shape with its last dim of size > 1 expanded from one element (stride 0)."""
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    return t.narrow(dims[-1], 0, 1).clone().expand(t.shape) if dims else t


def _outcome(fn, *args, **kwargs):
    """What a call produced: ("raised", exception type) or the results' metadata."""
    try:
        result = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - raising is the outcome compared
        return ("raised", type(e).__name__)
    tensors = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
    return [(tuple(t.shape), tuple(t.stride()) if t.numel() > 1 else None, t.dtype) for t in tensors]


def _to(tree, device):
    return pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), tree)


class TestOpenRegFallbackOnDeviceMemory(TestCase):
    """The CPU fallback runs the CPU kernel on the device memory itself, as a device
    kernel would: writes into destinations that overlap themselves or an operand, and
    out= tensors the kernel resizes, behave as on the CPU."""

    def test_inplace_ops_into_an_overlapping_destination(self):
        # Every OpInfo in-place variant (first float32 sample) into an expanded input:
        # the CPU kernels fill some of these (tril_, zero_, index_put_...) and refuse the
        # rest; the fallback used to refuse a write-back into any of them.
        compared = 0
        for op in op_db:
            if op.inplace_variant is None or torch.float32 not in op.supported_dtypes("cpu"):
                continue
            sample = next(iter(op.sample_inputs("cpu", torch.float32)), None)
            if sample is None or not isinstance(sample.input, torch.Tensor):
                continue
            with self.subTest(op=op.name, variant=op.variant_test_name):
                args, kwargs = sample.args, sample.kwargs
                expected = _outcome(op.inplace_variant, _expanded(sample.input), *args, **kwargs)
                # Expanded on the device: .to() would give a dense copy.
                device_args, device_kwargs = _to((args, kwargs), "openreg")
                destination = _expanded(sample.input.to("openreg"))
                actual = _outcome(op.inplace_variant, destination, *device_args, **device_kwargs)
                if actual == ("raised", "NotImplementedError"):
                    continue  # neither an openreg nor a CPU kernel
                self.assertEqual(actual, expected)
                compared += 1
        self.assertGreater(compared, 100)

    def test_operands_that_alias_the_destination(self):
        cases = {
            "partial overlap": lambda t: t[1:].add_(t[:-1]),
            "same tensor": lambda t: t.add_(t),
            "broadcast destination": lambda t: t[:, :1].logical_and_(t[0]),
            "out= an input": lambda t: torch.add(t, 1, out=t),
            "disjoint halves": lambda t: t[:2].mul_(t[2:]),
        }
        for name, call in cases.items():
            with self.subTest(case=name):
                base = torch.arange(16.0).view(4, 4)
                device_base = base.to("openreg")
                self.assertEqual(_outcome(call, device_base), _outcome(call, base))
                self.assertEqual(device_base.cpu(), base)

    def test_out_resized_with_the_kernels_strides(self):
        a = torch.randn(5, 5)
        spd = a @ a.mT + 5 * torch.eye(5)
        for name, fn in {
            "linalg.cholesky": lambda m, out: torch.linalg.cholesky(m, out=out),
            "linalg.inv": lambda m, out: torch.linalg.inv(m, out=out),
            "linalg.solve": lambda m, out: torch.linalg.solve(m, m[:, :3], out=out),
        }.items():
            with self.subTest(op=name):
                out_cpu, out_dev = torch.empty(0), torch.empty(0, device="openreg")
                fn(spd, out_cpu)
                fn(spd.to("openreg"), out_dev)
                self.assertEqual((out_dev.shape, out_dev.stride()), (out_cpu.shape, out_cpu.stride()))
                self.assertEqual(out_dev.cpu(), out_cpu)

    def test_cpu_scalar_operands(self):
        x = torch.arange(3.0, device="openreg")
        scalar = torch.tensor(2.0)
        # A CPU 0-dim operand joins the device computation: the result is on the device,
        # whichever argument comes first.
        for name, call in {"rsub": lambda: torch.rsub(scalar, x), "add": lambda: torch.add(scalar, x)}.items():
            with self.subTest(op=name):
                self.assertEqual(call().device, x.device)
                self.assertEqual(call().cpu(), {"rsub": torch.rsub, "add": torch.add}[name](scalar, x.cpu()))
        # A CPU 0-dim tensor is never written by a device op (TensorIterator's rule), nor
        # is the CPU output a kernel allocates like a CPU 0-dim self (index_add).
        index = torch.tensor([0], device="openreg")
        same_device = "Expected all tensors to be on the same device"
        for name, (call, refused) in {
            "floor_divide_": (lambda: torch.tensor(4.0).floor_divide_(x[1]), same_device),
            "index_fill_": (lambda: torch.tensor(4.0).index_fill_(0, index[0], x[1]), same_device),
            # 2.9.1 refuses it in the fallback (the CPU out= against the device operands),
            # 2.15.0 already in index_add's own device check, worded its way: accept either.
            "index_add": (
                lambda: torch.index_add(torch.tensor(4.0), 0, index[0], x[1]),
                same_device + r"|index_add_\(\): self, index and source expected to be in the same device, "
                r"but got \(self\) cpu, \(index\) openreg:0, and \(source\) openreg:0",
            ),
        }.items():
            with self.subTest(op=name):
                with self.assertRaisesRegex(RuntimeError, refused):
                    call()

    def test_mode_out(self):
        # mode.values is a CompositeExplicitAutograd kernel that refuses other devices
        # than cpu, cuda and xpu: OpenReg registers the fallback as its device kernel.
        x = torch.randn(4, 6)
        values = torch.empty(0, device="openreg")
        indices = torch.empty(0, dtype=torch.long, device="openreg")
        torch.mode(x.to("openreg"), 1, out=(values, indices))
        self.assertEqual((values.cpu(), indices.cpu()), tuple(torch.mode(x, 1)))


# Calls that mix an openreg:0 tensor with one on `other`, one per way an
# operator takes tensors (operand, in-place self, out=, index, tensor list,
# reduction over a matmul); each goes through the CPU fallback.
MIXED_DEVICE_CALLS = {
    "binary": lambda x, other: x + torch.ones(2, 2, device=other),
    "in-place": lambda x, other: x.add_(torch.ones(2, 2, device=other)),
    "out=": lambda x, other: torch.add(x, 1, out=torch.empty(2, 2, device=other)),
    "index": lambda x, other: x.index_select(0, torch.tensor([1], device=other)),
    "tensor list": lambda x, other: torch.cat([x, torch.ones(2, 2, device=other)]),
    "where": lambda x, other: torch.where(torch.ones(2, 2, dtype=torch.bool, device=other), x, 0.0),
    "matmul": lambda x, other: x @ torch.ones(2, 2, device=other),
}


class TestOpenRegRefusedOps(TestCase):
    def _other_devices(self) -> list[str]:
        return ["cpu"] + [f"openreg:{i}" for i in range(1, torch.openreg.device_count())]

    def test_mixing_devices(self):
        for other in self._other_devices():
            for kind, call in MIXED_DEVICE_CALLS.items():
                with self.subTest(other=other, call=kind):
                    x = torch.ones(2, 2, device="openreg:0")
                    with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device"):
                        call(x, other)
                    self.assertEqual(x.cpu(), torch.ones(2, 2))  # the refused in-place call wrote nothing

    def test_mixing_devices_with_meta(self):
        with self.assertRaisesRegex(RuntimeError, "Tensor on device meta is not on the expected device openreg:0"):
            torch.ones(2, device="openreg:0") + torch.ones(2, device="meta")

    def test_mixing_devices_in_an_operator_without_any_kernel(self):
        # The missing kernel is the error, whatever devices the inputs are on.
        for other in self._other_devices():
            with self.subTest(other=other):
                tensors = [torch.ones(2, 4, device="openreg:0"), torch.ones(2, 4, device=other)]
                message = "openreg has no kernel for aten::_cudnn_rnn_flatten_weight"
                with self.assertRaisesRegex(NotImplementedError, message):
                    torch._cudnn_rnn_flatten_weight(tensors, 1, 4, 0, 4, 0, 1, False, False)

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
