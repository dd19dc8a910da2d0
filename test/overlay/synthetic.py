"""Small synthetic base wheels, pins and patches for the tool's own tests.

A synthetic wheel has the shape of torch's (torch/, torchgen/, functorch/, a compiled `.so`
with NUL bytes, torch/version.py and a dist-info with RECORD), so every mechanism of the tool
runs for real on it in milliseconds.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def repo_build_dir() -> Path:
    """This checkout's build directory for the base the run installed (`build/<version>/`)."""
    sys.path.insert(0, str(REPO))
    from torch_overlay.core.project import Project

    return Project.discover(REPO).build_dir

TAG = "cp{0}{1}-cp{0}{1}-manylinux_2_28_x86_64".format(*sys.version_info[:2])
VERSION = "2.9.1"
REVISION = "5811a8d7da873dd699ff6687092c225caffcf1bb"
DATE = (2025, 11, 11, 1, 17, 54)

SOURCES: dict[str, bytes] = {
    "torch/__init__.py": b"from torch.version import __version__\nfrom torch import ops\n",
    "torch/version.py": (
        b"__all__ = ['__version__', 'git_version']\n"
        b"__version__ = '2.9.1+cu128'\n"
        b"git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'\n"
    ),
    "torch/ops.py": b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "torch/_C.cpython-311-x86_64-linux-gnu.so": b"\x7fELF\x00\x01compiled\x00" * 64,
    "torch/lib/libtorch_cpu.so": b"\x7fELF\x00\x02compiled\x00" * 512,
    "torch/include/ATen/Tensor.h": b"#pragma once\n",
    "torchgen/__init__.py": b"",
    "functorch/__init__.py": b"",
}


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


# A patch's regression test, as the synthetic series carry one: it fails while `double` is wrong.
DOUBLE_TEST = """\
import unittest

import torch.arith


class TestDouble(unittest.TestCase):
    def test_double(self):
        self.assertEqual(torch.arith.double(2), 4)


if __name__ == "__main__":
    unittest.main()
"""

# git in a checkout the tests make as a developer would (a user's side, not the tool's trees).
DEV_GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
               "GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_CONFIG_GLOBAL": os.devnull}


def dev_git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=dict(os.environ, **DEV_GIT_ENV), text=True, check=True,
                          capture_output=True).stdout.strip()


def make_wheel(dest_dir: Path, extra: dict[str, bytes] | None = None, tag: str = TAG, version: str = VERSION,
               sources: dict[str, bytes] = SOURCES) -> Path:
    """A torch wheel of `version` holding `sources` and `extra`, with the dist-info pip expects."""
    files = dict(sources, **(extra or {}))
    info = f"torch-{version}.dist-info"
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.4\nName: torch\nVersion: {version}\nSummary: synthetic\n"
        "Requires-Python: >=3.10\nRequires-Dist: filelock\n"
        'Provides-Extra: optree\nRequires-Dist: optree>=0.13.0; extra == "optree"\n'
    ).encode()
    files[f"{info}/WHEEL"] = f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\ntorchrun = torch.distributed.run:main\n"
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"torch-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zi = zipfile.ZipInfo(name, DATE)
            zi.external_attr = 0o100644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pin_table(version: str, revision: str, wheels: dict[str, str]) -> str:
    """A base's `[bases."VERSION"]` table of overlay.toml: its revision and wheel tag = sha256."""
    listed = "".join(f'"{tag}" = "{sha}"\n' for tag, sha in wheels.items())
    return f'[bases."{version}"]\nrevision = "{revision}"\n\n[bases."{version}".wheels]\n{listed}\n'


