"""Every pinned torch 2.9.1 wheel: which one an interpreter takes, and the custom wheel for
macOS, Windows and aarch64 tags, built on synthetic wheels of those tags.

The interpreters are described by the tag lists `packaging.tags` generates for them (what pip
on that machine accepts, most preferred first), so no such machine is needed.
"""

from __future__ import annotations

import csv
import io
import sys
import unittest
import zipfile
from pathlib import Path

from packaging import tags
from packaging.utils import parse_wheel_filename
from synthetic import REPO, SyntheticProject, TempDirMixin, record_hash
from test_wheel import raw_members

sys.path.insert(0, str(REPO))
from torch_overlay.artifacts.wheel import build_wheel  # noqa: E402
from torch_overlay.core.errors import OverlayError  # noqa: E402
from torch_overlay.core.project import Cache, Project  # noqa: E402
from torch_overlay.fork.series import read_series  # noqa: E402
from torch_overlay.fork.tree import export, materialise  # noqa: E402
from torch_overlay.pinning.base import is_wheel_of, load  # noqa: E402
from torch_overlay.pinning.pin import load_pin  # noqa: E402

PIN = load_pin(REPO / "overlay.toml", "2.9.1")


def manylinux(arch: str, glibc_minor: int) -> list[str]:
    """The platform tags of a glibc 2.<glibc_minor> Linux, newest first."""
    return [f"manylinux_2_{minor}_{arch}" for minor in range(glibc_minor, 16, -1)] + [f"linux_{arch}"]


def cpython(version: tuple[int, int], platforms: list[str], free_threaded: bool = False) -> list[str]:
    abis = [f"cp{version[0]}{version[1]}{'t' if free_threaded else ''}"]
    generated = tags.cpython_tags(version, abis=abis, platforms=platforms)
    return [str(t) for t in generated] + [str(t) for t in tags.compatible_tags(version, platforms=platforms)]


MACOS_ARM64 = list(tags.mac_platforms((14, 0), "arm64"))


