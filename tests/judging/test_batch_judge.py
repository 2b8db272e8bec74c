"""The judge through the OpenAI Batch API (`--judge-batch`), against a real HTTP server on 127.0.0.1
(tests/fake_batch_api.py) that the openai SDK talks to: end to end on the bundled sample, expiries and re-asks,
crashes at every step of a submission, and the batch price."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_batch_api import FakeBatchAPI, Outcome
from fake_openai import FakeOpenAIServer, Reply
from judge_requests import judge_request_for
from refusals import refusal
from typer.testing import CliRunner

from awbench.cli import app
from awbench.config import JudgeSettings
from awbench.judging import BudgetExhausted, requests_of
from awbench.judging.batch.api import BatchAPI
from awbench.judging.batch.state import STATE_FILE, BatchFiles, BatchState
from awbench.judging.cost import OUTPUT_TOKENS_PER_VERDICT, batch_price, price_for
from awbench.judging.llm.batch_answers import ANSWERS_FILE, parse_custom_id
from awbench.judging.llm.batch_judge import BatchJudge
from awbench.judging.llm.openai_judge import create
from awbench.judging.llm.verdict_records import verdict_seed
from awbench.records import JudgeRequest, JudgmentRecord
from awbench.run import pipeline
from awbench.run.store import RunStore

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-batch-0042"
runner = CliRunner()
NAMES = ("format", "factuality", "consistency", "realism", "quality")


def verdict(*scores: int) -> str:
    body = json.dumps({"strengths": ["s"], "weaknesses": ["w"], "scores": dict(zip(NAMES, scores or (5, 4, 3, 4, 2)))})
    return f"Reasoning.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


class Notes:
    """A Progress that keeps what it is told."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)


class Crash(Exception):
    """A process dying at this point: nothing after it runs."""


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "results"


def run_args(api_url: str, out: Path, *extra: object, name: str = "r") -> list[object]:
    return [
        "run",
        "--model",
        "baseline:oracle",
        "--data",
        "sample",
        "--domains",
        "os",
        "--judge-model",
        "judge-x",
        "--judge-base-url",
        api_url,
        "--judge-batch",
        "--judge-batch-poll-interval",
        "0.02",
        "--run-name",
        name,
        "--output",
        out,
        *extra,
    ]


def evaluation_dir(out: Path, name: str = "r") -> Path:
    (directory,) = (out / name / "judges").iterdir()
    return directory


def judgments(out: Path, name: str = "r") -> dict[Any, JudgmentRecord]:
    store = RunStore(out / name)
    (evaluation,) = store.evaluations()
    return evaluation.judgments.load()


def state(out: Path, name: str = "r") -> BatchState:
    return BatchState.model_validate_json((evaluation_dir(out, name) / STATE_FILE).read_text())


def os_samples() -> int:
    from awbench.data.dataset import read_source

    return sum(s.domain == "os" for s in read_source("sample")[0])


# --- Python API helpers --------------------------------------------------------------------------------------


def make_request(i: int = 0) -> JudgeRequest:
    return judge_request_for(
        prediction="hello {world}",
        ground_truth="hello world",
        action=f"cat a.txt  # {i}",
        history=["ls", "a.txt  b.txt"],
        domain="terminal",
        sample_id=i,
    )


def settings(url: str, **changes: Any) -> JudgeSettings:
    fields: dict[str, Any] = {
        "model": "judge-model",
        "base_url": url,
        "concurrency": 4,
        "max_retries": 2,
        "request_timeout": 5.0,
        "batch": True,
        "batch_poll_interval": 0.01,
    }
    return JudgeSettings(**{**fields, **changes})


def batch_judge_all(
    judge_settings: JudgeSettings,
    requests: list[JudgeRequest],
    directory: Path,
    into: list[JudgmentRecord] | None = None,
    progress: Notes | None = None,
    setup: Any = None,
) -> list[JudgmentRecord]:
    judge = create(judge_settings)
    assert isinstance(judge, BatchJudge)
    judge.bind(directory, progress or Notes())
    if setup is not None:
        setup(judge)
    records = [] if into is None else into

    async def go() -> list[JudgmentRecord]:
        try:
            async for record in judge.judge(requests_of(requests)):
                records.append(record)
        finally:
            await judge.aclose()
        return records

    return asyncio.run(go())


