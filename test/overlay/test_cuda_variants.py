# Owner(s): ["module: tests"]
"""Device-generic suites name their CUDA variants on every machine: run where CUDA is, skipped
with the reason where it is not.

Every test process the tool and `test/run_test.py` start gets `testrun.test_env`, which names
`torch_overlay/test_hooks/cuda_test_base.py` in torch's `TORCH_TEST_DEVICES`. These tests run
a small device-generic suite (a plain, a `@dtypes` and an `@ops` test, and a `setUp` that
uses the device) with the installed torch in such a process, as the patches' suites and the
differential corpus run.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from unittest import mock

import torch
from synthetic import REPO
from torch.testing._internal.common_utils import TestCase, run_tests

sys.path.insert(0, str(REPO))
from torch_overlay.core.outcomes import CaseOutcome  # noqa: E402
from torch_overlay.proofs import testrun  # noqa: E402

# What the hook says (it cannot be imported: torch runs it with common_device_type's globals).
REASON = "CUDA variant: torch.cuda.is_available() is False on this machine"

SUITE = """\
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests


class TestGeneric(TestCase):
    def setUp(self):  # instantiate_device_type_tests puts this over the device base's own setUp
        super().setUp()
        self.one = torch.ones(1, device=self.device_type)  # initializes the device

    def test_plain(self, device):
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2)

    @dtypes(torch.float32, torch.float16)
    def test_dtyped(self, device, dtype):
        self.assertEqual(torch.ones(2, device=device, dtype=dtype).dtype, dtype)

    @ops([op for op in op_db if op.name == "mul"], allowed_dtypes=(torch.float32,))
    def test_op(self, device, dtype, op):
        sample = next(iter(op.sample_inputs(device, dtype)))
        self.assertEqual(op(sample.input, *sample.args, **sample.kwargs).device.type, torch.device(device).type)


instantiate_device_type_tests(TestGeneric, globals())

if __name__ == "__main__":
    run_tests()
"""

DEVICE_SUFFIX = {"TestGenericCPU": "cpu", "TestGenericCUDA": "cuda"}


class TestCudaVariants(TestCase):
    def run_suite(self, extra_env: dict[str, str] | None = None) -> tuple[dict[str, dict[str, str]], str]:
        """Each class's cases (name with the device suffix replaced by `DEV`) and their
        outcomes, and the run's log (with the skip reasons); run as `verify` runs a file."""
        with tempfile.TemporaryDirectory() as tmp:
            suite = Path(tmp) / "test_generic.py"
            suite.write_text(SUITE)
            log = Path(tmp) / "log"
            _, report = testrun.run_pytest(suite, [], log, extra_env=extra_env)
            output = log.read_text()
        self.assertIsNotNone(report, output)
        assert report is not None
        by_class: dict[str, dict[str, str]] = defaultdict(dict)
        for case, outcome in report.cases.items():
            cls, name = case.split("::")
            by_class[cls][name.replace(f"_{DEVICE_SUFFIX.get(cls, 'x')}", "_DEV")] = outcome
        return by_class, output

    def test_cuda_variants_run_or_are_skipped_with_the_reason(self) -> None:
        by_class, output = self.run_suite()
        self.assertIn("TestGenericCUDA", by_class)
        cpu, cuda = by_class["TestGenericCPU"], by_class["TestGenericCUDA"]
        self.assertEqual(sorted(cpu), ["test_dtyped_DEV_float16", "test_dtyped_DEV_float32",
                                       "test_op_mul_DEV_float32", "test_plain_DEV"])
        self.assertEqual(sorted(cuda), sorted(cpu))  # the names CUDA gives its cases
        self.assertEqual(set(cpu.values()), {CaseOutcome.PASSED})  # the skip stays in the CUDA class
        if torch.cuda.is_available():
            self.assertEqual(set(cuda.values()), {CaseOutcome.PASSED})
        else:
            self.assertEqual(set(cuda.values()), {CaseOutcome.SKIPPED})
            self.assertIn(REASON, output)
        for cls, cases in by_class.items():
            if cls not in DEVICE_SUFFIX:  # a PrivateUse1 backend (OpenReg, when installed) runs
                self.assertEqual(set(cases.values()), {CaseOutcome.PASSED}, cls)

    def test_without_the_hook_a_machine_without_cuda_lists_no_cuda_case(self) -> None:
        # What the hook is for: torch itself makes no CUDA class where CUDA is absent.
        if torch.cuda.is_available():
            self.skipTest("CUDA is available: torch makes the CUDA class itself")
        by_class, _ = self.run_suite({"TORCH_TEST_DEVICES": ""})  # torch loads no device base
        self.assertNotIn("TestGenericCUDA", by_class)
        self.assertIn("TestGenericCPU", by_class)

    def test_a_users_own_test_devices_stay_and_ours_is_named_once(self) -> None:
        ours = str(testrun.CUDA_TEST_BASE)
        own = "pytorch_test_base.py"  # e.g. torch_xla's device base
        for inherited, expected in [("", ours), (own, f"{ours}:{own}"), (f"{ours}:{own}", f"{ours}:{own}")]:
            with self.subTest(inherited=inherited), tempfile.TemporaryDirectory() as tmp, \
                    mock.patch.dict(os.environ, TORCH_TEST_DEVICES=inherited):
                # A test process that starts another one (the tool's tests run the tool) passes
                # its own TORCH_TEST_DEVICES on.
                self.assertEqual(testrun.test_env([], Path(tmp))["TORCH_TEST_DEVICES"], expected)


if __name__ == "__main__":
    run_tests()
