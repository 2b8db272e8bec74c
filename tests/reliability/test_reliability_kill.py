"""Crash safety: `awbench run` killed with SIGKILL at seeded points of inference and judging, then run again.

The endpoints are deterministic (tests/reliability_helpers.py), so an interrupted-and-resumed run must end
with exactly the records and the scores of an uninterrupted one. Each trial:

1. starts `awbench run` as a process; the servers count the chat requests they receive (candidate and judge
   together) and SIGKILL the process when the count reaches the trial's kill point, before answering it;
2. reads what the dead process left on disk, as the store reads it (a torn last line does not count);
3. runs the same command again against the same URLs, to completion (in this process, through the same CLI
   entry point: quicker than a new interpreter, and what it finds on disk is all that matters).

What "exactly one record" means: the store appends and keeps the last record per key, so a record redone
for nothing would show up as a second line for its key. After the final completion every (sample,
generation) has exactly one line in predictions.jsonl and in the judge's judgments.jsonl, no line is torn,
and the second command called the endpoints exactly once for each record that was not on disk at the kill.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reliability_helpers import (
    CANDIDATE_MODEL,
    JUDGE_MODEL,
    awbench_process,
    cli,
    count_per_key,
    deterministic,
    digest,
    is_judge,
    jsonl_lines,
    judgments_path,
)

from awbench.data.dataset import read_source
from awbench.judging.llm.prompts import load_prompt_set, render_messages
from awbench.records import JudgeRequest
from awbench.run.stages import sample_seed
from awbench.run.store import RunStore

pytestmark = pytest.mark.slow  # killed runs, then resumed: about half a minute

SEED = 20250611
TRIALS = 10
DOMAINS = ("os", "web", "android")
GENERATIONS = 2
# Per-request delays up to these, varying per request: completion order varies, and the judge (slower, and with
# less concurrency) lags behind inference, so the last kill points fall after inference has finished.
CANDIDATE_DELAY_S, JUDGE_DELAY_S = 0.02, 0.06
PARALLEL_TRIALS = 2  # a killed process mostly waits for Python to import: two at a time on 2 cores
IN_PROCESS = threading.Lock()  # CliRunner swaps sys.stdout and sys.stderr: one in-process command at a time

SAMPLES = [s for s in read_source("sample")[0] if s.domain in DOMAINS]
WANTED = {(s.key, g) for s in SAMPLES for g in range(GENERATIONS)}
TOTAL_CALLS = 2 * len(WANTED)  # one generation and one verdict per (sample, generation) when nothing fails


def run_args(candidate_url: str, judge_url: str, output: Path) -> list[str]:
    return [
        "run",
        "--model",
        CANDIDATE_MODEL,
        "--base-url",
        candidate_url,
        "--judge-model",
        JUDGE_MODEL,
        "--judge-base-url",
        judge_url,
        "--data",
        "sample",
        "--domains",
        ",".join(DOMAINS),
        "--generations",
        str(GENERATIONS),
        "--concurrency",
        "4",
        "--judge-concurrency",
        "3",
        "--run-name",
        "kill",
        "--output",
        str(output),
    ]


class KillSwitch:
    """Shared by the candidate's and the judge's servers: counts their chat requests and kills the process
    when the count reaches `at`, before answering that request; later requests (there should be none) get
    their connection closed."""

    def __init__(self, at: int) -> None:
        self.at, self.count, self.pid = at, 0, 0
        self.fired_by: str | None = None
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self._lock:
            if self.fired_by is not None:
                return Reply(close=True)
            self.count += 1
            if self.count == self.at:
                self.fired_by = "judge" if is_judge(body) else "candidate"
                os.kill(self.pid, signal.SIGKILL)
                return Reply(close=True)
        return healthy(body)


def healthy(body: dict) -> Reply:
    return deterministic(body, JUDGE_DELAY_S if is_judge(body) else CANDIDATE_DELAY_S)


@dataclass
class Trial:
    kill_at: int
    fired_by: str | None = None
    on_disk: tuple[int, int] = (0, 0)  # predictions, judgments the killed process left
    calls_after: tuple[int, int] = (0, 0)  # candidate, judge calls of the second command
    missing_asked: tuple[bool, bool] = (False, False)  # the second command asked for exactly what was missing
    rerun_stderr: str = ""
    killed_pid: int = 0
    counts: tuple[dict, dict] = field(default_factory=lambda: ({}, {}))
    scores: dict = field(default_factory=dict)
    records: tuple[dict, dict] = field(default_factory=lambda: ({}, {}))


def final_records(run_dir: Path) -> tuple[dict, dict]:
    """(key -> prediction text, key -> judged dimensions), from the files as written."""
    predictions = {
        (r["key"], r["generation"]): (r["status"], r["prediction"]) for r in jsonl_lines(run_dir / "predictions.jsonl")
    }
    judgments = {
        (r["key"], r["generation"]): (r["status"], r["dimensions"]) for r in jsonl_lines(judgments_path(run_dir))
    }
    return predictions, judgments


def judge_prompt_keys(run_dir: Path) -> dict[bytes, tuple[str, int]]:
    """Which (sample, generation) each judge prompt is for, from the predictions of a finished run."""
    prompts = load_prompt_set("rubric")
    samples = {s.key: s for s in SAMPLES}
    keys = {}
    for r in jsonl_lines(run_dir / "predictions.jsonl"):
        request = JudgeRequest(sample=samples[r["key"]], prediction=r["prediction"], generation=r["generation"])
        keys[digest(render_messages(prompts, request))] = (r["key"], r["generation"])
    return keys


CANDIDATE_KEYS = {sample_seed(0, s.key, g): (s.key, g) for s in SAMPLES for g in range(GENERATIONS)}


def run_trial(kill_at: int, output: Path, prompt_keys: dict[bytes, tuple[str, int]]) -> Trial:
    trial = Trial(kill_at=kill_at)
    switch = KillSwitch(kill_at)
    with FakeOpenAIServer(responder=switch) as candidate, FakeOpenAIServer(responder=switch) as judge:
        ports = candidate.port, judge.port
        args = run_args(candidate.url, judge.url, output)
        log = output.parent / f"{output.name}.log"
        process = awbench_process(*args, log=log)
        switch.pid = trial.killed_pid = process.pid
        try:
            process.wait(timeout=90)
        finally:
            process.kill()
        assert process.returncode == -signal.SIGKILL, (kill_at, process.returncode, log.read_text())
    trial.fired_by = switch.fired_by

    store = RunStore(output / "kill")
    predictions = store.predictions.load()  # as the next command reads them: a torn last line is not a record
    judgments = {}
    for path in (store.path / "judges").glob("*/judgments.jsonl"):  # the one LLM judge, once it has a verdict
        judgments = store.evaluation(path.parent.name).judgments.load()
    assert all(not p.failed for p in predictions.values())  # healthy replies: nothing on disk failed
    trial.on_disk = (len(predictions), len(judgments))
    missing_predictions = WANTED - set(predictions)
    missing_judgments = WANTED - set(judgments)

    with (
        IN_PROCESS,
        FakeOpenAIServer(responder=healthy, port=ports[0]) as candidate,
        FakeOpenAIServer(responder=healthy, port=ports[1]) as judge,
    ):
        again = cli(*args)
    assert again.exit_code == 0, again.output
    trial.rerun_stderr = again.stderr
    trial.calls_after = (len(candidate.requests), len(judge.requests))
    asked_generations = [CANDIDATE_KEYS[b["seed"]] for b in candidate.requests]
    asked_judgments = [prompt_keys.get(digest(b["messages"]), ("unknown prompt", -1)) for b in judge.requests]
    trial.missing_asked = (
        sorted(asked_generations) == sorted(missing_predictions),
        sorted(asked_judgments) == sorted(missing_judgments),
    )
    run_dir = output / "kill"
    trial.counts = (dict(count_per_key(run_dir / "predictions.jsonl")), dict(count_per_key(judgments_path(run_dir))))
    trial.scores = json.loads((run_dir / "scores.json").read_text())
    trial.records = final_records(run_dir)
    assert not (run_dir / ".lock").exists()
    return trial


def kill_points(rng: random.Random, total: int, trials: int) -> list[int]:
    """One seeded point in each of `trials` equal slices of the calls, so they spread over the whole run:
    the first slices fall in inference, the last in judging (which lags behind, as it needs predictions)."""
    return [rng.randint(1 + i * total // trials, (i + 1) * total // trials) for i in range(trials)]


def test_sigkill_at_seeded_points_then_rerun_ends_as_an_uninterrupted_run(tmp_path):
    with FakeOpenAIServer(responder=healthy) as candidate, FakeOpenAIServer(responder=healthy) as judge:
        reference = cli(*run_args(candidate.url, judge.url, tmp_path / "reference"))
    assert reference.exit_code == 0, reference.output
    assert len(candidate.requests) + len(judge.requests) == TOTAL_CALLS
    reference_dir = tmp_path / "reference" / "kill"
    reference_scores = json.loads((reference_dir / "scores.json").read_text())
    reference_records = final_records(reference_dir)
    assert all(domain["score"] is not None for domain in reference_scores["domains"].values())
    assert all(status == "ok" for status, _ in reference_records[1].values())
    prompt_keys = judge_prompt_keys(reference_dir)
    assert len(prompt_keys) == len(WANTED)

    points = kill_points(random.Random(SEED), TOTAL_CALLS, TRIALS)
    with ThreadPoolExecutor(PARALLEL_TRIALS) as pool:
        trials = list(pool.map(lambda ip: run_trial(ip[1], tmp_path / f"trial{ip[0]}", prompt_keys), enumerate(points)))

    summary = [(t.kill_at, t.fired_by, t.on_disk, t.calls_after) for t in trials]
    print("kill point, request that triggered it, (predictions, judgments) on disk, (candidate, judge) calls after:")
    print("\n".join(map(str, summary)))
    assert {t.fired_by for t in trials} == {"candidate", "judge"}, summary  # kills landed in inference and judging
    assert any(0 < t.on_disk[0] < len(WANTED) for t in trials), summary  # some kills landed mid-inference
    assert any(t.on_disk[0] == len(WANTED) and t.on_disk[1] < len(WANTED) for t in trials), summary  # and after it
    host = socket.gethostname()
    for t in trials:
        # Exactly the records not on disk at the kill were asked for again, each once.
        assert t.calls_after == (len(WANTED) - t.on_disk[0], len(WANTED) - t.on_disk[1]), summary
        assert t.missing_asked == (True, True), t.kill_at
        # Exactly one line per (sample, generation), none missing, none torn (jsonl_lines checks), none twice.
        assert t.counts == ({k: 1 for k in WANTED}, {k: 1 for k in WANTED}), t.kill_at
        assert t.records == reference_records, t.kill_at
        assert t.scores == reference_scores, t.kill_at
        assert (
            "took over the lock of" in t.rerun_stderr and f"left by process {t.killed_pid} on {host}" in t.rerun_stderr
        )