# --- End to end ----------------------------------------------------------------------------------------------


def test_a_run_judged_in_batch_end_to_end_with_exact_scores(out: Path) -> None:
    with FakeBatchAPI(responder=lambda body: Reply(verdict(5, 4, 3, 4, 2))) as api:
        result = invoke(*run_args(api.url, out))
    assert result.exit_code == 0, result.output
    n = os_samples()
    assert len(api.uploads) == 1 and len(api.created) == 1 and api.chat_requests == []
    lines = api.uploaded_lines()
    assert len(lines) == n and len({line["custom_id"] for line in lines}) == n
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
    assert api.files[api.uploads[0]]["json"]["purpose"] == "batch"
    batch = api.batches[api.created[0]]
    assert batch.metadata["awbench_token"] and batch.status == "completed"

    records = judgments(out)
    assert len(records) == n and all(r.status == "ok" and r.score == 65.0 for r in records.values())
    assert all(r.verdicts[0].attempts == 1 for r in records.values())
    scores = json.loads((out / "r" / "scores.json").read_text())
    assert [d["score"] for d in scores["domains"].values()] == pytest.approx([65.0] * len(scores["domains"]))
    # the judge is the direct judge: same id
    direct_id = create(JudgeSettings(model="judge-x", base_url=api.url)).id
    assert evaluation_dir(out).name == direct_id and scores["judge_id"] == direct_id
    saved = state(out)
    assert [e.batch_id for e in saved.batches] == api.created and saved.batches[0].collected
    assert saved.batches[0].file_id == api.uploads[0]
    # progress: a note per status change
    assert "in_progress" in result.output and "completed" in result.output and "resumes these batches" in result.output

    again = invoke(*run_args(api.url, out))  # resumes with nothing to do: no new upload
    assert again.exit_code == 0 and "nothing to do" in again.output
    assert len(api.uploads) == 1 and len(api.created) == 1


def test_the_uploaded_requests_are_the_direct_judges_bodies(out: Path) -> None:
    common = [
        "--judge-samples",
        "2",
        "--judge-temperature",
        "0.3",
        "--judge-max-tokens",
        "4096",
        "--judge-structured",
        "--judge-reasoning-effort",
        "low",
        "--judge-extra-body",
        '{"top_k": 20}',
        "--prompt-cache-key",
    ]
    with FakeOpenAIServer(
        responder=lambda body: Reply(json.dumps({"strengths": [], "weaknesses": [], "scores": dict.fromkeys(NAMES, 4)}))
    ) as server:
        direct = invoke(
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--domains",
            "os",
            "--judge-model",
            "judge-x",
            "--judge-base-url",
            server.url,
            "--run-name",
            "direct",
            "--output",
            out,
            *common,
        )
    assert direct.exit_code == 0, direct.output
    with FakeBatchAPI(
        responder=lambda body: Reply(json.dumps({"strengths": [], "weaknesses": [], "scores": dict.fromkeys(NAMES, 4)}))
    ) as api:
        batched = invoke(*run_args(api.url, out, *common, name="batched"))
    assert batched.exit_code == 0, batched.output

    def canonical(bodies: list[dict]) -> list[str]:
        return sorted(json.dumps(b, sort_keys=True) for b in bodies)

    bodies = [line["body"] for line in api.uploaded_lines()]
    assert len(bodies) == 2 * os_samples()
    # asked for, the prompt_cache_key goes with direct calls, never into a batch (docs/batch.md)
    assert all(body.pop("prompt_cache_key").startswith("awbench-") for body in server.requests)
    assert canonical(bodies) == canonical(server.requests)
    assert bodies[0]["response_format"]["type"] == "json_schema" and bodies[0]["max_tokens"] == 4096
    # the same evaluation, the same scores
    assert evaluation_dir(out, "direct").name == evaluation_dir(out, "batched").name
    assert {k: r.score for k, r in judgments(out, "direct").items()} == {
        k: r.score for k, r in judgments(out, "batched").items()
    }


