# Owner(s): ["module: PrivateUse1"]
"""How OpenReg plugs into PyTorch's PrivateUse1 registration: the backend
name, the device module, generated ``Tensor``/``Module``/storage/
``PackedSequence`` methods, legacy tensor type names, and the errors a second
registration gets.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import types

import torch
import torch_openreg  # noqa: F401
from torch.nn.utils.rnn import PackedSequence
from torch.testing._internal.common_utils import TestCase, run_tests
from torch.utils.backend_registration import _get_custom_mod_func

LEGACY_TYPES = {
    torch.bool: "BoolTensor", torch.float64: "DoubleTensor", torch.float32: "FloatTensor",
    torch.float16: "HalfTensor", torch.int32: "IntTensor", torch.int64: "LongTensor",
    torch.int8: "CharTensor", torch.int16: "ShortTensor", torch.uint8: "ByteTensor",
}  # fmt: skip


class TestOpenRegRegistration(TestCase):
    def test_backend_name_is_set_once(self):
        self.assertEqual(torch._C._get_privateuse1_backend_name(), "openreg")
        torch.utils.rename_privateuse1_backend("openreg")  # the same name again is fine
        with self.assertRaisesRegex(RuntimeError, "has already been set"):
            torch.utils.rename_privateuse1_backend("other")

    def test_device_module(self):
        self.assertIs(torch.get_device_module("openreg"), torch.openreg)
        self.assertEqual(_get_custom_mod_func("device_count")(), torch.openreg.device_count())
        with self.assertRaisesRegex(RuntimeError, "Try to call torch.openreg.no_such_function"):
            _get_custom_mod_func("no_such_function")
        with self.assertRaisesRegex(RuntimeError, "The runtime module of"):
            torch._register_device_module("openreg", types.ModuleType("other"))
        with self.assertRaisesRegex(RuntimeError, "Expected one of"):
            torch._register_device_module("not_a_device", types.ModuleType("other"))

    def test_generated_methods(self):
        with self.assertRaisesRegex(RuntimeError, "has already been registered"):
            torch.utils.generate_methods_for_privateuse1_backend()
        x = torch.ones(2, 2)
        for target in (torch.device("openreg"), "openreg:0", 0):
            self.assertTrue(x.openreg(target).is_openreg)
        self.assertEqual(x.openreg(torch.openreg.device_count() - 1).device.index, torch.openreg.device_count() - 1)
        self.assertFalse(x.is_openreg)
        module = torch.nn.Linear(2, 2).openreg()
        self.assertTrue(all(p.is_openreg for p in module.parameters()))
        storage = x.untyped_storage().openreg()
        self.assertTrue(storage.is_openreg)
        self.assertFalse(x.untyped_storage().is_openreg)
        packed = PackedSequence(torch.rand(5, 3), torch.tensor([1, 1, 1, 1, 1]))
        self.assertFalse(packed.is_openreg)
        self.assertTrue(packed.openreg().is_openreg)
        self.assertTrue(packed.openreg().data.is_openreg)

    def test_legacy_type_names(self):
        for dtype, name in LEGACY_TYPES.items():
            with self.subTest(dtype=dtype):
                self.assertEqual(torch.empty(1, dtype=dtype, device="openreg").type(), f"torch.openreg.{name}")
        storage = torch.ones(2, device="openreg").storage()
        self.assertTrue(storage.is_openreg)
        self.assertEqual(storage.type(), "torch.storage.TypedStorage")


if __name__ == "__main__":
    run_tests()
