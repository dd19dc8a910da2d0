"""The PEP 517 / 660 backend on a synthetic project, driven by the real front-ends.

The synthetic project gets this repository's pyproject.toml and a copy of the tool, so every
front-end runs the real in-tree backend. The pip tests pass `--no-build-isolation` (this
environment's `packaging`, no index); `TestFrontEnds` drives `python -m build` and uv the way
users do, each in an isolated build environment filled from the index.
"""

from __future__ import annotations

import email.message
import email.parser
import os
import pty
import shutil
import subprocess
import sys
import tarfile
import tempfile
import venv
import zipfile
from pathlib import Path

from synthetic import REPO, SyntheticProject, record_hash, sha256
from test_wheel import raw_members
from torch.testing._internal.common_utils import (
    TestCase,
    instantiate_parametrized_tests,
    parametrize,
    run_tests,
)


def metadata(text: str) -> email.message.Message:
    return email.parser.Parser().parsestr(text)


class BackendTestBase(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.p = SyntheticProject(self.tmp)
        self.p.tool("tree")
        self.p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        self.p.tool("export")
        shutil.copy(REPO / "pyproject.toml", self.p.root)
        shutil.copy(REPO / "README.md", self.p.root)
        shutil.copytree(REPO / "torch_overlay", self.p.root / "torch_overlay",
                        ignore=shutil.ignore_patterns("__pycache__"))

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def env(self, **extra: str) -> dict[str, str]:
        """The project's cache, and no PYTHONPATH: the tool must come from the project itself."""
        env = {k: v for k, v in self.p.env().items() if k != "PYTHONPATH"}
        env.update(PIP_NO_INPUT="1", **extra)
        return env

    def pip(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([sys.executable, "-m", "pip", *args, "--no-build-isolation", "--no-deps",
                                 "--no-index", "--disable-pip-version-check"],
                                cwd=self.tmp, env=self.env(), capture_output=True, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"pip {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def hook(self, source: Path, name: str, out: Path) -> str:
        """Call one hook as a front-end does: in a fresh process whose cwd is the source tree."""
        code = f"import sys; sys.path.insert(0, '.'); from torch_overlay.artifacts import build_backend as b; print(b.{name}(sys.argv[1]))"
        result = subprocess.run([sys.executable, "-c", code, str(out)], cwd=source, env=self.env(),
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"{name} failed:\n{result.stderr}")
        return result.stdout.strip().splitlines()[-1]

    def tool_wheel(self) -> Path:
        return Path(self.p.tool("wheel", "-o", str(self.tmp / "tool")).stdout.strip())


class TestWheel(BackendTestBase):
    def test_pip_wheel_is_the_tool_wheel(self) -> None:
        self.pip("wheel", "-w", str(self.tmp / "pip"), str(self.p.root))
        built = list((self.tmp / "pip").glob("*.whl"))
        self.assertEqual(len(built), 1)
        tool = self.tool_wheel()
        self.assertEqual(built[0].name, tool.name)
        self.assertEqual(sha256(built[0]), sha256(tool))

    def test_an_overlay_error_reaches_pip_as_one_line(self) -> None:
        data = bytearray(self.p.wheel.read_bytes())
        data[100] ^= 0xFF
        self.p.wheel.write_bytes(bytes(data))
        result = self.pip("wheel", "-w", str(self.tmp / "pip"), str(self.p.root), check=False)
        self.assertNotEqual(result.returncode, 0)
        output = result.stdout + result.stderr
        self.assertIn("error: ", output)
        self.assertIn("does not match the pin", output)
        self.assertNotIn("Traceback", output)
        self.assertFalse(list((self.tmp / "pip").glob("*.whl")) if (self.tmp / "pip").exists() else [])


class TestProgress(BackendTestBase):
    """pip captures a backend's output; the long steps must still reach the user's terminal."""

    def pip_wheel_on_a_terminal(self) -> str:
        pid, fd = pty.fork()
        if pid == 0:  # the child: pip, with the pty as its controlling terminal
            os.chdir(self.tmp)
            cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                   "-w", str(self.tmp / "pip"), str(self.p.root)]
            os.execve(sys.executable, cmd, self.env())
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        output = b"".join(chunks).decode(errors="replace")
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, output)
        return output

    def test_extraction_progress_reaches_the_terminal(self) -> None:
        shutil.rmtree(self.p.cache / "base")  # the base must be extracted again
        self.assertIn(f"extracting {self.p.wheel.name}: 100%", self.pip_wheel_on_a_terminal())

    def test_without_a_terminal_pip_shows_it_with_v_only(self) -> None:
        shutil.rmtree(self.p.cache / "base")
        result = self.pip("wheel", "-w", str(self.tmp / "pip"), str(self.p.root))
        self.assertNotIn("extracting", result.stdout + result.stderr)  # why the terminal is needed
        shutil.rmtree(self.p.cache / "base")
        verbose = self.pip("wheel", "-v", "-w", str(self.tmp / "pip-verbose"), str(self.p.root))
        self.assertIn(f"extracting {self.p.wheel.name}: 100%", verbose.stdout + verbose.stderr)


class TestEditable(BackendTestBase):
    def test_editable_wheel_is_the_base_metadata_and_a_pth(self) -> None:
        name = self.hook(self.p.root, "build_editable", self.tmp / "editable")
        self.assertEqual(name, self.tool_wheel().name)  # same name and tag as the custom wheel
        version = name.split("-")[1]
        with zipfile.ZipFile(self.tmp / "editable" / name) as zf, zipfile.ZipFile(self.p.wheel) as base:
            info = f"torch-{version}.dist-info"
            self.assertEqual(
                sorted(zf.namelist()),
                sorted([f"__editable__.torch-{version}.pth", f"{info}/METADATA", f"{info}/WHEEL",
                        f"{info}/entry_points.txt", f"{info}/RECORD"]),
            )
            self.assertEqual(zf.read(f"__editable__.torch-{version}.pth").decode(), f"{self.p.tree.resolve()}\n")
            ours = metadata(zf.read(f"{info}/METADATA").decode())
            theirs = metadata(base.read("torch-2.9.1.dist-info/METADATA").decode())
            self.assertEqual(ours["Version"], version)
            self.assertEqual(ours.get_all("Requires-Dist"), theirs.get_all("Requires-Dist"))
            self.assertEqual([(k, v) for k, v in ours.items() if k != "Version"],
                             [(k, v) for k, v in theirs.items() if k != "Version"])
            self.assertEqual(zf.read(f"{info}/entry_points.txt"), base.read("torch-2.9.1.dist-info/entry_points.txt"))
            rows = [line.split(",") for line in zf.read(f"{info}/RECORD").decode().splitlines()]
            for member, digest, size in rows:
                if member != f"{info}/RECORD":
                    self.assertEqual((digest, size), (record_hash(zf.read(member)), str(len(zf.read(member)))))

    def test_pip_editable_install_imports_the_tree(self) -> None:
        # A venv of its own: pip would uninstall this environment's torch first. Its build
        # environment is isolated, as a user's is (pip and packaging come from the index).
        env_dir = self.tmp / "venv"
        venv.create(env_dir, with_pip=True)
        python = str(env_dir / "bin" / "python")
        install = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(self.p.root)],
                                 cwd=self.tmp, env=self.env(), capture_output=True, text=True)
        self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
        code = ("import torch, importlib.metadata as m; "
                "print(torch.__file__); print(m.version('torch')); print(m.requires('torch'))")
        out = subprocess.run([python, "-c", code], cwd=self.tmp, env=self.env(),
                             capture_output=True, text=True, check=True).stdout.splitlines()
        self.assertEqual(Path(out[0]), self.p.tree.resolve() / "torch" / "__init__.py")
        self.assertEqual(out[1], self.tool_wheel().name.split("-")[1])
        self.assertEqual(out[2], "['filelock', 'optree>=0.13.0; extra == \"optree\"']")  # the base's, nothing added