def test_verdicts_made_directly_and_in_batch_mix_in_one_evaluation(out: Path) -> None:
    calls = {"n": 0}

    def first_two_unusable(body: dict) -> Reply:
        calls["n"] += 1
        return Reply("no verdict here") if calls["n"] <= 2 else Reply(verdict())

    with FakeOpenAIServer(responder=first_two_unusable) as server:
        direct = invoke(
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--domains",
            "os",
            "--judge-model",
            "judge-x",
            "--judge-base-url",
            server.url,
            "--judge-max-retries",
            "0",
            "--judge-concurrency",
            "1",
            "--run-name",
            "r",
            "--output",
            out,
        )
    assert direct.exit_code == 1  # two unscored of eight
    failed = {k for k, r in judgments(out).items() if r.status == "failed"}
    assert len(failed) == 2
    # ... and the batch judge, the same judge, redoes just those, in the same evaluation.
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        result = invoke(
            "judge",
            "r",
            "--judge-batch",
            "--judge-batch-poll-interval",
            "0.02",
            "--judge-base-url",
            api.url,
            "--retry-failed",
            "--output",
            out,
        )
    assert result.exit_code == 0, result.output
    assert len(api.uploaded_lines()) == 2
    assert {tuple(_parsed(line["custom_id"])[:2]) for line in api.uploaded_lines()} == failed
    records = judgments(out)
    assert len(list((out / "r" / "judges").iterdir())) == 1
    assert all(r.status == "ok" and r.score == 65.0 for r in records.values())


def test_a_batch_judge_refused_at_its_first_upload_leaves_the_run_as_it_was(out: Path) -> None:
    assert (
        invoke(
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--domains",
            "os",
            "--judge",
            "rules",
            "--run-name",
            "r",
            "--output",
            out,
        ).exit_code
        == 0
    )
    before = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), upload_status=401) as api:
        result = invoke(
            "judge",
            "r",
            "--judge",
            "llm",
            "--judge-model",
            "judge-x",
            "--judge-batch",
            "--judge-base-url",
            api.url,
            "--output",
            out,
        )
    assert refusal(result) == (2, "api_refused") and "Incorrect API key" in result.stderr
    assert api.uploads == [] and api.created == []
    after = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert after == before


# --- Re-asks -------------------------------------------------------------------------------------------------


