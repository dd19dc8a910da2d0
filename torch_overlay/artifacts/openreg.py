"""Build the OpenReg PrivateUse1 test extension with CMake + Ninja.

The extension lives in `test/cpp_extensions/open_registration_extension/torch_openreg` and is
built against a given `torch/` package directory (the overlay tree or a stock install), through
the repository's top-level `CMakeLists.txt`. The build stages an importable package in
`<build dir>/python/torch_openreg`; `build_openreg` returns `<build dir>/python` for `sys.path`
or PYTHONPATH.

    python -m torch_overlay.artifacts.openreg --torch-dir .../site-packages/torch --build-dir build/openreg

Configuring happens once per build directory (again only when the torch directory, ABI or
compiler changes); later calls run Ninja incrementally, so an unchanged rebuild is a quick
no-op. No third-party module is needed: `test/run_test.py` runs this under `python -S` too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core import atomic, log
from ..core.errors import ToolError
from ..core.fault import fault_point
from ..core.lock import build_lock
from ..core.project import CHECKOUT

PACKAGE_NAME = "torch_openreg"
LIBRARY_NAME = "libtorch_openreg.so"
MIN_CMAKE = (3, 18)

# Build-dir bookkeeping: what the current configuration was made for.
_STAMP_NAME = "openreg-config.json"
_INSTALL_TOOLS_HINT = "install with `pip install cmake ninja` (or `apt-get install cmake ninja-build`)"


class OpenRegBuildError(ToolError):
    """Building OpenReg failed; the message says what is missing or broken."""


# -- the build tools ----------------------------------------------------------------------------

def _tool_from_pypi(module_name: str, dir_attr: str, exe: str) -> Path | None:
    """The executable shipped by the `cmake` / `ninja` PyPI packages, if importable."""
    try:
        module = __import__(module_name)
    except ImportError:
        return None
    bin_dir = getattr(module, dir_attr, None)
    if bin_dir is None:
        return None
    candidate = Path(bin_dir) / exe
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def find_cmake() -> Path:
    found = shutil.which("cmake")
    path = Path(found) if found else _tool_from_pypi("cmake", "CMAKE_BIN_DIR", "cmake")
    if path is None:
        raise OpenRegBuildError(f"CMake not found on PATH (needed to build OpenReg): {_INSTALL_TOOLS_HINT}")
    _check_cmake_version(path)
    return path


def _check_cmake_version(cmake: Path) -> None:
    out = subprocess.run([str(cmake), "--version"], capture_output=True, text=True).stdout
    match = re.search(r"version (\d+)\.(\d+)", out)
    if match and (int(match.group(1)), int(match.group(2))) < MIN_CMAKE:
        raise OpenRegBuildError(
            f"{cmake} is CMake {match.group(1)}.{match.group(2)}; OpenReg needs >= "
            f"{MIN_CMAKE[0]}.{MIN_CMAKE[1]}: `pip install cmake`"
        )


def find_ninja() -> Path:
    found = shutil.which("ninja")
    path = Path(found) if found else _tool_from_pypi("ninja", "BIN_DIR", "ninja")
    if path is None:
        raise OpenRegBuildError(f"Ninja not found on PATH (needed to build OpenReg): {_INSTALL_TOOLS_HINT}")
    return path


def find_compiler() -> Path:
    """The C++ compiler: $CXX if set (must exist), else c++, g++ or clang++ on PATH."""
    cxx = os.environ.get("CXX", "").strip()
    if cxx:
        program = shlex.split(cxx)[0]
        found = shutil.which(program)
        if not found:
            raise OpenRegBuildError(f"CXX={cxx!r} does not name an executable C++ compiler")
        return Path(found)
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found:
            return Path(found)
    raise OpenRegBuildError(
        "No C++ compiler found (tried $CXX, c++, g++, clang++): "
        "install one with `apt-get install g++` or set CXX"
    )


# -- the torch to build against -----------------------------------------------------------------

def _check_torch_dir(torch_dir: Path) -> None:
    for needed in ("include/ATen/ATen.h", "lib/libc10.so", "lib/libtorch_cpu.so", "utils/cpp_extension.py"):
        if not (torch_dir / needed).exists():
            raise OpenRegBuildError(
                f"{torch_dir} is not a usable torch package directory: {needed} is missing "
                f"(pass the `torch/` directory of an installed wheel or overlay tree)"
            )


def detect_cxx_standard(torch_dir: Path) -> str:
    """The C++ standard that torch compiles its own extensions with (`17`, `20`): its headers
    need it (2.15.0's use C++20's `std::strong_ordering`), so OpenReg is built with the same.

    Read from the flag `torch.utils.cpp_extension` passes, without importing that torch.
    """
    source = (torch_dir / "utils" / "cpp_extension.py").read_text(errors="replace")
    found = re.search(r"cpp_flag_prefix \+ 'c\+\+(\d+)'", source)
    if found is None:
        raise OpenRegBuildError(f"{torch_dir / 'utils' / 'cpp_extension.py'} does not say which C++ standard "
                                "torch's extensions use (no `cpp_flag_prefix + 'c++NN'`)")
    return found.group(1)


def detect_cxx11_abi(torch_dir: Path) -> int:
    """Value of `torch._C._GLIBCXX_USE_CXX11_ABI`, read from libc10.so.

    Importing that torch here would need its interpreter and take seconds; the ABI is visible
    in the binary instead: with the new ABI, c10's mangled names mention
    `std::__cxx11::basic_string`.
    """
    marker = b"St7__cxx1112basic_string"
    with (torch_dir / "lib" / "libc10.so").open("rb") as f:
        tail = b""
        while chunk := f.read(1 << 20):
            if marker in tail + chunk:
                return 1
            tail = chunk[-len(marker):]
    return 0


# -- running CMake and Ninja --------------------------------------------------------------------

def _run_streaming(cmd: Sequence[str | Path], *, quiet: bool) -> tuple[int, list[str]]:
    """Run `cmd`, echoing its output live unless quiet; returns the exit status and the lines."""
    lines: list[str] = []
    with subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if not quiet:
                sys.stdout.write(line)
                sys.stdout.flush()
    return proc.returncode, lines


def _first_error(lines: Sequence[str]) -> str | None:
    """The compiler's first `error:` line (later ones are often follow-ups)."""
    for line in lines:
        if "error:" in line:
            return line.strip()
    for line in lines:  # CMake reports its own problems as "CMake Error ..."
        if "CMake Error" in line or "FAILED:" in line:
            return line.strip()
    return None


