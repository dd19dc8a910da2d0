"""OpenReg installed by the set-up command: importable without PYTHONPATH, autoloaded by
`import torch` through the `torch.backends` entry point (off with TORCH_DEVICE_BACKEND_AUTOLOAD=0),
and built in the same directory test/run_test.py rebuilds incrementally."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from synthetic import repo_build_dir
from torch.testing._internal.common_utils import TestCase, run_tests

STAGING = repo_build_dir() / "openreg" / "python"


def run_python(code: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter of this venv with no PYTHONPATH: only what is installed is importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCH_DEVICE_BACKEND_AUTOLOAD")}
    env.update(extra)
    with tempfile.TemporaryDirectory() as cwd:  # not the repository: nothing importable by accident
        return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


class TestOpenRegDistribution(TestCase):
    def test_installed_with_its_entry_points(self) -> None:
        dist = importlib.metadata.distribution("torch_openreg")
        points = {(ep.group, ep.name): ep.value for ep in dist.entry_points}
        self.assertEqual(points[("torch.backends", "torch_openreg")], "torch_openreg:_autoload")
        self.assertEqual(points[("torch_dynamo_backends", "openreg")], "torch_openreg.compiler:openreg_backend")
        # Editable: the staging dir the runner rebuilds, whose sources are links to the checkout.
        pth = [f for f in dist.files or [] if f.name.endswith(".pth")]
        self.assertEqual(len(pth), 1)
        self.assertEqual(Path(pth[0].locate()).read_text().strip(), str(STAGING))

    def test_not_part_of_torch(self) -> None:
        files = importlib.metadata.files("torch") or []
        self.assertFalse([f for f in files if "openreg" in str(f)])

    def test_import_torch_autoloads_it(self) -> None:
        result = run_python(
            "import sys, torch; print('torch_openreg' in sys.modules, torch._C._get_privateuse1_backend_name()); "
            "print(torch.ones(2, device='openreg').add(1).cpu().tolist())"
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(),
                         ["True openreg", "[2.0, 2.0]"])

    def test_autoload_can_be_turned_off(self) -> None:
        result = run_python("import sys, torch; print('torch_openreg' in sys.modules)", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "False")

    def test_importing_it_first_works(self) -> None:
        # `import torch_openreg` imports torch, which autoloads the entry point of the
        # half-imported package: it must still come out whole.
        result = run_python("import torch_openreg, torch; print(torch.zeros(1, device='openreg').device)")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "openreg:0")


if __name__ == "__main__":
    run_tests()
