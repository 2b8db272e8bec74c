"""What a run records about the code that made it: awbench's release version (written once, in
awbench/__init__.py, and read by the build: no git tag needed) and its git commit (only from awbench's own
checkout); the LICENSE shipped with the package; `awbench --version`; CHANGELOG.md's section for the release."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import awbench
from awbench.cli import app
from awbench.run.store import environment_facts, own_git_commit

REPO = Path(__file__).resolve().parents[2]
LICENSE_HEAD = "Apache License\n                           Version 2.0, January 2004"
GIT_ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def git(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", *args]
    return subprocess.run(command, cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout.strip()


def repository(path: Path, project: str) -> str:
    """A git repository of a project named `project`, one commit; its HEAD."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "pyproject.toml").write_text(f'[project]\nname = "{project}"\n')
    git(path, "init", "-q")
    git(path, "add", "pyproject.toml")
    git(path, "commit", "-q", "-m", "first")
    return git(path, "rev-parse", "HEAD")


def package_at(directory: Path) -> Path:
    package = directory / "awbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    return package


# --------------------------------------------------------------------------- git commit


def test_own_checkout_records_its_head(tmp_path, monkeypatch):
    head = repository(tmp_path / "awbench-checkout", "awbench")
    package = package_at(tmp_path / "awbench-checkout")
    assert own_git_commit(package) == head
    # Inside a git hook GIT_DIR points elsewhere; the checkout's own HEAD is still what counts.
    other = repository(tmp_path / "other", "other")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    assert other != head and own_git_commit(package) == head


def test_a_copy_inside_another_repository_records_no_commit(tmp_path):
    repository(tmp_path / "other", "other")
    # vendored at the other project's top, its pyproject naming that project
    assert own_git_commit(package_at(tmp_path / "other")) is None
    # installed into a virtual environment inside the other project
    assert own_git_commit(package_at(tmp_path / "other" / ".venv" / "lib" / "site-packages")) is None
    # a directory that calls itself awbench, below the other repository's top
    nested = tmp_path / "other" / "vendor"
    nested.mkdir()
    (nested / "pyproject.toml").write_text('[project]\nname = "awbench"\n')
    (nested / ".git").write_text("gitdir: nowhere\n")
    assert own_git_commit(package_at(nested)) is None


def test_this_awbench_records_its_commit_only_from_a_checkout():
    package = Path(awbench.__file__).parent
    recorded = environment_facts()["git_commit"]
    if (package.parent / ".git").exists() and (package.parent / "pyproject.toml").exists():
        assert recorded == git(package.parent, "rev-parse", "HEAD")
    else:  # an installed copy (site-packages): the tests' checkout is not the code that runs
        assert recorded is None


# --------------------------------------------------------------------------- version


def test_version_option_prints_the_release_and_the_commit():
    result = CliRunner().invoke(app, ["--version"])
    commit = environment_facts()["git_commit"]
    suffix = f" (commit {commit[:12]})" if commit else ""
    assert result.exit_code == 0 and result.stdout == f"awbench {awbench.__version__}{suffix}\n"
    # a release version, not a development one derived from the distance to a tag
    assert re.fullmatch(r"\d+\.\d+\.\d+", awbench.__version__), awbench.__version__


def test_the_changelog_has_a_section_for_this_release():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases and releases[0] == awbench.__version__, releases
    assert changelog.startswith("# Changelog\n") and "## [Unreleased]" in changelog


def test_a_run_records_the_release_beside_the_commit(tmp_path):
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "baseline:oracle",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--domains",
            "os",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "baseline-oracle__rules" / "run.json").read_text(encoding="utf-8"))
    assert manifest["awbench_version"] == awbench.__version__
    assert manifest["git_commit"] == environment_facts()["git_commit"]


needs_build_backend = pytest.mark.skipif(
    importlib.util.find_spec("hatchling") is None,
    reason="hatchling is not installed (pip install '.[dev]')",
)
needs_checkout = pytest.mark.skipif(
    not (REPO / ".git").exists() or shutil.which("git") is None,
    reason="not run from a git checkout of awbench (the test builds a clone of it)",
)


def build(source: Path, out: Path, *targets: str) -> list[Path]:
    """The built files, in the order of `targets`."""
    args = [a for t in targets for a in ("-t", t)]
    result = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", *args, "-d", str(out)],
        cwd=source,
        env=GIT_ENV,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    suffix = {"sdist": ".tar.gz", "wheel": ".whl"}
    return [next(p for p in out.iterdir() if p.name.endswith(suffix[t])) for t in targets]


def wheel_metadata(wheel: Path) -> tuple[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        license_file = next(n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
        return archive.read(info).decode(), archive.read(license_file).decode()


def field(metadata: str, name: str) -> str:
    return re.search(rf"^{name}: (.*)$", metadata, re.M).group(1)  # type: ignore[union-attr]


@needs_checkout
@needs_build_backend
def test_built_packages_carry_the_release_version_and_the_license(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], env=GIT_ENV, check=True)
    # The clone has no tag at all (as most checkouts): the version is still the release in awbench/__init__.py.
    for tag in git(clone, "tag", "--list").split():
        git(clone, "tag", "-d", tag)
    sdist, wheel = build(clone, tmp_path / "dist", "sdist", "wheel")
    metadata, license_text = wheel_metadata(wheel)
    version = field(metadata, "Version")
    assert version == awbench.__version__
    assert field(metadata, "License-Expression") == "Apache-2.0" and field(metadata, "License-File") == "LICENSE"
    assert LICENSE_HEAD in license_text and license_text == (REPO / "LICENSE").read_text()
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        assert f"awbench-{version}/LICENSE" in names
        pkg_info = archive.extractfile(f"awbench-{version}/PKG-INFO")
        assert pkg_info is not None
        assert field(pkg_info.read().decode(), "Version") == version

        # An sdist unpacked inside some other project's repository keeps its own version (PKG-INFO) ...
        other = tmp_path / "other"
        repository(other, "other")
        safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(other / "vendor", **safe)
    (rebuilt,) = build(other / "vendor" / f"awbench-{version}", tmp_path / "dist2", "wheel")
    assert field(wheel_metadata(rebuilt)[0], "Version") == version

    # ... and so does a source tree with neither git metadata nor PKG-INFO.
    bare = tmp_path / "bare"
    shutil.copytree(clone, bare, ignore=shutil.ignore_patterns(".git"))
    (plain,) = build(bare, tmp_path / "dist3", "wheel")
    assert field(wheel_metadata(plain)[0], "Version") == version

    # Installed inside the other repository, awbench reports the built version and records no git commit.
    site = other / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    probe = (
        "import awbench, awbench.run.store as s; from pathlib import Path; "
        "print(Path(awbench.__file__).parent.parent, awbench.__version__, s.environment_facts()['git_commit'])"
    )
    env = {**GIT_ENV, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=other, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(site), version, "None"]
    cli = subprocess.run(
        [sys.executable, "-c", "from awbench.cli import main; main()", "--version"],
        cwd=other,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert cli.stdout == f"awbench {version}\n"
