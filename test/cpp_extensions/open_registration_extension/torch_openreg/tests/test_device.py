# Owner(s): ["module: PrivateUse1"]
"""Devices of the OpenReg backend through the generic accelerator API
(``torch.accelerator``) and ``torch.openreg``: selection, the per-thread
current device, contexts that restore it, initialization and fork safety,
and a readable error for a device index out of range, whichever API is given
one.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import multiprocessing
import os
import threading
import unittest

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests

DEADLINE_S = 60.0
OUT_OF_RANGE = "The device index is out of range"


def _use_openreg_in_child(queue: "multiprocessing.Queue[str]") -> None:
    try:
        torch.ones(1, device="openreg")
        queue.put("no error")
    except RuntimeError as e:
        queue.put(str(e))


class TestOpenRegDeviceSelection(TestCase):
    def setUp(self):
        super().setUp()
        self.addCleanup(torch.accelerator.set_device_index, torch.accelerator.current_device_index())

    def test_accelerator_is_openreg(self):
        self.assertEqual(torch.accelerator.current_accelerator(), torch.device("openreg"))
        self.assertTrue(torch.accelerator.is_available())
        self.assertEqual(torch.accelerator.device_count(), torch.openreg.device_count())

    def test_set_device_index_moves_new_tensors(self):
        for index in range(torch.accelerator.device_count()):
            torch.accelerator.set_device_index(index)
            self.assertEqual(torch.accelerator.current_device_index(), index)
            self.assertEqual(torch.openreg.current_device(), index)
            self.assertEqual(torch.empty(2, device="openreg").device.index, index)
            self.assertEqual(torch.randn(2, device="openreg").sum().device.index, index)

    def test_device_index_context_restores_on_error(self):
        last = torch.accelerator.device_count() - 1
        with self.assertRaisesRegex(ValueError, "inside"):
            with torch.accelerator.device_index(last):
                self.assertEqual(torch.accelerator.current_device_index(), last)
                with torch.accelerator.device_index(0):
                    self.assertEqual(torch.accelerator.current_device_index(), 0)
                raise ValueError("inside")
        self.assertEqual(torch.accelerator.current_device_index(), 0)
        with torch.accelerator.device_index(None):  # no-op
            self.assertEqual(torch.accelerator.current_device_index(), 0)

    def test_current_device_is_per_thread(self):
        last = torch.accelerator.device_count() - 1
        seen: list[int] = []
        worker = threading.Thread(
            target=lambda: (torch.accelerator.set_device_index(last), seen.append(torch.openreg.current_device()))
        )
        worker.start()
        worker.join(DEADLINE_S)
        self.assertEqual(seen, [last])
        self.assertEqual(torch.accelerator.current_device_index(), 0)

    def test_failed_op_leaves_the_device_usable(self):
        x = torch.randn(5, 5, device="openreg")
        with self.assertRaisesRegex(RuntimeError, "cannot be multiplied"):
            x @ torch.randn(3, 3, device="openreg")
        self.assertEqual(torch.accelerator.current_device_index(), 0)
        self.assertEqual((x @ x).cpu(), x.cpu() @ x.cpu())


class TestOpenRegDeviceIndexOutOfRange(TestCase):
    """One message, whichever API gets the index; nothing is left switched."""

    def test_every_entry_point(self):
        count = torch.openreg.device_count()
        entry_points = {
            "accelerator.set_device_index": lambda: torch.accelerator.set_device_index(count),
            "accelerator.device_index": lambda: torch.accelerator.device_index(count).__enter__(),
            "openreg.set_device": lambda: torch.openreg.set_device(count),
            "openreg.device": lambda: torch.openreg.device(count).__enter__(),
            "factory": lambda: torch.empty(1, device=f"openreg:{count}"),
            "copy": lambda: torch.ones(1).to(f"openreg:{count}"),
            "memory_allocated": lambda: torch.openreg.memory_allocated(count),
            "synchronize": lambda: torch.openreg.synchronize(count),
            "stream": lambda: torch.Stream(device=f"openreg:{count}"),
            "generator": lambda: torch.Generator(device=f"openreg:{count}"),
        }
        for name, call in entry_points.items():
            with self.subTest(entry_point=name):
                with self.assertRaisesRegex(RuntimeError, OUT_OF_RANGE):
                    call()
                self.assertEqual(torch.openreg.current_device(), 0)
        self.assertEqual(torch.ones(2, device="openreg").cpu(), torch.ones(2))

    def test_index_beyond_the_index_type(self):
        # c10 device indices are 8-bit: a wider one must not wrap to a valid index.
        for index in (1000, 256):
            with self.subTest(index=index):
                with self.assertRaisesRegex(RuntimeError, f"{OUT_OF_RANGE}: invalid openreg device index {index}"):
                    torch.openreg.set_device(index)
                with self.assertRaisesRegex(RuntimeError, f"{OUT_OF_RANGE}: invalid openreg device index {index}"):
                    torch.openreg.memory_allocated(index)
        # (set_device ignores a negative index, as torch.cuda.set_device does.)
        with self.assertRaisesRegex(RuntimeError, f"{OUT_OF_RANGE}: invalid openreg device index -200"):
            torch.openreg.memory_allocated(-200)


class TestOpenRegInit(TestCase):
    def test_init_and_is_initialized(self):
        torch.openreg.init()
        self.assertTrue(torch.openreg.is_initialized())
        self.assertFalse(torch.openreg._is_in_bad_fork())

    @unittest.skipUnless(hasattr(os, "fork"), "needs fork()")
    def test_forked_child_gets_a_clear_error(self):
        torch.ones(1, device="openreg")  # initialized before the fork
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_use_openreg_in_child, args=(queue,))
        child.start()
        message = queue.get(timeout=DEADLINE_S)
        child.join(DEADLINE_S)
        self.assertEqual(child.exitcode, 0)
        self.assertIn("Cannot re-initialize OpenReg in forked subprocess", message)
        self.assertIn("'spawn' start method", message)


if __name__ == "__main__":
    run_tests()