class TestSdist(BackendTestBase):
    def test_sdist_holds_what_the_wheel_needs_and_builds_the_same_wheel(self) -> None:
        first = self.hook(self.p.root, "build_sdist", self.tmp / "sdist")
        again = self.hook(self.p.root, "build_sdist", self.tmp / "sdist-again")
        self.assertEqual(sha256(self.tmp / "sdist" / first), sha256(self.tmp / "sdist-again" / again))
        with tarfile.open(self.tmp / "sdist" / first) as tar:
            names = tar.getnames()
            tar.extractall(self.tmp / "unpacked", filter="data")
        prefix = first.removesuffix(".tar.gz")
        patch = self.p.series()[0]
        for needed in ("PKG-INFO", "pyproject.toml", "overlay.toml", "patches/2.9.1/series", f"patches/2.9.1/{patch}",
                       "torch_overlay/artifacts/build_backend.py", "torch_overlay/artifacts/wheel.py"):
            self.assertIn(f"{prefix}/{needed}", names)
        self.assertFalse(any("/build/" in name or "__pycache__" in name for name in names), names)
        wheel = self.hook(self.tmp / "unpacked" / prefix, "build_wheel", self.tmp / "from-sdist")
        tool = self.tool_wheel()
        self.assertEqual(wheel, tool.name)
        self.assertEqual(raw_members(self.tmp / "from-sdist" / wheel), raw_members(tool))
        self.assertEqual(sha256(self.tmp / "from-sdist" / wheel), sha256(tool))


