# Owner(s): ["module: PrivateUse1"]
"""Utilities that work on any device, used with OpenReg tensors: DLPack
round trips and ``torch.utils.data`` with pinned memory.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests
from torch.utils.data import DataLoader, TensorDataset


class TestOpenRegDLPack(TestCase):
    def test_round_trip_keeps_device_and_memory(self):
        for index in range(torch.openreg.device_count()):
            with self.subTest(device=index):
                x = torch.randn(2, 3, device=f"openreg:{index}")
                y = torch.from_dlpack(torch.utils.dlpack.to_dlpack(x))
                self.assertEqual(y.device, x.device)
                self.assertEqual(y.data_ptr(), x.data_ptr())
                y.add_(1)  # one memory: the producer sees the write
                self.assertEqual(x.cpu(), y.cpu())

    def test_strided_tensor(self):
        # Through a capsule: 2.9.1's Tensor.__dlpack_device__ knows no PrivateUse1
        # device, so torch.from_dlpack(tensor) raises "Unknown device type".
        x = torch.arange(12.0, device="openreg").view(3, 4).t()
        y = torch.from_dlpack(torch.utils.dlpack.to_dlpack(x))
        self.assertEqual(y.stride(), x.stride())
        self.assertEqual(y.cpu(), x.cpu())


class TestOpenRegDataLoader(TestCase):
    def test_batches_move_to_the_device(self):
        data = TensorDataset(torch.arange(8.0).view(4, 2), torch.arange(4))
        loader = DataLoader(data, batch_size=2, pin_memory=True, pin_memory_device="openreg")
        seen = []
        for features, labels in loader:
            self.assertTrue(features.is_pinned())
            seen.append(features.to("openreg", non_blocking=True).sum().item() + labels.sum().item())
        self.assertEqual(seen, [6.0 + 1, 22.0 + 5])


if __name__ == "__main__":
    run_tests()
