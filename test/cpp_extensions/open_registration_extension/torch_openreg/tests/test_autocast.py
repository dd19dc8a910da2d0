# Owner(s): ["module: PrivateUse1"]
"""Autocast on OpenReg (the AutocastPrivateUse1 policies in
csrc/aten/OpenRegFullAten.cpp): which operators run in the autocast dtype, which
are forced to float32, which promote mixed inputs, and which are left alone.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import torch
import torch.nn.functional as F
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests

LOW_PRECISION = (torch.float16, torch.bfloat16)


def _mat(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(4, 4, device="openreg", dtype=dtype)


# name -> (call, policy): "lower" runs in the autocast dtype, "fp32" in float32
# whatever the inputs, "same" keeps the inputs' dtype (not listed).
POLICIES = {
    "mm": (lambda x: torch.mm(x, x), "lower"),
    "matmul": (lambda x: x @ x, "lower"),
    "addmm": (lambda x: torch.addmm(x, x, x), "lower"),
    "bmm": (lambda x: torch.bmm(x[None], x[None]), "lower"),
    "baddbmm": (lambda x: torch.baddbmm(x[None], x[None], x[None]), "lower"),
    "linear": (lambda x: F.linear(x, x), "lower"),
    "softmax": (lambda x: torch.softmax(x, 0), "fp32"),
    "log_softmax": (lambda x: torch.log_softmax(x, 0), "fp32"),
    "mse_loss": (lambda x: F.mse_loss(x, x), "fp32"),
    "sum": (lambda x: x.sum(), "fp32"),
    "dot": (lambda x: torch.dot(x[0], x[1]), "fp32"),
    "add": (lambda x: x + x, "same"),
    "relu": (lambda x: x.relu(), "same"),
}


class TestOpenRegAutocast(TestCase):
    def test_policies(self):
        for autocast_dtype in LOW_PRECISION:
            for input_dtype in (torch.float32, *LOW_PRECISION):
                x = _mat(input_dtype)
                for name, (call, policy) in POLICIES.items():
                    expected = {"lower": autocast_dtype, "fp32": torch.float32, "same": input_dtype}[policy]
                    with self.subTest(op=name, autocast=autocast_dtype, input=input_dtype):
                        with torch.autocast("openreg", dtype=autocast_dtype):
                            self.assertEqual(call(x).dtype, expected)

    def test_promote_mixed_inputs(self):
        with torch.autocast("openreg", dtype=torch.float16):
            for combine in (torch.cat, torch.stack):
                out = combine([_mat(torch.float16), _mat(torch.float32)])
                self.assertEqual(out.dtype, torch.float32)

    def test_values_match_an_explicit_cast(self):
        a, b = _mat(), _mat()
        with torch.autocast("openreg", dtype=torch.bfloat16):
            low = a @ b
            promoted = torch.dot(a[0].half(), b[0].half())
        self.assertEqual(low.cpu(), (a.bfloat16() @ b.bfloat16()).cpu())
        self.assertEqual(promoted.cpu(), torch.dot(a[0].half().float(), b[0].half().float()).cpu())

    def test_default_and_supported_dtypes(self):
        self.assertEqual(torch.get_autocast_dtype("openreg"), torch.float16)
        self.assertEqual(torch.openreg.get_amp_supported_dtype(), list(LOW_PRECISION))
        # 2.9.1 names the refused dtype ("the target dtype torch.float32 is not
        # supported. Disabling autocast.\n openreg Autocast only supports ..."),
        # 2.15.0 does not ("the target dtype is not supported. Disabling
        # autocast.\nopenreg Autocast only supports ..."): accept either wording.
        refused = (
            r"In openreg autocast, but the target dtype (torch\.float32 )?is not supported\. "
            r"Disabling autocast\.\n ?openreg Autocast only supports dtypes of "
            r"torch\.float16, torch\.bfloat16 currently\."
        )
        with self.assertWarnsRegex(UserWarning, refused):
            with torch.autocast("openreg", dtype=torch.float32):
                self.assertFalse(torch.is_autocast_enabled("openreg"))  # what the warning says

    def test_disabled_outside_the_region(self):
        x = _mat()
        with torch.autocast("openreg", dtype=torch.float16):
            self.assertTrue(torch.is_autocast_enabled("openreg"))
            with torch.autocast("openreg", enabled=False):
                self.assertEqual((x @ x).dtype, torch.float32)
        self.assertFalse(torch.is_autocast_enabled("openreg"))
        self.assertEqual((x @ x).dtype, torch.float32)


if __name__ == "__main__":
    run_tests()