def _fail(what: str, build_dir: Path, lines: Sequence[str]) -> OpenRegBuildError:
    first = _first_error(lines)
    tail = "\n".join(lines[-15:])
    message = f"{what} failed (build dir {build_dir})"
    if first:
        message += f"\nfirst error: {first}"
    return OpenRegBuildError(f"{message}\n--- last output lines ---\n{tail}")


# -- configuring --------------------------------------------------------------------------------

def _wanted_config(torch_dir: Path, compiler: Path, cxx11_abi: int, cmake: Path, ninja: Path) -> dict[str, object]:
    return {
        "torch_dir": str(torch_dir),
        "compiler": str(compiler),
        "cxx11_abi": cxx11_abi,
        "cxx_standard": detect_cxx_standard(torch_dir),
        "source": str(CHECKOUT),
        # `pip install -e .` builds with the cmake/ninja of pip's temporary build environment,
        # later runs with the venv's: a move of the tools needs a re-configure, not a rebuild.
        "tools": [str(cmake), str(ninja)],
    }


def _configure_kind(build_dir: Path, wanted: dict[str, object]) -> str | None:
    """None when the configuration is current, "refresh" when only the tools moved, else "fresh"."""
    stamp = build_dir / _STAMP_NAME
    if not (build_dir / "CMakeCache.txt").exists() or not (build_dir / "build.ninja").exists():
        return "fresh"
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return "fresh"
    if recorded == wanted:
        return None
    return "refresh" if _without_tools(recorded) == _without_tools(wanted) else "fresh"


def _without_tools(config: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in config.items() if k != "tools"}


