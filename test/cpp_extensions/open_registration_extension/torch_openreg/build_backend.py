"""PEP 517 backend of the `torch_openreg` distribution (see pyproject.toml beside this file).

OpenReg is built against the repository's fork tree with the repository's tool, so the hooks
live there (`torch_overlay/artifacts/openreg_backend.py`); this shim finds the repository and re-exports them.
"""

import sys
from pathlib import Path

_REPOSITORY = next(p for p in Path(__file__).resolve().parents if (p / "overlay.toml").is_file())
sys.path.insert(0, str(_REPOSITORY))

from torch_overlay.artifacts.openreg_backend import (  # noqa: E402
    build_editable,
    build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable", "build_wheel", "prepare_metadata_for_build_editable", "prepare_metadata_for_build_wheel",
]