class SyntheticProject:
    """A project root (pin + patches/<version>/) and a cache dir holding a synthetic base wheel."""

    def __init__(self, root: Path, extra: dict[str, bytes] | None = None, tag: str = TAG) -> None:
        self.root = root / "project"
        self.cache = root / "cache"
        self.tag = tag  # another platform's tag: drive the tool through its API, not this interpreter
        self.patches_dir.mkdir(parents=True)
        (self.patches_dir / "series").write_text("")
        self.wheel = make_wheel(self.cache / "wheels", extra, tag)
        self.extra_bases = ""  # the pin tables of other bases (`add_base`)
        self.write_pin(sha256(self.wheel))

    def copy(self, dest: Path) -> SyntheticProject:
        """The same project and cache under `dest` (cheaper than building a prepared tree again)."""
        clone = object.__new__(SyntheticProject)
        clone.root, clone.cache = dest / "project", dest / "cache"
        clone.wheel = clone.cache / self.wheel.relative_to(self.cache)
        clone.tag, clone.extra_bases = self.tag, self.extra_bases
        shutil.copytree(self.root, clone.root, symlinks=True)
        shutil.copytree(self.cache, clone.cache, symlinks=True)
        return clone

    def write_pin(self, sha: str) -> None:
        (self.root / "overlay.toml").write_text(
            f'default-base = "{VERSION}"\n\n' + pin_table(VERSION, REVISION, {self.tag: sha}) + self.extra_bases
        )

    def add_base(self, version: str, sources: dict[str, bytes], revision: str = "0" * 40) -> None:
        """Pin a second base: a synthetic wheel of `version` holding `sources`."""
        wheel = make_wheel(self.cache / "wheels", tag=self.tag, version=version, sources=sources)
        self.extra_bases += pin_table(version, revision, {self.tag: sha256(wheel)})
        self.write_pin(sha256(self.wheel))

    @property
    def patches_dir(self) -> Path:
        return self.root / "patches" / VERSION

    @property
    def build_dir(self) -> Path:
        return self.root / "build" / VERSION

    @property
    def tree(self) -> Path:
        return self.build_dir / "tree"

    def env(self) -> dict[str, str]:
        env = dict(os.environ, TORCH_OVERLAY_CACHE=str(self.cache), PYTHONPATH=str(REPO))
        return env

    def tool(self, *args: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "torch_overlay", *args], cwd=self.root, env=dict(self.env(), **env),
            text=True, capture_output=True,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"torch_overlay {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def git(self, *args: str) -> str:
        env = dict(self.env(), GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
                   GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com",
                   GIT_AUTHOR_DATE="2026-01-02T03:04:05+00:00", GIT_CONFIG_GLOBAL=os.devnull)
        return subprocess.run(["git", *args], cwd=self.tree, env=env, text=True, check=True,
                              capture_output=True).stdout

    def commit_edit(self, path: str, old: str, new: str, message: str) -> None:
        """Edit a file in the tree and commit it, as a developer writing a patch does."""
        file = self.tree / path
        file.write_text(file.read_text().replace(old, new))
        self.git("commit", "-q", "-am", message)

    def add_test_file(self, path: str, text: str, message: str) -> None:
        self.commit_files({path: text}, message)

    def commit_files(self, files: dict[str, str], message: str) -> None:
        """Write files into the tree and commit them as one patch."""
        for name, text in files.items():
            file = self.tree / name
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text)
            self.git("add", name)
        self.git("commit", "-q", "-m", message)

    def series(self) -> list[str]:
        return (self.patches_dir / "series").read_text().split()


def project_with_a_patch(root: Path) -> SyntheticProject:
    """A synthetic project whose series is one exported patch (`mul` commuted)."""
    p = SyntheticProject(root)
    p.tool("tree")
    p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
    p.tool("export")
    return p


class TempDirMixin:
    """`self.tmp`: a directory of the test's own, removed after it (mix into any TestCase)."""

    tmp: Path

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)  # type: ignore[attr-defined]
        self.tmp = Path(directory.name)


class TemplateProjectTestCase(TempDirMixin, unittest.TestCase):
    """Each test works on `self.p`, a copy of one project the class prepares once (`build_template`):
    copying a prepared tree is much cheaper than building it again for every test."""

    template: SyntheticProject

    @classmethod
    def build_template(cls, root: Path) -> SyntheticProject:
        raise NotImplementedError

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        directory = tempfile.TemporaryDirectory()
        cls.addClassCleanup(directory.cleanup)
        cls.template = cls.build_template(Path(directory.name))

    def setUp(self) -> None:
        super().setUp()
        self.p = self.template.copy(self.tmp)


def wait_for_line(proc: subprocess.Popen[str], text: str, timeout: float = 60.0) -> str:
    """Read `proc`'s stderr until a line contains `text` (what was read); fail at the deadline.

    A thread does the reading so that the deadline holds even if the process prints nothing.
    """
    assert proc.stderr is not None
    seen: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if text in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.05):
        if time.monotonic() > deadline or (proc.poll() is not None and not found.wait(1.0)):
            raise AssertionError(f"no line with {text!r} from pid {proc.pid}; read so far:\n{''.join(seen)}")
    return "".join(seen)