def test_a_batch_that_expires_half_done_is_asked_again_in_a_new_batch(out: Path) -> None:
    n = os_samples()
    outcomes = lambda number, requests: Outcome("expired", answered=requests // 2) if number == 1 else Outcome()
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), outcome=outcomes) as api:
        result = invoke(*run_args(api.url, out))
    assert result.exit_code == 0, result.output
    assert "ended expired" in result.output or "expired" in result.output
    assert len(api.uploads) == 2 and len(api.created) == 2 and api.chat_requests == []
    first, second = api.uploaded_lines(api.uploads[0]), api.uploaded_lines(api.uploads[1])
    assert len(first) == n and len(second) == n - n // 2
    expired = {line["custom_id"].rsplit("|", 2)[0] for line in first[n // 2 :]}
    assert {line["custom_id"].rsplit("|", 2)[0] for line in second} == expired
    assert all(_parsed(line["custom_id"])[3] == 2 for line in second)  # their second attempt
    assert not {line["body"]["seed"] for line in first} & {line["body"]["seed"] for line in second}
    records = judgments(out)
    assert all(r.status == "ok" and r.score == 65.0 for r in records.values())
    assert sorted(r.verdicts[0].attempts for r in records.values()) == [1] * (n // 2) + [2] * (n - n // 2)


def test_expired_requests_go_through_the_chat_endpoint_with_fallback_direct(out: Path) -> None:
    n = os_samples()
    outcomes = lambda number, requests: Outcome("expired", answered=3)
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), outcome=outcomes) as api:
        result = invoke(*run_args(api.url, out, "--judge-batch-fallback", "direct"))
    assert result.exit_code == 0, result.output
    assert len(api.uploads) == 1 and len(api.created) == 1
    assert len(api.chat_requests) == n - 3
    lines = api.uploaded_lines()
    by_seed = {line["body"]["seed"]: line for line in lines}
    records = judgments(out)
    for line in lines[3:]:  # the direct call is the request's second attempt, with that attempt's seed
        key, generation, _index, _attempt, _ = _parsed(line["custom_id"])
        record = records[(key, generation)]
        assert record.verdicts[0].attempts == 2 and record.verdicts[0].seed == verdict_seed(record.cache_key, 0, 2)
    assert {b["seed"] for b in api.chat_requests}.isdisjoint(by_seed)
    expected_bodies = sorted(
        json.dumps(
            {**line["body"], "seed": verdict_seed(records[tuple(_parsed(line["custom_id"])[:2])].cache_key, 0, 2)},
            sort_keys=True,
        )
        for line in lines[3:]
    )
    assert sorted(json.dumps(b, sort_keys=True) for b in api.chat_requests) == expected_bodies
    assert all(r.status == "ok" and r.score == 65.0 for r in records.values())


def test_a_judgment_failed_for_a_transient_cause_is_judged_afresh_by_the_same_command(out: Path) -> None:
    n = os_samples()
    with FakeBatchAPI(
        responder=lambda body: Reply(verdict()), outcome=lambda number, requests: Outcome("expired", answered=n - 2)
    ) as api:
        first = invoke(*run_args(api.url, out, "--judge-max-retries", "0"))
    assert first.exit_code == 1  # two unscored: their only attempt expired
    failed = {k for k, r in judgments(out).items() if r.status == "failed"}
    assert len(failed) == 2 and all(judgments(out)[k].transient for k in failed)
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        again = invoke(*run_args(api.url, out, "--judge-max-retries", "0"))
    assert again.exit_code == 0, again.output
    lines = api.uploaded_lines()
    assert {tuple(_parsed(line["custom_id"])[:2]) for line in lines} == failed
    assert all(_parsed(line["custom_id"])[3] == 1 for line in lines)  # a fresh budget, as the direct judge's
    assert all(r.status == "ok" for r in judgments(out).values())


def test_unparseable_verdicts_are_asked_again_within_the_budget(tmp_path: Path) -> None:
    with FakeBatchAPI(responder=lambda body: Reply("Looks fine to me, 4 out of 5.")) as api:
        (record,) = batch_judge_all(settings(api.url, max_retries=2), [make_request()], tmp_path)
    assert len(api.created) == 3 and len(api.answered) == 3  # 1 + max_retries, never more
    assert len({body["seed"] for body in api.answered}) == 3
    assert record.status == "failed" and record.score is None and not record.transient
    assert record.verdicts[0].status == "unparsed" and record.verdicts[0].attempts == 3


def test_partial_and_truncated_verdicts_are_asked_again_until_complete(tmp_path: Path) -> None:
    partial = verdict().replace(', "quality": 2', "")
    replies = iter([Reply(partial), Reply(verdict(5, 5, 5, 5, 5), finish_reason="length"), Reply(verdict())])
    with FakeBatchAPI(responder=lambda body: next(replies)) as api:
        (record,) = batch_judge_all(settings(api.url, max_retries=3), [make_request()], tmp_path)
    assert len(api.created) == 3
    assert record.status == "ok" and record.dimensions["quality"] == 2 and record.verdicts[0].attempts == 3


def test_failed_and_errored_requests_are_asked_again(tmp_path: Path) -> None:
    replies = iter([Reply(status=500, error_message="overloaded"), Reply(verdict())])
    outcomes = lambda number, requests: Outcome("failed", code="invalid_request") if number == 1 else Outcome()
    notes = Notes()
    with FakeBatchAPI(responder=lambda body: next(replies), outcome=outcomes) as api:
        (record,) = batch_judge_all(settings(api.url, max_retries=3), [make_request()], tmp_path, progress=notes)
    # batch 1 failed (nothing ran), batch 2 answered 500, batch 3 answered
    assert len(api.created) == 3 and record.status == "ok" and record.verdicts[0].attempts == 3
    assert any("ended failed (invalid_request" in w for w in notes.warnings)


def test_a_refusal_inside_a_batch_stops_the_run_without_recording_it(tmp_path: Path) -> None:
    from awbench.transport.endpoints import FatalAPIError

    with FakeBatchAPI(responder=lambda body: Reply(status=401, error_message="invalid key")) as api:
        with pytest.raises(FatalAPIError, match=r"401.*invalid key"):
            batch_judge_all(settings(api.url), [make_request()], tmp_path)
    assert not (tmp_path / ANSWERS_FILE).exists()  # asked again by the next run


def test_an_outage_while_waiting_is_waited_out(tmp_path: Path) -> None:
    notes = Notes()
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        api.fail_looks = 4  # the SDK tries three times per call, then the judge tries again
        (record,) = batch_judge_all(
            settings(api.url),
            [make_request()],
            tmp_path,
            progress=notes,
            setup=lambda judge: setattr(judge.runner.api, "retry_base_s", 0.01),
        )
    assert record.status == "ok" and api.fail_looks == 0 and len(api.created) == 1
    assert any("could not look at a batch" in w and "503" in w for w in notes.warnings)


def test_requests_are_split_under_the_limits(tmp_path: Path) -> None:
    requests = [make_request(i) for i in range(7)]

    def limits(count: int, size: int):
        def setup(judge: BatchJudge) -> None:
            judge.runner.max_requests_per_batch, judge.runner.max_file_bytes = count, size

        return setup

    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        records = batch_judge_all(settings(api.url), requests, tmp_path / "a", setup=limits(3, 10**9))
    assert [len(api.uploaded_lines(f)) for f in api.uploads] == [3, 3, 1] and len(records) == 7
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        records = batch_judge_all(settings(api.url), requests, tmp_path / "b", setup=limits(100, 1))
    assert [len(api.uploaded_lines(f)) for f in api.uploads] == [1] * 7 and len(records) == 7
    assert all(r.status == "ok" for r in records)


def test_over_the_enqueued_token_limit_a_batch_waits_for_another_without_spending_an_attempt(tmp_path: Path) -> None:
    outcomes = lambda number, requests: (
        Outcome("failed", code="token_limit_exceeded", message="Enqueued token limit reached")
        if number == 2
        else Outcome()
    )

    def setup(judge: BatchJudge) -> None:
        judge.runner.max_requests_per_batch = 2

    with FakeBatchAPI(responder=lambda body: Reply(verdict()), outcome=outcomes) as api:
        records = batch_judge_all(
            settings(api.url, max_retries=0), [make_request(i) for i in range(4)], tmp_path, setup=setup
        )
    assert len(api.created) == 3 and len(records) == 4
    assert all(r.status == "ok" and r.verdicts[0].attempts == 1 for r in records)


# --- Crashes and resumes -------------------------------------------------------------------------------------


def crash_after(monkeypatch: pytest.MonkeyPatch, method: str, before: bool = False) -> None:
    original = getattr(BatchAPI, method)

    async def crashing(self: BatchAPI, *args: Any) -> Any:
        if before:
            raise Crash(method)
        await original(self, *args)
        raise Crash(method)

    monkeypatch.setattr(BatchAPI, method, crashing)


@pytest.mark.parametrize(
    "where",
    [
        "after the upload, before saving its file id",
        "after the upload, before the batch",
        "after creating the batch, before saving its id",
    ],
)
def test_a_crash_during_submission_never_submits_twice(out: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        with monkeypatch.context() as patch:
            if where.startswith("after the upload, before saving"):
                crash_after(patch, "upload")
            elif where == "after the upload, before the batch":
                crash_after(patch, "create", before=True)
            else:
                crash_after(patch, "create")
            crashed = invoke(*run_args(api.url, out))
        assert isinstance(crashed.exception, Crash)
        assert len(api.uploads) == 1
        assert len(api.created) == (1 if where.startswith("after creating") else 0)
        entry = state(out).batches[0]
        assert entry.batch_id is None and (entry.file_id is None) == where.startswith("after the upload, before saving")

        resumed = invoke(*run_args(api.url, out))
        assert resumed.exit_code == 0, resumed.output
        assert len(api.uploads) == 1 and len(api.created) == 1  # the same file, one batch
        (entry,) = state(out).batches
        assert entry.file_id == api.uploads[0] and entry.batch_id == api.created[0] and entry.collected
        if where.startswith("after the upload, before saving"):
            assert api.files_listed >= 1
        else:
            assert api.listed >= 1
    records = judgments(out)
    assert len(records) == os_samples() and all(r.status == "ok" and r.score == 65.0 for r in records.values())


def test_a_crash_between_saving_the_answers_and_marking_the_batch_collected(
    out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        with monkeypatch.context() as patch:
            original = BatchFiles.save

            def crashing(self: BatchFiles) -> None:
                if any(e.collected for e in self.state.batches):
                    raise Crash("collected")
                original(self)

            patch.setattr(BatchFiles, "save", crashing)
            crashed = invoke(*run_args(api.url, out))
        assert isinstance(crashed.exception, Crash)
        answers = [json.loads(line) for line in (evaluation_dir(out) / ANSWERS_FILE).read_text().splitlines()]
        assert len(answers) == os_samples() and not state(out).batches[0].collected
        resumed = invoke(*run_args(api.url, out))
        assert resumed.exit_code == 0, resumed.output
        assert len(api.uploads) == 1 and len(api.created) == 1 and len(api.answered) == os_samples()
    answers = [json.loads(line) for line in (evaluation_dir(out) / ANSWERS_FILE).read_text().splitlines()]
    assert sum(not a["recorded"] for a in answers) == os_samples()  # read again, not written twice
    assert state(out).batches[0].collected
    assert all(r.status == "ok" and r.score == 65.0 for r in judgments(out).values())


def test_a_creation_whose_answer_is_lost_is_looked_for_before_it_is_tried_again(tmp_path: Path) -> None:
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        api.lose_creations = 1
        (record,) = batch_judge_all(
            settings(api.url),
            [make_request()],
            tmp_path,
            setup=lambda judge: setattr(judge.runner.api, "retry_base_s", 0.01),
        )
    assert len(api.created) == 1 and api.listed >= 1 and record.status == "ok"


def test_a_crash_while_waiting_resumes_the_same_batch(out: Path) -> None:
    """A real process killed while its batch is in progress; the same command then picks the batch up."""
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), hold=True) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"OPENAI_API_KEY": SECRET}
        command = [sys.executable, "-c", "from awbench.cli import main; main()", *map(str, run_args(api.url, out))]
        child = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and child.poll() is None:
                saved = out / "r" / "judges"
                states = saved.glob(f"*/{STATE_FILE}")
                # submitted, its batch id saved, and waiting for it
                if (
                    api.created
                    and api.looked_at
                    and any(p.exists() and '"batch_id": "batch_' in p.read_text() for p in states)
                ):
                    break
                time.sleep(0.05)
            assert child.poll() is None, child.communicate()[0]
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert len(api.created) == 1 and api.batches[api.created[0]].status == "in_progress"
        looked = len(api.looked_at)
        api.hold = False
        resumed = invoke(*run_args(api.url, out))
        assert resumed.exit_code == 0, resumed.output
        assert len(api.uploads) == 1 and len(api.created) == 1  # no second upload, no second batch
        assert api.looked_at[looked:] and set(api.looked_at[looked:]) == {api.created[0]}
    records = judgments(out)
    assert len(records) == os_samples() and all(r.status == "ok" and r.score == 65.0 for r in records.values())


