"""The CUDA device-type test base, for torch's `TORCH_TEST_DEVICES` hook: where CUDA is absent,
the CUDA variants of device-generic suites are reported skipped, with the reason.

`instantiate_device_type_tests` makes one class per available device type; on a machine
without CUDA no `...CUDA` class exists, and a suite's CUDA cases are silently absent from
its report. The artifact this project ships is the CUDA build, so a CPU-only run has to say
which cases it could not run. torch runs each file named in `TORCH_TEST_DEVICES` (see
`common_device_type.py`) with the globals of `common_device_type` and appends its
`TEST_CLASS` to the device-type test bases; this file's is

* where the bases have one for CUDA (CUDA is available), nothing changes (the last base is
  handed back);
* otherwise a CUDA base is put where torch puts `CUDATestBase` (after the CPU's), whose cases
  are instantiated as CUDA's would be and then marked `unittest.skip` with the reason below:
  pytest and unittest report each of them as skipped. The names are those CUDA would give
  (`test_foo_cuda_float16` where CUDA's dtypes differ from the CPU's).

The skip is on each instantiated case, not in a hook of the class, because
`instantiate_device_type_tests` (2.9.1) defeats both: it copies the generic class's own
`setUp` (and every other non-test member) onto the device class, over the base's; and it
calls the setUpClass of the *last* device base for every device class (its closure binds the
loop variable), so a skipping setUpClass would skip the CPU's cases too.

As torch asks, this file does not import `common_device_type` (it runs while that module
is being imported); it reads what it needs from the globals it is run with.
"""

import unittest
from typing import Any

REASON = "CUDA variant: torch.cuda.is_available() is False on this machine"

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

    @classmethod
    def instantiate_test(cls, name: str, test: Any, *, generic_cls: Any = None) -> None:
        before = set(cls.__dict__)
        super().instantiate_test(name, test, generic_cls=generic_cls)
        for case in set(cls.__dict__) - before:  # the cases made from `test` (per dtype, op, ...)
            setattr(cls, case, unittest.skip(REASON)(getattr(cls, case)))


# No CUDA base yet: CUDA is absent (with CUDA torch has one; and a second copy of this file,
# from another checkout, may have run already).
if not any(base.device_type == "cuda" for base in _bases):
    after_cpu = _bases.index(_CPUTestBase) + 1 if _CPUTestBase in _bases else len(_bases)
    _bases.insert(after_cpu, AbsentCUDATestBase)
# torch appends TEST_CLASS to the bases: hand it the last one, so the order stays as above.
TEST_CLASS = _bases.pop()
