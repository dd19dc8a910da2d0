# Owner(s): ["module: PrivateUse1"]
"""Storages and serialization on OpenReg: storages on each device, location
tags and ``map_location`` through ``torch.save``/``torch.load``, and backend
metadata (named flags on the TensorImpl, set with
``torch._utils.set_tensor_metadata`` or OpenReg's private-format op) that
survives a save and load and stays on the device.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import io

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests

FLAGS = {"version_number": True, "format_number": False}


def _round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


class TestOpenRegStorage(TestCase):
    def test_storage_on_each_device(self):
        for index in range(torch.openreg.device_count()):
            with self.subTest(device=index):
                s = torch.UntypedStorage(8, device=f"openreg:{index}")
                self.assertEqual(s.device, torch.device("openreg", index))
                self.assertTrue(s.is_openreg)
                self.assertEqual(torch.serialization.location_tag(s), f"openreg:{index}")
        # No index: the current device.
        self.assertEqual(torch.serialization.location_tag(torch.UntypedStorage(4, device="openreg")), "openreg:0")

    def test_typed_storage_follows_its_tensor(self):
        t = torch.arange(6.0, device="openreg")
        storage = t.storage()
        self.assertTrue(storage.is_openreg)
        self.assertEqual(storage.size(), 6)
        self.assertEqual(storage.cpu().tolist(), list(range(6)))
        self.assertEqual(torch.arange(3).storage().openreg().device.type, "openreg")

    def test_restore_location(self):
        cpu = torch.arange(4.0).storage()
        for index in range(torch.openreg.device_count()):
            restored = torch.serialization.default_restore_location(cpu, f"openreg:{index}")
            self.assertEqual(restored.device, torch.device("openreg", index))
            self.assertEqual(restored.cpu().tolist(), cpu.tolist())


class TestOpenRegSerialization(TestCase):
    def test_map_location(self):
        t = torch.randn(3, 3, device="openreg:0")
        targets = {None: torch.device("openreg", 0), "cpu": torch.device("cpu")}
        targets.update({f"openreg:{i}": torch.device("openreg", i) for i in range(torch.openreg.device_count())})
        for location, device in targets.items():
            with self.subTest(map_location=location):
                loaded = _round_trip(t, map_location=location)
                self.assertEqual(loaded.device, device)
                self.assertEqual(loaded.cpu(), t.cpu())

    def test_views_keep_sharing_storage(self):
        base = torch.arange(8.0, device="openreg")
        loaded = _round_trip({"base": base, "view": base[2:6]})
        loaded["view"].fill_(-1.0)
        self.assertEqual(loaded["base"].cpu(), torch.tensor([0.0, 1, -1, -1, -1, -1, 6, 7]))


class TestOpenRegBackendMeta(TestCase):
    def test_tensor_metadata_api(self):
        t = torch.empty(3, 3, device="openreg")
        self.assertEqual(torch._utils.get_tensor_metadata(t), {})
        torch._utils.set_tensor_metadata(t, FLAGS)
        self.assertEqual(torch._utils.get_tensor_metadata(t), FLAGS)
        torch._utils.set_tensor_metadata(t, {"format_number": True})  # flags are updated one by one
        self.assertEqual(torch._utils.get_tensor_metadata(t), {**FLAGS, "format_number": True})

    def test_metadata_survives_save_and_load(self):
        t = torch.ones(2, 2, device="openreg")
        plain = torch.ones(2, device="openreg")
        torch._utils.set_tensor_metadata(t, FLAGS)
        loaded = _round_trip({"flagged": t, "plain": plain})
        self.assertEqual(torch._utils.get_tensor_metadata(loaded["flagged"]), FLAGS)
        self.assertEqual(torch._utils.get_tensor_metadata(loaded["plain"]), {})
        # Metadata belongs to the backend: a copy mapped to the CPU has none.
        self.assertEqual(torch._utils.get_tensor_metadata(_round_trip(t, map_location="cpu")), {})

    def test_private_format_op_is_a_flag(self):
        t = torch.arange(4.0, device="openreg")
        plain = torch.ones(2, device="openreg")
        self.assertIsNone(torch.ops._openreg.private_format(t))
        torch.ops._openreg.set_private_format(t, True)
        loaded = _round_trip({"marked": t, "plain": plain})
        self.assertEqual(loaded["marked"].cpu(), torch.arange(4.0))
        self.assertTrue(torch.ops._openreg.private_format(loaded["marked"]))
        self.assertIsNone(torch.ops._openreg.private_format(loaded["plain"]))
        self.assertEqual(torch._utils.get_tensor_metadata(t), {"openreg_private_format": True})

    def test_only_openreg_tensors_take_it(self):
        with self.assertRaisesRegex(RuntimeError, "needs an openreg tensor"):
            torch.ops._openreg.set_private_format(torch.ones(2), True)


if __name__ == "__main__":
    run_tests()