class TestFrontEnds(BackendTestBase):
    """What users type. Every standard front-end runs the backend in its own isolated build
    environment (build requirements from the index), as on a user's machine, and must give
    the wheel `python -m torch_overlay wheel` writes, byte for byte."""

    def run_front_end(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = self.env(UV_CACHE_DIR=str(self.tmp / "uv-cache"), UV_NO_PROGRESS="1")
        result = subprocess.run(args, cwd=self.tmp, env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, f"{' '.join(args)}:\n{result.stdout}\n{result.stderr}")
        return result

    def uv(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run_front_end(sys.executable, "-m", "uv", *args)

    def assert_tool_wheel(self, out: Path) -> None:
        built = list(out.glob("*.whl"))
        self.assertEqual(len(built), 1, built)
        tool = self.tool_wheel()
        self.assertEqual(built[0].name, tool.name)
        self.assertEqual(sha256(built[0]), sha256(tool))

    def fresh_venv(self) -> str:
        env_dir = self.tmp / "venv"
        venv.create(env_dir, with_pip=False)  # uv installs into it; pip is not needed there
        return str(env_dir / "bin" / "python")

    def installed(self, python: str) -> tuple[str, str, str]:
        """torch's location, its installed version and the text of the patched module."""
        code = "import torch, importlib.metadata as m; print(torch.__file__); print(m.version('torch'))"
        out = subprocess.run([python, "-c", code], cwd=self.tmp, env=self.env(), capture_output=True, text=True, check=True)
        file, version = out.stdout.splitlines()
        return file, version, (Path(file).parent / "ops.py").read_text()

    def test_python_m_build_wheel(self) -> None:
        self.run_front_end(sys.executable, "-m", "build", "--wheel", "-o", str(self.tmp / "out"), str(self.p.root))
        self.assert_tool_wheel(self.tmp / "out")

    def test_python_m_build_goes_through_the_sdist(self) -> None:
        # build's default: an sdist, then the wheel built from the unpacked sdist
        self.run_front_end(sys.executable, "-m", "build", "-o", str(self.tmp / "out"), str(self.p.root))
        self.assertEqual(len(list((self.tmp / "out").glob("*.tar.gz"))), 1)
        self.assert_tool_wheel(self.tmp / "out")

    def test_uv_build_wheel(self) -> None:
        self.uv("build", "--wheel", "-o", str(self.tmp / "out"), str(self.p.root))
        self.assert_tool_wheel(self.tmp / "out")

    def test_uv_pip_install_installs_the_tool_wheel(self) -> None:
        python = self.fresh_venv()
        self.uv("pip", "install", "--python", python, "--no-deps", str(self.p.root))
        file, version, patched = self.installed(python)
        self.assertTrue(file.startswith(str(self.tmp / "venv")), file)  # a copy, not the tree
        self.assertEqual(version, self.tool_wheel().name.split("-")[1])
        self.assertIn("return b * a", patched)

    @parametrize("editable", [False, True])
    def test_uv_reinstalls_when_the_series_changes(self, editable: bool) -> None:
        # A second install after a new patch must give a new torch: a new version, and the new
        # code (uv skips reinstalling a local project it considers fresh)
        python = self.fresh_venv()
        install = ["pip", "install", "--python", python, "--no-deps", *(["-e"] if editable else []), str(self.p.root)]
        self.uv(*install)
        self.p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Commute add")
        self.p.tool("export")
        self.uv(*install)
        _, version, patched = self.installed(python)
        self.assertEqual(version, self.tool_wheel().name.split("-")[1])
        self.assertIn("return b + a", patched)

    def test_uv_pip_install_editable_imports_the_tree(self) -> None:
        python = self.fresh_venv()
        self.uv("pip", "install", "--python", python, "--no-deps", "-e", str(self.p.root))
        file, version, _ = self.installed(python)
        self.assertEqual(Path(file), self.p.tree.resolve() / "torch" / "__init__.py")
        self.assertEqual(version, self.tool_wheel().name.split("-")[1])


instantiate_parametrized_tests(TestFrontEnds)

if __name__ == "__main__":
    run_tests()
