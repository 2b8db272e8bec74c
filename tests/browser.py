"""Headless Chromium for tests: a screenshot of a local page, and its DOM after its scripts ran.

Debian's `chromium` package (`/usr/bin/chromium`) is what `.ci/run` installs. Tests that need it call
`require_chromium()`: a skip with the reason when it is missing, a failure when AWBENCH_REQUIRE_BROWSER=1.
AWBENCH_BROWSER names the browser to use instead; `AWBENCH_BROWSER=none` runs the tests as on a machine
without one (`.ci/run` does, to check that the README's test command passes there).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
# No first-run UI, no network chatter (the report must render offline), no GPU in containers;
# --no-sandbox because tests run as root.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
TIMEOUT_S = 120


def find_chromium() -> str | None:
    chosen = os.environ.get("AWBENCH_BROWSER")
    if chosen:
        return None if chosen == "none" else shutil.which(chosen)
    for name in CANDIDATES:
        path = name if os.path.isabs(name) and os.access(name, os.X_OK) else shutil.which(name)
        if path:
            return path
    return None


def require_chromium() -> str:
    path = find_chromium()
    if path is None:
        reason = "Chromium not found (apt-get install -y chromium)"
        if os.environ.get("AWBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason}, and AWBENCH_REQUIRE_BROWSER=1")
        pytest.skip(reason)
    return path


def _run(chromium: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="awbench-chromium-") as profile:
        result = subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    if result.returncode != 0:
        raise RuntimeError(f"chromium exited with {result.returncode}: {result.stderr[-2000:]}")
    return result


def screenshot(chromium: str, page: Path, png: Path, width: int = 1400, height: int = 2000) -> Path:
    _run(chromium, f"--screenshot={png}", f"--window-size={width},{height}", page.resolve().as_uri())
    return png


def dump_dom(chromium: str, page: Path, fragment: str = "", width: int | None = None) -> str:
    """The serialized DOM once the page (at `#fragment`, if given) loaded and its inline scripts ran; laid out
    in a window `width` px wide, if given."""
    size = [f"--window-size={width},1000"] if width else []
    return _run(chromium, *size, "--dump-dom", page.resolve().as_uri() + (f"#{fragment}" if fragment else "")).stdout


def add_script(page: str, script: str) -> str:
    """`page` with a test's own inline script run last, and allowed by the page's Content-Security-Policy (by
    its hash, as the page's own scripts are): the policy allows nothing else."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    page, allowed = re.subn(r"script-src ", f"script-src &#x27;sha256-{digest}&#x27; ", page, count=1)
    assert allowed == 1, "the page has no script-src policy"
    return page.replace("</body>", f"<script>{script}</script>\n</body>")
