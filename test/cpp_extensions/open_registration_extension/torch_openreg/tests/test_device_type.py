# Owner(s): ["module: PrivateUse1"]
"""OpenReg in PyTorch's device-generic test machinery
(``instantiate_device_type_tests``): the same tests run on the CPU and on
openreg (and CUDA when present), the PrivateUse1 decorators select or skip
the backend, and data crosses between the host and the device intact for
every dtype.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import torch
import torch_openreg  # noqa: F401
from torch.testing import make_tensor
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyNativeDeviceTypes,
    onlyPRIVATEUSE1,
    skipPRIVATEUSE1If,
)
from torch.testing._internal.common_dtype import all_types_and_complex_and
from torch.testing._internal.common_utils import TestCase, run_tests

ALL_DTYPES = all_types_and_complex_and(torch.bool, torch.half, torch.bfloat16)


class TestOpenRegDeviceGeneric(TestCase):
    @dtypes(*ALL_DTYPES)
    def test_transfers_round_trip(self, device, dtype):
        host = make_tensor((3, 4), dtype=dtype, device="cpu")
        on_device = host.to(device)
        self.assertEqual(on_device.device.type, torch.device(device).type)
        self.assertEqual(on_device.cpu(), host, atol=0, rtol=0)
        target = torch.empty(3, 4, dtype=dtype, device=device)
        target.copy_(host)
        back = torch.empty(3, 4, dtype=dtype)
        back.copy_(target)
        self.assertEqual(back, host, atol=0, rtol=0)

    def test_to_same_device_is_a_no_op_unless_copy(self, device):
        x = torch.randn(3, 4, device=device)
        self.assertEqual(x.to(device).data_ptr(), x.data_ptr())
        copied = x.to(device, copy=True)
        self.assertNotEqual(copied.data_ptr(), x.data_ptr())
        self.assertEqual(copied, x)

    def test_dtype_promotion(self, device):
        x = torch.ones(3, device=device, dtype=torch.int32)
        self.assertEqual((x + 0.5).dtype, torch.float32)
        self.assertEqual((x + torch.ones(3, device=device, dtype=torch.float64)).dtype, torch.float64)
        self.assertEqual((x > 0).dtype, torch.bool)

    @onlyNativeDeviceTypes
    def test_native_device_types_include_openreg(self, device):
        self.assertIn(torch.device(device).type, ("cpu", "cuda", "openreg"))

    @onlyPRIVATEUSE1
    def test_only_privateuse1(self, device):
        self.assertEqual(torch.device(device).type, torch._C._get_privateuse1_backend_name())

    @onlyCPU
    def test_only_cpu(self, device):
        self.assertEqual(device, "cpu")

    @skipPRIVATEUSE1If(True, "skipped on PrivateUse1 on purpose")
    def test_skipped_on_privateuse1(self, device):
        self.assertNotEqual(torch.device(device).type, "openreg")


instantiate_device_type_tests(TestOpenRegDeviceGeneric, globals())


class TestOpenRegVariantsExist(TestCase):
    def test_openreg_variant_was_generated(self):
        # Guards the file itself: without OpenReg registered before the
        # instantiation above, only CPU variants would exist and pass.
        self.assertIn("TestOpenRegDeviceGenericPRIVATEUSE1", globals())
        self.assertIn("test_only_privateuse1_openreg", dir(globals()["TestOpenRegDeviceGenericPRIVATEUSE1"]))


if __name__ == "__main__":
    run_tests()