def _configure(build_dir: Path, cmake: Path, ninja: Path, compiler: Path, wanted: dict[str, object], *,
               fresh: bool, quiet: bool) -> None:
    if fresh:
        # A different torch or compiler invalidates cached paths and checks: start clean.
        (build_dir / "CMakeCache.txt").unlink(missing_ok=True)
        shutil.rmtree(build_dir / "CMakeFiles", ignore_errors=True)
    (build_dir / _STAMP_NAME).unlink(missing_ok=True)
    cmd: list[str | Path] = [
        cmake, "-G", "Ninja", "-S", CHECKOUT, "-B", build_dir,
        f"-DCMAKE_MAKE_PROGRAM={ninja}",
        f"-DCMAKE_CXX_COMPILER={compiler}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DTORCH_PYTHON_DIR={wanted['torch_dir']}",
        f"-DOPENREG_CXX11_ABI={wanted['cxx11_abi']}",
        f"-DOPENREG_CXX_STANDARD={wanted['cxx_standard']}",
        f"-DOPENREG_PYTHON_DIR={build_dir / 'python'}",
    ]  # fmt: skip
    rc, lines = _run_streaming(cmd, quiet=quiet)
    if rc != 0:
        raise _fail("Configuring OpenReg with CMake", build_dir, lines)
    atomic.write_text(build_dir / _STAMP_NAME, json.dumps(wanted, indent=1) + "\n")


# -- building -----------------------------------------------------------------------------------

def build_openreg(torch_dir: Path, build_dir: Path, *, quiet: bool = False, cxx11_abi: int | None = None,
                  jobs: int | None = None) -> Path:
    """Configure (if needed) and build OpenReg against `torch_dir`.

    Returns the directory to put on `sys.path` so that `import torch_openreg` finds the freshly
    built package. `cxx11_abi` overrides the ABI detected from the torch binaries; `jobs` limits
    Ninja's parallelism. Raises OpenRegBuildError with an actionable message on any failure.
    """
    torch_dir = Path(torch_dir).resolve()
    build_dir = Path(build_dir).resolve()
    _check_torch_dir(torch_dir)
    cmake, ninja, compiler = find_cmake(), find_ninja(), find_compiler()
    abi = detect_cxx11_abi(torch_dir) if cxx11_abi is None else int(cxx11_abi)
    wanted = _wanted_config(torch_dir, compiler, abi, cmake, ninja)

    with build_lock(build_dir):  # two test runners sharing a build dir would race inside Ninja
        kind = _configure_kind(build_dir, wanted)
        if kind is not None:
            _configure(build_dir, cmake, ninja, compiler, wanted, fresh=kind == "fresh", quiet=quiet)
        fault_point("openreg", build_dir)
        cmd: list[str | Path] = [cmake, "--build", build_dir]
        if jobs:
            cmd += ["--parallel", str(jobs)]
        rc, lines = _run_streaming(cmd, quiet=quiet)
        if rc != 0:
            raise _fail("Building OpenReg", build_dir, lines)

    python_dir = build_dir / "python"
    if not (python_dir / PACKAGE_NAME / "lib" / LIBRARY_NAME).exists():
        raise OpenRegBuildError(f"build succeeded but {python_dir / PACKAGE_NAME / 'lib' / LIBRARY_NAME} is missing")
    return python_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torch_overlay.artifacts.openreg",
        description="Build the OpenReg PrivateUse1 test extension; prints the directory for PYTHONPATH.",
    )
    parser.add_argument("--torch-dir", type=Path, required=True, help="torch package directory to build against")
    parser.add_argument("--build-dir", type=Path, required=True, help="CMake build directory (created if needed)")
    parser.add_argument("--quiet", action="store_true", help="do not echo CMake/Ninja output")
    parser.add_argument("--cxx11-abi", type=int, choices=(0, 1), help="override the detected _GLIBCXX_USE_CXX11_ABI")
    parser.add_argument("-j", "--jobs", type=int, help="parallel compile jobs")
    args = parser.parse_args(argv)
    try:
        python_dir = build_openreg(
            args.torch_dir, args.build_dir, quiet=args.quiet, cxx11_abi=args.cxx11_abi, jobs=args.jobs
        )
    except OpenRegBuildError as exc:
        log.error(str(exc))
        return 1
    print(python_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
