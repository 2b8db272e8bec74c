from pathlib import Path

import awbench
from awbench.domains import DOMAINS
from awbench.resources import bundled, sample_dir

PACKAGE = Path(awbench.__file__).resolve().parent


def test_the_sample_and_the_judge_prompts_are_found():
    assert sorted(p.name for p in sample_dir().glob("*_test.jsonl")) == sorted(f"{d}_test.jsonl" for d in DOMAINS)
    assert all((bundled("judges/rubric") / f"{d}.md").is_file() for d in DOMAINS)
    assert bundled("data/reference/published_leaderboard.csv").is_file()


def test_an_installed_package_carries_its_own_copies():
    """A non-editable install has no checkout beside it: the files must come from inside the package."""
    if (PACKAGE.parent / "pyproject.toml").exists():  # running from a source checkout: nothing to check
        assert sample_dir() == PACKAGE.parent / "data" / "sample"
    else:
        assert sample_dir() == PACKAGE / "_bundled" / "data" / "sample"
        assert bundled("judges/rubric").is_relative_to(PACKAGE)