def test_a_batch_nothing_wants_any_more_is_cancelled(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), hold=True) as api:
        with monkeypatch.context() as patch:

            async def interrupted(self: BatchAPI, entries: Any, save: Any) -> None:
                raise KeyboardInterrupt

            patch.setattr(BatchAPI, "poll", interrupted)
            stopped = invoke(*run_args(api.url, out))
        assert stopped.exit_code == 130 and len(api.created) == 1
        # the same judge, directly, judges everything meanwhile; it is told about the open batch
        with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
            direct = invoke("judge", "r", "--no-judge-batch", "--judge-base-url", server.url, "--output", out)
        assert direct.exit_code == 0, direct.output
        assert "still open" in direct.output
        assert all(r.status == "ok" for r in judgments(out).values())
        # back in batch mode: nothing is wanted from the open batch, which is cancelled
        again = invoke("judge", "r", "--judge-batch", "--judge-base-url", api.url, "--output", out)
        assert again.exit_code == 0, again.output
        assert api.cancelled == api.created and len(api.uploads) == 1
        assert state(out).batches[0].abandoned


# --- Prices --------------------------------------------------------------------------------------------------


def test_the_batch_price_is_half_of_every_list_price() -> None:
    listed = price_for("gpt-5.2-2025-12-11")
    assert listed is not None
    halved = batch_price(listed)
    assert (halved.input, halved.output, halved.cached_input) == (0.875, 7.0, 0.0875)
    custom = price_for("my-judge", 2.0, 8.0)
    assert custom is not None
    given = batch_price(custom)
    assert (given.input, given.output, given.cached_input) == (1.0, 4.0, None)


