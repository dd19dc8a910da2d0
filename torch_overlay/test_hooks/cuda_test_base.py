"""The CUDA device-type test base, for torch's `TORCH_TEST_DEVICES` hook: where CUDA is absent,
the CUDA variants of device-generic suites are reported skipped, with the reason.

`instantiate_device_type_tests` makes one class per available device type; on a machine
without CUDA no `...CUDA` class exists, and a suite's CUDA cases are silently absent from
its report. The artifact this project ships is the CUDA build, so a CPU-only run has to say
which cases it could not run. torch runs each file named in `TORCH_TEST_DEVICES` (see
`common_device_type.py`) with the globals of `common_device_type` and appends its
`TEST_CLASS` to the device-type test bases; this file's is

* where CUDA is available, nothing changes (the last base is handed back);
* otherwise a CUDA base is put where torch puts `CUDATestBase` (after the CPU's), whose cases
  skip in `setUp`: pytest and unittest report each of them as skipped, with the reason
  below. The names are those CUDA would give (`test_foo_cuda_float16` where CUDA's dtypes
  differ from the CPU's).

The skip is per case, not in `setUpClass`: `instantiate_device_type_tests` (2.9.1) calls the
setUpClass of the *last* device base for every device class (its closure binds the loop
variable), so a skipping setUpClass would skip the CPU's cases too.

As torch asks, this file does not import `common_device_type` (it runs while that module
is being imported); it reads what it needs from the globals it is run with.
"""

import unittest

REASON = "CUDA variant: torch.cuda.is_available() is False on this machine"

_torch = globals()["torch"]
_bases = globals()["device_type_test_bases"]
_CPUTestBase = globals()["CPUTestBase"]
_CUDATestBase = globals()["CUDATestBase"]


class AbsentCUDATestBase(_CUDATestBase):  # type: ignore[valid-type,misc]  # a base known at run time only
    # Instantiating the tests asks for the primary device (an `@ops` test's `device` argument);
    # with CUDA it is set by setUpClass.
    primary_device = "cuda:0"

    @classmethod
    def setUpClass(cls) -> None:
        pass  # CUDA's would initialize CUDA; it may also run for other device classes (see above)

    def setUp(self) -> None:
        raise unittest.SkipTest(REASON)


if not _torch.cuda.is_available():
    after_cpu = _bases.index(_CPUTestBase) + 1 if _CPUTestBase in _bases else len(_bases)
    _bases.insert(after_cpu, AbsentCUDATestBase)
# torch appends TEST_CLASS to the bases: hand it the last one, so the order stays as above.
TEST_CLASS = _bases.pop()
