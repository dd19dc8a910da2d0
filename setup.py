"""`pip install -e .`: install the patched fork tree (build/tree) as the distribution `torch`.

The tree is materialised from the pinned official wheel plus patches/ when it is stale, and put
on sys.path by a .pth file, so an edit in build/tree is live at the next import. OpenReg, the
PrivateUse1 test extension, is built with CMake + Ninja against that tree.
"""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent.resolve()
sys.path.insert(0, str(ROOT))

from torch_overlay.editable import prepare  # noqa: E402

dist = prepare(ROOT)


class BuildPyWithOpenReg(build_py):
    """Builds OpenReg next to the Python packages (incremental: a no-op when nothing changed)."""

    def run(self) -> None:
        super().run()
        from torch_overlay.openreg import build_openreg

        build_openreg(dist.tree / "torch", ROOT / "build" / "openreg")


setup(
    name="torch",
    version=dist.version,
    description=dist.summary,
    python_requires=dist.python_requires,
    package_dir={"": str(dist.tree.relative_to(ROOT))},
    packages=dist.packages,
    install_requires=dist.install_requires,
    extras_require=dist.extras_require,
    entry_points=dist.entry_points,
    cmdclass={"build_py": BuildPyWithOpenReg},
    zip_safe=False,
)