def test_dry_run_is_priced_at_the_batch_rate(make_config: Any) -> None:
    direct = pipeline.estimate(
        make_config(judge="llm", judge_options={"model": "gpt-5.2-2025-12-11"}, data={"domains": ["os"]})
    )
    batched = pipeline.estimate(
        make_config(judge="llm", judge_options={"model": "gpt-5.2-2025-12-11", "batch": True}, data={"domains": ["os"]})
    )
    direct_judge, batched_judge = direct.judge, batched.judge
    assert batched_judge.calls == direct_judge.calls > 0 and batched_judge.prompt_tokens == direct_judge.prompt_tokens
    assert direct_judge.uncached_cost_usd is not None and batched_judge.cost_usd is not None
    assert batched_judge.cost_usd == pytest.approx(direct_judge.uncached_cost_usd / 2)  # the prompt cache not counted
    assert batched_judge.cached_tokens == 0 < direct_judge.cached_tokens

    shown = invoke(
        "run", "--model", "baseline:oracle", "--data", "sample", "--domains", "os", "--judge-batch", "--dry-run"
    )
    assert (
        shown.exit_code == 0
        and f"estimated judge cost ${batched_judge.cost_usd:.4f} at the Batch API's half price" in shown.output
    )


def test_answers_are_priced_at_the_batch_rate_cached_tokens_included(tmp_path: Path) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 200,
        "total_tokens": 1200,
        "prompt_tokens_details": {"cached_tokens": 400},
    }
    with FakeBatchAPI(responder=lambda body: Reply(verdict(), usage=usage)) as api:
        (record,) = batch_judge_all(settings(api.url, model="gpt-5.2-2025-12-11"), [make_request()], tmp_path)
    assert record.cost_usd == pytest.approx((600 * 0.875 + 400 * 0.0875 + 200 * 7.0) / 1e6)
    assert record.verdicts[0].usage.cached_tokens == 400


