# Owner(s): ["module: PrivateUse1"]
"""Autograd on OpenReg: the engine's device threads, and operators whose
gradient the backend defines itself, eagerly and under torch.compile:
``custom_abs`` (autograd registered from Python), ``custom_flat_view`` (a
view), and two C++ ``torch::autograd::Function``s,
``custom_autograd_fn_returns_self`` (returns its input) and
``custom_autograd_fn_aliasing`` (returns a view of it), whose backward
halves the gradient.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import os
import unittest

import psutil
import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests

CPP_FUNCTIONS = ("custom_autograd_fn_returns_self", "custom_autograd_fn_aliasing")


def _thread_names() -> set[str]:
    names = set()
    for thread in psutil.Process().threads():
        with open(f"/proc/self/task/{thread.id}/comm") as f:
            names.add(f.read().strip())
    return names


class TestOpenRegAutogradEngine(TestCase):
    @unittest.skipUnless(os.path.isdir("/proc/self/task"), "needs Linux's /proc")
    def test_engine_starts_a_thread_per_device(self):
        for index in range(torch.openreg.device_count()):
            torch.ones(2, device=f"openreg:{index}", requires_grad=True).sum().backward()
        names = _thread_names()
        for index in range(torch.openreg.device_count()):
            self.assertIn(f"pt_autograd_{index}", names)

    def test_backward_runs_on_the_tensors_device(self):
        index = torch.openreg.device_count() - 1
        x = torch.randn(3, 2, device=f"openreg:{index}", requires_grad=True)
        (x * x).sum().backward()
        self.assertEqual(x.grad.device, x.device)
        self.assertEqual(x.grad.cpu(), 2 * x.detach().cpu())
        self.assertEqual(torch.openreg.current_device(), 0)


class TestOpenRegCppAutogradFunctions(TestCase):
    def _grad_of(self, fn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        leaf = x.detach().clone().requires_grad_()
        out = fn(leaf)
        (out * torch.arange(1.0, 5.0, device=x.device)).sum().backward()
        return out, leaf.grad

    def test_eager(self):
        x = torch.randn(4, device="openreg")
        for name in CPP_FUNCTIONS:
            with self.subTest(name=name):
                op = getattr(torch.ops.openreg, name)
                out, grad = self._grad_of(op, x)
                self.assertEqual(out.cpu(), x.cpu())
                self.assertEqual(grad.cpu(), torch.arange(1.0, 5.0) * 0.5)
                # Without requires_grad no graph is recorded.
                self.assertFalse(op(x).requires_grad)

    def test_outputs_alias_the_input(self):
        x = torch.randn(4, device="openreg", requires_grad=True)
        for name in CPP_FUNCTIONS:
            with self.subTest(name=name):
                out = getattr(torch.ops.openreg, name)(x)
                self.assertEqual(out.data_ptr(), x.data_ptr())
                self.assertEqual(type(out.grad_fn).__name__, "CppFunction")

    def test_compiled_matches_eager(self):
        x = torch.randn(4, device="openreg")
        for name in CPP_FUNCTIONS:
            with self.subTest(name=name):
                torch._dynamo.reset()
                op = getattr(torch.ops.openreg, name)
                expected = self._grad_of(op, x)
                actual = self._grad_of(torch.compile(op, backend="aot_eager"), x)
                self.assertEqual([t.cpu() for t in actual], [t.cpu() for t in expected])

    def test_only_openreg_has_the_kernel(self):
        with self.assertRaisesRegex(NotImplementedError, "custom_autograd_fn_returns_self"):
            torch.ops.openreg.custom_autograd_fn_returns_self(torch.ones(2))


class TestOpenRegPythonAutograd(TestCase):
    def test_custom_op_with_autograd(self):
        x = torch.tensor([[-1.5, 2.0], [0.5, -3.0]])
        xd = x.to("openreg").requires_grad_()
        y = torch.ops.openreg.custom_abs(xd)
        self.assertEqual(y.device.type, "openreg")
        self.assertEqual(y.cpu(), x.abs())
        (y * torch.arange(4.0).reshape(2, 2).to("openreg")).sum().backward()
        self.assertEqual(xd.grad.cpu(), x.sign() * torch.arange(4.0).reshape(2, 2))

    def test_custom_op_under_compile(self):
        # The Meta kernel lets Dynamo trace the op with fake tensors.
        torch._dynamo.reset()
        fn = torch.compile(lambda t: torch.ops.openreg.custom_abs(t) + 1, backend="aot_eager", fullgraph=True)
        x = torch.tensor([-2.0, 3.0], device="openreg")
        self.assertEqual(fn(x).cpu(), torch.tensor([3.0, 4.0]))

    def test_custom_op_with_aliasing_return(self):
        base = torch.arange(6.0).reshape(2, 3).to("openreg").requires_grad_()
        x = base * 1  # a non-leaf, so the view may be modified in place
        flat = torch.ops.openreg.custom_flat_view(x)
        self.assertTrue(flat._is_view())
        self.assertEqual(flat.untyped_storage().data_ptr(), x.untyped_storage().data_ptr())
        flat.mul_(2)  # writes through to x, autograd tracks it
        self.assertEqual(x.cpu(), torch.arange(6.0).reshape(2, 3) * 2)
        x.sum().backward()
        self.assertEqual(base.grad.cpu(), torch.full((2, 3), 2.0))


if __name__ == "__main__":
    run_tests()
