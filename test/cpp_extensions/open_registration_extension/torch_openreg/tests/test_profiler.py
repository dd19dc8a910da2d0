# Owner(s): ["module: PrivateUse1"]
"""The autograd profiler with OpenReg device time
(``torch.autograd.profiler.profile(use_device="openreg")``, through
OpenReg's profiler stubs): device time per op, user ranges, streams, backward
and the exported trace.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import json
import os
import tempfile

import torch
import torch_openreg  # noqa: F401
from torch.autograd.profiler import profile, record_function
from torch.testing._internal.common_utils import TestCase, run_tests


class TestOpenRegProfiler(TestCase):
    def test_autograd_profiler_records_device_time(self):
        x = torch.ones(64, device="openreg")
        with torch.autograd.profiler.profile(use_device="openreg") as prof:
            (x + 1).mul_(2)
        by_name = {e.key: e for e in prof.key_averages()}
        self.assertIn("aten::add", by_name)
        self.assertGreater(by_name["aten::add"].device_time_total, 0)
        self.assertIn("OPENREG", prof.key_averages().table(row_limit=3))

    def test_user_ranges_nest(self):
        x = torch.ones(8, device="openreg")
        with profile(use_device="openreg") as prof:
            with record_function("outer"):
                with record_function("inner"):
                    x.add_(1)
        names = [e.name for e in prof.function_events]
        self.assertIn("outer", names)
        self.assertIn("inner", names)
        inner = next(e for e in prof.function_events if e.name == "inner")
        self.assertEqual(inner.cpu_parent.name, "outer")

    def test_work_on_side_streams_and_devices(self):
        streams = [torch.Stream(device=f"openreg:{i}") for i in range(torch.openreg.device_count())]
        with profile(use_device="openreg") as prof:
            for index, stream in enumerate(streams):
                with stream:
                    torch.ones(16, device=f"openreg:{index}").mul_(3)
            torch.accelerator.synchronize()
        muls = [e for e in prof.function_events if e.name == "aten::mul_"]
        self.assertEqual(len(muls), len(streams))
        self.assertTrue(all(e.device_time_total > 0 for e in muls))

    def test_backward_and_shapes(self):
        w = torch.randn(4, 3, device="openreg", requires_grad=True)
        with profile(use_device="openreg", record_shapes=True) as prof:
            (torch.ones(2, 4, device="openreg") @ w).sum().backward()
        names = {e.name for e in prof.function_events}
        self.assertIn("aten::mm", names)
        self.assertTrue(any("Backward" in name for name in names))
        shapes = {tuple(map(tuple, avg.input_shapes)) for avg in prof.key_averages(group_by_input_shape=True)
                  if avg.key == "aten::mm"}
        self.assertIn(((2, 4), (4, 3)), shapes)

    def test_chrome_trace(self):
        with profile(use_device="openreg") as prof:
            torch.ones(4, device="openreg").add_(1)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        self.assertTrue(any(e.get("name") == "aten::add_" for e in events))


if __name__ == "__main__":
    run_tests()