def test_max_cost_stops_before_the_cap_at_the_batch_price(tmp_path: Path) -> None:
    probe = create(settings("http://127.0.0.1:9/v1", price_in=1.0, price_out=1.0, batch=False))
    listed = probe.estimate([make_request()]).cost_usd
    assert listed is not None
    cap = 1.75 * listed  # one request at the list price; three at the batch price
    usage = {
        "prompt_tokens": probe.estimate([make_request()]).prompt_tokens,
        "completion_tokens": OUTPUT_TOKENS_PER_VERDICT,
        "total_tokens": 0,
    }
    done: list[JudgmentRecord] = []
    with FakeBatchAPI(responder=lambda body: Reply(verdict(), usage=usage)) as api:
        with pytest.raises(BudgetExhausted, match=r"spent \$0\.\d+ of --max-cost"):
            batch_judge_all(
                # a completion limit of the typical verdict: the most a request can be billed is its estimate
                settings(api.url, price_in=1.0, price_out=1.0, max_cost=cap, max_tokens=OUTPUT_TOKENS_PER_VERDICT),
                [make_request(i) for i in range(10)],
                tmp_path,
                into=done,
            )
    assert len(api.answered) == 3 and len(done) == 3
    assert sum(r.cost_usd or 0 for r in done) == pytest.approx(3 * listed / 2)
    # the same command with a higher cap goes on from there
    more: list[JudgmentRecord] = []
    with FakeBatchAPI(responder=lambda body: Reply(verdict(), usage=usage)) as api:
        judge_settings = settings(api.url, price_in=1.0, price_out=1.0, max_cost=100.0)
        batch_judge_all(judge_settings, [make_request(i) for i in range(3, 10)], tmp_path, into=more)
    assert len(more) == 7 and len(api.answered) == 7


def test_the_batch_judge_is_the_direct_judge() -> None:
    request = make_request()
    direct = create(settings("http://127.0.0.1:9/v1", batch=False))
    batched = create(settings("http://127.0.0.1:10/v1", batch_fallback="direct", batch_poll_interval=5.0))
    assert isinstance(batched, BatchJudge) and not isinstance(direct, BatchJudge)
    assert batched.id == direct.id and batched.cache_key(request) == direct.cache_key(request)
    assert batched.describe() == direct.describe()


def _parsed(custom_id: str) -> tuple[str, int, int, int, str]:
    parsed = parse_custom_id(custom_id)
    assert parsed is not None, custom_id
    return parsed