class TestPinnedWheels(unittest.TestCase):
    def test_every_file_of_the_release_is_pinned(self) -> None:
        pinned = {wheel.tag for wheel in PIN.wheels}
        expected = set()
        for py in ("310", "311", "312", "313", "314"):
            mac_abi = f"cp{py}" if py == "314" else "none"  # cp310-cp313 macOS files carry `none`
            expected |= {f"cp{py}-cp{py}-manylinux_2_28_x86_64", f"cp{py}-cp{py}-manylinux_2_28_aarch64",
                         f"cp{py}-cp{py}-win_amd64", f"cp{py}-{mac_abi}-macosx_11_0_arm64"}
        for py in ("313", "314"):
            expected |= {f"cp{py}-cp{py}t-{plat}" for plat in
                         ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_11_0_arm64")}
        self.assertEqual(pinned, expected)
        self.assertEqual(len({wheel.sha256 for wheel in PIN.wheels}), 28)

    def test_choice_per_interpreter(self) -> None:
        cases = {
            "cp312-none-macosx_11_0_arm64": cpython((3, 12), MACOS_ARM64),
            "cp314-cp314-macosx_11_0_arm64": cpython((3, 14), MACOS_ARM64),
            "cp313-cp313t-macosx_11_0_arm64": cpython((3, 13), MACOS_ARM64, free_threaded=True),
            "cp310-cp310-win_amd64": cpython((3, 10), ["win_amd64"]),
            "cp314-cp314t-win_amd64": cpython((3, 14), ["win_amd64"], free_threaded=True),
            "cp313-cp313-manylinux_2_28_aarch64": cpython((3, 13), manylinux("aarch64", 31)),
            "cp311-cp311-manylinux_2_28_x86_64": cpython((3, 11), manylinux("x86_64", 36)),
            "cp313-cp313t-manylinux_2_28_x86_64": cpython((3, 13), manylinux("x86_64", 28), free_threaded=True),
        }
        for expected, supported in cases.items():
            wheel = PIN.wheel_for_tags(supported)
            self.assertIsNotNone(wheel, expected)
            assert wheel is not None
            self.assertEqual(wheel.tag, expected)

    def test_no_fitting_wheel(self) -> None:
        self.assertIsNone(PIN.wheel_for_tags(cpython((3, 12), manylinux("x86_64", 27))))  # glibc too old
        self.assertIsNone(PIN.wheel_for_tags(cpython((3, 9), manylinux("x86_64", 36))))
        self.assertIsNone(PIN.wheel_for_tags(cpython((3, 12), list(tags.mac_platforms((14, 0), "x86_64")))))

    def test_this_interpreter_takes_its_own_wheel(self) -> None:
        wheel = PIN.wheel_for_this_interpreter()
        self.assertIn(wheel.tag, {str(t) for t in tags.sys_tags()})

    def test_refusal_lists_the_supported_tags(self) -> None:
        pin = type(PIN)(PIN.version, PIN.revision, tuple(w for w in PIN.wheels if "win" in w.tag), {})
        with self.assertRaises(OverlayError) as caught:
            pin.wheel_for_this_interpreter()
        message = str(caught.exception)
        self.assertIn("no pinned torch 2.9.1 wheel runs on this interpreter", message)
        self.assertIn("supported wheel tags: cp310-cp310-win_amd64, cp311-cp311-win_amd64", message)
        self.assertIn("overlay.toml", message)

    def test_downloaded_file_is_told_by_its_parsed_name(self) -> None:
        tag = "cp311-cp311-manylinux_2_28_x86_64"
        self.assertTrue(is_wheel_of(f"torch-2.9.1-{tag}.whl", "2.9.1", tag))
        self.assertTrue(is_wheel_of(f"torch-2.10.0-3-{tag}.whl", "2.10.0", tag))  # a re-upload's build tag
        self.assertFalse(is_wheel_of(f"torch-2.9.1+cpu-{tag}.whl", "2.9.1", tag))  # a local build
        self.assertFalse(is_wheel_of(f"torch-2.10.0rc1-{tag}.whl", "2.10.0", tag))
        self.assertFalse(is_wheel_of("torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl", "2.9.1", tag))
        self.assertFalse(is_wheel_of(f"torchvision-2.9.1-{tag}.whl", "2.9.1", tag))
        self.assertFalse(is_wheel_of("torch-2.9.1.tar.gz", "2.9.1", tag))


# A synthetic base per platform: its compiled files, and torch/version.py as that wheel has it.
PLATFORMS = {
    "macos": ("cp312-none-macosx_11_0_arm64", "2.9.1", {
        "torch/_C.cpython-312-darwin.so": b"\xcf\xfa\xed\xfe\x00macho" * 64,
        "torch/lib/libc10.dylib": b"\xcf\xfa\xed\xfe\x00c10" * 256,
    }),
    "windows": ("cp310-cp310-win_amd64", "2.9.1+cpu", {
        "torch/_C.cp310-win_amd64.pyd": b"MZ\x90\x00pe" * 64,
        "torch/lib/c10.dll": b"MZ\x90\x00c10" * 256,
    }),
    "aarch64": ("cp313-cp313-manylinux_2_28_aarch64", "2.9.1", {
        "torch/_C.cpython-313-aarch64-linux-gnu.so": b"\x7fELF\x00aarch64" * 64,
    }),
}


class TestOtherPlatformWheels(TempDirMixin, unittest.TestCase):
    def test_custom_wheel(self) -> None:
        for platform in PLATFORMS:
            with self.subTest(platform=platform):
                self.check_custom_wheel(platform, self.tmp / platform)

    def check_custom_wheel(self, platform: str, root: Path) -> None:
        tag, base_version, compiled = PLATFORMS[platform]
        version_py = f"__version__ = '{base_version}'\ngit_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'\n"
        p = SyntheticProject(root, {**compiled, "torch/version.py": version_py.encode()}, tag=tag)
        # Another platform's wheel: the API takes it by tag (the command line takes this interpreter's).
        project = Project.at(p.root, Cache(p.cache))
        pin = load_pin(project.pin_file, project.base)
        base = load(project.cache, pin, pin.wheel_for_tag(tag))
        materialise(project, base)
        p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        export(project)
        materialise(project, base)
        patches = read_series(project.patches_dir)
        wheel = build_wheel(pin, base, project.cache, project.tree_dir, patches, root / "dist")

        name, version, _, wheel_tags = parse_wheel_filename(wheel.name)
        self.assertEqual((name, {str(t) for t in wheel_tags}), ("torch", {tag}))
        self.assertRegex(str(version), r"^2\.9\.1\+ovl1\.g[0-9a-f]{8}$")
        info = f"torch-{version}.dist-info"
        base_members, new_members = raw_members(p.wheel), raw_members(wheel)
        for member in compiled:
            self.assertEqual(new_members[member], base_members[member], member)  # stored bytes untouched
        self.assertEqual(new_members[f"{info}/WHEEL"], base_members["torch-2.9.1.dist-info/WHEEL"])
        with zipfile.ZipFile(wheel) as zf:
            self.assertIn(f"Tag: {tag}\n", zf.read(f"{info}/WHEEL").decode())
            self.assertIn(f"\nVersion: {version}\n", zf.read(f"{info}/METADATA").decode())
            new_version_py = zf.read("torch/version.py").decode()
            self.assertIn(f"__version__ = '{version}'\n", new_version_py)
            self.assertNotIn(base_version + "'", new_version_py.split("overlay_base_version")[0])
            self.assertIn("git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'", new_version_py)
            self.assertIn("return b * a", zf.read("torch/ops.py").decode())
            rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode())))
            for member, digest, size in rows:
                if member != f"{info}/RECORD":
                    data = zf.read(member)
                    self.assertEqual((digest, size), (record_hash(data), str(len(data))), member)


if __name__ == "__main__":
    unittest.main()
