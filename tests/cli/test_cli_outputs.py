"""Where the run commands' output goes (scores on stdout; progress, warnings and failure reasons on stderr),
and that a run failing before its first record leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer
from refusals import refusal
from typer.testing import CliRunner

from awbench.cli import app
from awbench.data.dataset import read_source

runner = CliRunner()


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_quickstart_prints_scores_on_stdout_and_failure_reasons_on_stderr(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    samples, _ = read_source("sample")
    first_turns = sum(s.record.turn_idx == 1 for s in samples)
    result = runner.invoke(app, ["run", "--model", "baseline:last-observation", "--judge", "rules", "--data", "sample"])
    assert result.exit_code == 1
    out, err = result.stdout, result.stderr
    # stdout: the scores table and where the run is, nothing else
    assert "rule score" in out and "Overall (macro)" in out and "26.41" in out
    assert out.endswith("run saved in results/baseline-last-observation__rules\n")
    for elsewhere in ("failed or were not scored", "empty predictions", "awbench show", "warning", "infer baseline"):
        assert elsewhere not in out, elsewhere
    # stderr: the progress display, why samples failed and where to look at them
    assert f"{first_turns} of {len(samples)} samples failed or were not scored (tolerated: 5%):\n" in err
    assert f"  {first_turns} empty predictions: first turn: no previous observation to repeat (e.g. " in err
    assert err.endswith("look at them with `awbench show results/baseline-last-observation__rules --failed`\n")
    assert "infer baseline:last-observation" in err
    # inference ends first, and its last progress line comes first (issue 36: it came after the judge's)
    assert err.index("infer baseline:last-observation: 65/65") < err.index("judge rules-v2: 52/52")
    assert "Overall" not in err and "26.41" not in err
    # and the pointer works: one line per sample, key, status and why (issue 36: 971 lines for 13 samples before)
    shown = runner.invoke(app, ["show", "results/baseline-last-observation__rules", "--failed"])
    assert shown.exit_code == 0
    firsts = [s.key for s in samples if s.record.turn_idx == 1]
    width = max(map(len, firsts))
    assert shown.stdout.splitlines() == [
        f"baseline-last-observation__rules: {first_turns} failed or unscored samples (judge rules-v2); showing 13",
        *(f"{key:<{width}}  empty  first turn: no previous observation to repeat" for key in firsts),
    ]
    full = runner.invoke(app, ["show", "results/baseline-last-observation__rules", "--failed", "--full"])
    assert full.stdout.count("╭─ ground truth") == first_turns and len(full.stdout.splitlines()) > 300


BASELINE_MESSAGE = "error: unknown baseline 'baseline:orcale'; did you mean 'baseline:oracle'?\n"  # issue 36


@pytest.mark.parametrize("existing", [False, True])
def test_a_misspelt_baseline_leaves_no_run_directory(tmp_path, existing):
    out = tmp_path / "results"
    if existing:  # a results directory with a run already in it is left as it was
        assert (
            runner.invoke(
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
            ).exit_code
            == 0
        )
    before = tree(out)
    result = runner.invoke(
        app, ["run", "--model", "baseline:orcale", "--judge", "rules", "--data", "sample", "--output", str(out)]
    )
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", BASELINE_MESSAGE)
    assert tree(out) == before and not (out / "baseline-orcale__rules").exists()


def test_bad_judge_prompts_fail_before_anything_is_written_or_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "results"
    empty = tmp_path / "prompts"
    (empty / "os").mkdir(parents=True)
    with FakeOpenAIServer() as server:
        base = [
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--judge-base-url",
            server.url,
            "--output",
            str(out),
        ]
        result = runner.invoke(app, [*base, "--judge-prompts", str(empty)])
        missing = runner.invoke(app, [*base, "--judge-prompts", str(tmp_path / "nowhere")])
    assert refusal(result) == (2, "bad_prompts") and result.stdout == "" and str(empty) in result.stderr
    assert refusal(missing) == (2, "bad_prompts") and str(tmp_path / "nowhere") in missing.stderr
    assert server.requests == [] and tree(out) == []


RUN_NAME_MESSAGE = (
    "error: --run-name: must be a plain name (no '/', not starting with '.'): the run's directory "
    "under --output; got {!r}\n"
)


@pytest.mark.parametrize("name", ["..", ".", "a/../..", "./x", "/etc", "a/b", ".hidden"])
def test_a_run_name_must_stay_inside_output(tmp_path, name):
    (tmp_path / "keep.txt").write_text("someone else's")
    result = runner.invoke(
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
            "--run-name",
            name,
            "--output",
            str(tmp_path / "results"),
        ],
    )
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", RUN_NAME_MESSAGE.format(name))
    assert tree(tmp_path) == ["keep.txt"]


# A newline, a tab, NUL, DEL, C1 (NEL, CSI), Unicode line and paragraph separators, a right-to-left override.
UNPRINTABLE = ["a\nb", "a\tb", "a\x00b", "a\x7fb", "a\x85b", "a\x9bb", "a\u2028b", "a\u2029b", "a\u202eb"]


@pytest.mark.parametrize("command", ["run", "infer"])
@pytest.mark.parametrize("name", UNPRINTABLE)
def test_a_run_name_must_be_printable(tmp_path, command, name):
    judge = ["--judge", "rules"] if command == "run" else []
    result = runner.invoke(
        app,
        [
            command,
            "--model",
            "baseline:oracle",
            *judge,
            "--data",
            "sample",
            "--domains",
            "os",
            "--run-name",
            name,
            "--output",
            str(tmp_path / "results"),
        ],
    )
    assert (refusal(result), result.stdout) == ((2, "bad_option"), "")
    assert result.stderr.startswith("error: --run-name: ") and result.stderr[:-1].isprintable() and tree(tmp_path) == []


@pytest.mark.parametrize("command", ["judge", "score", "show"])
def test_a_run_named_with_a_control_character_is_reported_on_one_line(tmp_path, command):
    result = runner.invoke(app, [command, "a\nb", "--output", str(tmp_path)])
    assert (refusal(result), result.stdout) == ((2, "unknown_run"), "")
    assert result.stderr.startswith("error: no run 'a\\nb'") and result.stderr[:-1].isprintable()


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_directory_that_is_not_a_run_is_never_emptied(tmp_path, overwrite):
    foreign = tmp_path / "results" / "notes"
    foreign.mkdir(parents=True)
    (foreign / "mine.txt").write_text("someone else's")
    result = runner.invoke(
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
            "--run-name",
            "notes",
            "--output",
            str(tmp_path / "results"),
            *overwrite,
        ],
    )
    assert (refusal(result), result.stdout) == ((2, "not_a_run"), "") and str(foreign) in result.stderr
    assert tree(foreign) == ["mine.txt"] and (foreign / "mine.txt").read_text() == "someone else's"


def test_import_never_replaces_a_directory_that_is_not_a_run(tmp_path):
    out = tmp_path / "results"
    assert (
        runner.invoke(
            app,
            [
                "run",
                "--model",
                "baseline:oracle",
                "--judge",
                "rules",
                "--data",
                "sample",
                "--run-name",
                "o",
                "--output",
                str(out),
            ],
        ).exit_code
        == 0
    )
    assert (
        runner.invoke(app, ["export", "o", "--official", str(tmp_path / "official"), "--output", str(out)]).exit_code
        == 0
    )
    (out / "notes").mkdir()
    (out / "notes" / "mine.txt").write_text("someone else's")
    predictions = str(tmp_path / "official" / "predictions.jsonl")
    result = runner.invoke(app, ["import", predictions, "--run-name", "notes", "--overwrite", "--output", str(out)])
    assert refusal(result) == (2, "not_a_run") and str(out / "notes") in result.stderr
    assert tree(out / "notes") == ["mine.txt"]
    result = runner.invoke(app, ["import", predictions, "--run-name", "..", "--overwrite", "--output", str(out)])
    assert refusal(result) == (2, "bad_option") and result.stderr.startswith("error: --run-name: ")
    assert (tmp_path / "official" / "predictions.jsonl").exists()
