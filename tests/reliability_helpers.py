"""Shared by the reliability tests (tests/reliability/): deterministic endpoints, the CLI in-process
and as a subprocess, and reading a run's files the way a person checking it would (line by line).

A deterministic candidate answers with a hash of what it was asked (messages and seed), a deterministic
judge with a verdict derived from a hash of its prompt: two runs of the same command, interrupted or not,
then write the same records and the same scores.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from fake_openai import Reply
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
CANDIDATE_MODEL = "world-model"
JUDGE_MODEL = "judge-model"
DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")


def digest(value: Any) -> bytes:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=True).encode()).digest()


def is_judge(body: dict) -> bool:
    return body.get("model") == JUDGE_MODEL


def candidate_text(body: dict) -> str:
    h = digest([body.get("messages"), body.get("seed")]).hex()
    return f"<think>planning {h[:6]}</think><predicted_observation>\nobservation {h[:16]}\n</predicted_observation>"


def verdict_text(scores: dict[str, int], strengths: str = "keeps the format") -> str:
    body = json.dumps(
        {"strengths": [strengths], "weaknesses": ["invents a value"], "scores": scores}, ensure_ascii=False
    )
    return f"Compared line by line.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


def judge_text(body: dict) -> str:
    """A verdict that depends only on the judge's prompt (not on its seed, which differs per re-ask)."""
    h = digest(body.get("messages"))
    return verdict_text({d: 1 + h[i] % 5 for i, d in enumerate(DIMENSIONS)})


def deterministic(body: dict, delay_s: float = 0.0) -> Reply:
    """Either role's healthy answer; `delay_s` up to that much, varying per request (completion order varies)."""
    delay = delay_s * digest(body.get("messages"))[-1] / 255
    return Reply(judge_text(body) if is_judge(body) else candidate_text(body), delay_s=delay)


CHOICE_KEY_ENV = "AWBENCH_TEST_CHOICE_KEY"  # the key variable of `choice_judge_args`, set in `clean_env`


def choice_judge_args(url: str) -> list[str]:
    """An LLM judge at a local endpoint, priced: `turing`'s and `compare --pairwise`'s options."""
    return [
        "--judge-base-url", url, "--judge-api-key-env", CHOICE_KEY_ENV, "--judge-model", "judge-x",
        "--judge-price-in", "1", "--judge-price-out", "10",
    ]  # fmt: skip


def free_port() -> int:
    """A port nothing listens on (connections to it are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Running the CLI -----------------------------------------------------------------------------------------


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: no OpenAI variables of the caller's, wide output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update({"COLUMNS": "200", "PYTHONUNBUFFERED": "1", CHOICE_KEY_ENV: "sk-test-choice"}, **extra)
    return env


def awbench_command(*args: object) -> list[str]:
    return [sys.executable, "-c", "from awbench.cli import main; main()", *map(str, args)]


def awbench_process(*args: object, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`awbench ARGS` started as a process from the worktree root (so its awbench is the one imported), its
    stdout and stderr going to the file `log` (a pipe nobody reads could fill up and stall it)."""
    with open(log, "w", encoding="utf-8") as out:
        return subprocess.Popen(
            awbench_command(*args), cwd=REPO, env=env or clean_env(), stdout=out, stderr=subprocess.STDOUT, text=True
        )


def awbench(
    *args: object, env: dict[str, str] | None = None, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        awbench_command(*args), cwd=REPO, env=env or clean_env(), capture_output=True, text=True, timeout=timeout_s
    )


# Runs a command under a resource limit (its soft limit; the hard one kept): past RLIMIT_FSIZE a write fails with
# EFBIG (Python ignores SIGXFSZ), past RLIMIT_AS an allocation with MemoryError (not the OOM killer).
UNDER_LIMIT = (
    "import os, resource, sys; "
    "kind = getattr(resource, sys.argv[1]); "
    "resource.setrlimit(kind, (int(sys.argv[2]), resource.getrlimit(kind)[1])); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)


def awbench_limited(limit: str, value: int, *args: object, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """`awbench ARGS` as a process under the resource limit `limit` (`"RLIMIT_FSIZE"`) set to `value`."""
    return subprocess.run(
        [sys.executable, "-c", UNDER_LIMIT, limit, str(value), *awbench_command(*args)],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def make_judged_runs(results: Path, judge_url: str) -> None:
    """Under `results`: r (the oracle) and q (the last observation), rule-judged on the sample's OS domain, and a
    Turing test of r by the judge at `judge_url`."""
    common = ["--judge", "rules", "--data", "sample", "--domains", "os", "--output", results]
    for name, model in (("r", "baseline:oracle"), ("q", "baseline:last-observation")):
        made = cli("run", "--model", model, "--run-name", name, *common)
        assert made.exit_code in (0, 1), made.output
    turing = cli("turing", "r", "--output", results, *choice_judge_args(judge_url))
    assert turing.exit_code == 0, turing.output


def cli(*args: object, env: dict[str, str | None] | None = None):
    """`awbench ARGS` in this process (fast): a click Result with exit_code, stdout, stderr and output."""
    from awbench.cli import app

    return CliRunner().invoke(
        app, [str(a) for a in args], env={"COLUMNS": "200", CHOICE_KEY_ENV: "sk-test-choice", **(env or {})}
    )


def no_traceback(result: Any) -> None:
    """The command ended with a message and an exit code, not an exception (stderr only: stdout may show
    samples whose observations are tracebacks)."""
    assert "Traceback (most recent call last)" not in result.stderr, result.stderr
    exception = getattr(result, "exception", None)
    assert exception is None or isinstance(exception, SystemExit), repr(exception)


# --- Reading a run ---------------------------------------------------------------------------------------------


def jsonl_lines(path: Path) -> list[dict]:
    """Every line of a JSONL file, parsed; fails on a torn or unparseable line."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), f"{path}: the last line is torn"
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def count_per_key(path: Path) -> Counter[tuple[str, int]]:
    return Counter((r["key"], r.get("generation", 0)) for r in jsonl_lines(path))


def judgments_path(run_dir: Path) -> Path:
    (path,) = [p for p in (run_dir / "judges").glob("*/judgments.jsonl") if not p.parent.name.startswith("rules")]
    return path
