# Owner(s): ["module: PrivateUse1"]
"""Device memory of OpenReg through the generic ``torch.accelerator`` memory
API and ``torch.openreg``: both read the same caching allocator, on every
device; statistics move with allocations, frees, peaks and resets; pinned
host memory.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import gc

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests

BLOCK = 512  # the allocator rounds every request up to this


def _settle() -> None:
    """No queued work holds a block and no dead tensor waits for the collector."""
    torch.accelerator.synchronize()
    gc.collect()


class TestOpenRegMemoryStats(TestCase):
    def test_accelerator_and_openreg_agree_on_every_device(self):
        for index in range(torch.openreg.device_count()):
            with self.subTest(device=index):
                keep = torch.ones(1000, device=f"openreg:{index}")
                self.assertEqual(torch.accelerator.memory_allocated(index), torch.openreg.memory_allocated(index))
                self.assertEqual(torch.accelerator.memory_reserved(index), torch.openreg.memory_reserved(index))
                ours = torch.openreg.memory_stats(index)
                generic = torch.accelerator.memory_stats(index)  # adds per-pool keys OpenReg has no pools for
                self.assertEqual({key: generic[key] for key in ours}, ours)
                self.assertGreaterEqual(torch.openreg.memory_allocated(index), keep.nbytes)

    def test_allocation_free_peak_reset(self):
        _settle()
        torch.accelerator.reset_peak_memory_stats()
        start = torch.accelerator.memory_allocated()
        sizes = (1, BLOCK, BLOCK + 1, 10 * BLOCK)
        tensors = [torch.empty(n, dtype=torch.uint8, device="openreg") for n in sizes]
        rounded = sum(-(-n // BLOCK) * BLOCK for n in sizes)
        self.assertEqual(torch.accelerator.memory_allocated() - start, rounded)
        self.assertEqual(torch.accelerator.max_memory_allocated(), start + rounded)
        del tensors
        _settle()
        self.assertEqual(torch.accelerator.memory_allocated(), start)
        self.assertEqual(torch.accelerator.max_memory_allocated(), start + rounded)  # peaks stay
        torch.accelerator.reset_peak_memory_stats()
        self.assertEqual(torch.accelerator.max_memory_allocated(), start)

    def test_empty_cache_returns_cached_blocks(self):
        _settle()
        x = torch.empty(64 * BLOCK, dtype=torch.uint8, device="openreg")
        del x
        _settle()
        self.assertGreater(torch.openreg.memory_reserved(), torch.openreg.memory_allocated())
        torch.accelerator.empty_cache()
        self.assertEqual(torch.openreg.memory_reserved(), torch.openreg.memory_allocated())

    def test_accumulated_counters(self):
        torch.openreg.reset_accumulated_memory_stats()
        before = torch.openreg.memory_stats()["allocation.all.allocated"]
        for _ in range(3):
            torch.empty(4, device="openreg")
        _settle()
        stats = torch.openreg.memory_stats()
        self.assertEqual(stats["allocation.all.allocated"] - before, 3)
        self.assertGreaterEqual(stats["allocation.all.freed"], 3)
        torch.openreg.reset_accumulated_memory_stats()
        self.assertEqual(torch.openreg.memory_stats()["allocation.all.allocated"], 0)


class TestOpenRegPinnedMemory(TestCase):
    def test_pinned_tensors_and_storage_slices(self):
        pinned = torch.randn(10).pin_memory()
        self.assertTrue(pinned.is_pinned())
        self.assertFalse(torch.randn(10).is_pinned())
        rewrapped = torch.tensor((), dtype=torch.float32).set_(pinned.untyped_storage()[8:], 0, (5,), (1,))
        self.assertTrue(rewrapped.is_pinned())
        self.assertEqual(rewrapped, pinned[2:7])
        with self.assertRaisesRegex(RuntimeError, "only CPU tensors can be pinned"):
            torch.empty(2, device="openreg", pin_memory=True)


if __name__ == "__main__":
    run_tests()
