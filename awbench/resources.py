"""Files shipped with awbench: the top-level `data/` and `judges/` folders.

A wheel carries them inside the package as `awbench/_bundled/` (see pyproject.toml); a source checkout
(editable install, tests from the repository) has them beside the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled(relative: str) -> Path:
    installed = _PACKAGE / "_bundled" / relative
    return installed if installed.exists() else _PACKAGE.parent / relative


def sample_dir() -> Path:
    return bundled("data/sample")
