"""The batch judge under the Batch API's enqueued-token limit, against the real local fake server
(tests/fake_batch_api.py, `token_limit`): batches split under the limit a refusal states or `--judge-batch-tokens`
gives, refusals that spend no attempt, a request too large for any batch, the limit kept across a kill -9
between batches, and `--dry-run`'s wall time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_batch_api import FakeBatch, FakeBatchAPI, Outcome
from fake_openai import Reply
from judge_requests import judge_request_for
from test_batch_judge import (
    REPO,
    SECRET,
    Notes,
    batch_judge_all,
    invoke,
    judgments,
    os_samples,
    run_args,
    settings,
    state,
    verdict,
)

from awbench.config import JudgeSettings
from awbench.judging.batch.api import stated_limit
from awbench.judging.batch.limit import MAX_LIMIT_REFUSALS
from awbench.judging.batch.state import STATE_FILE, BatchState
from awbench.judging.llm.batch_judge import BatchJudge
from awbench.judging.llm.openai_judge import create
from awbench.judging.llm.prompts import render_messages
from awbench.transport.endpoints import EndpointDown
from awbench.transport.rate_control import request_tokens

LIMIT = 90_000  # each sample os request counts 36-40k tokens (prompt + the default max_tokens 32768): two fit


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "results"


def make_request(i: int = 0, prediction: str = "hello {world}") -> Any:
    return judge_request_for(
        prediction=prediction,
        ground_truth="hello world",
        action=f"cat a.txt  # {i}",
        history=["ls", "a.txt  b.txt"],
        domain="terminal",
        sample_id=i,
    )


def accepted_batches(api: FakeBatchAPI) -> list[FakeBatch]:
    return [api.batches[i] for i in api.created if i not in api.refused]


def answered_once(api: FakeBatchAPI) -> list[str]:
    """Every custom_id of the batches that ran; each request ran once."""
    ids = [line["custom_id"] for b in accepted_batches(api) for line in api.uploaded_lines(b.input_file_id)]
    assert len(ids) == len(set(ids)) == len(api.answered)
    return ids


def test_stated_limit_reads_openais_message() -> None:
    message = (
        "Enqueued token limit reached for gpt-4o in organization org-abc. Limit: 90,000 enqueued tokens. "
        "Please try again once some in_progress batches have been completed."
    )
    assert stated_limit(message) == 90_000
    assert stated_limit("Limit: 2000000 enqueued tokens.") == 2_000_000
    assert stated_limit("Enqueued token limit reached for gpt-4o in organization org-abc.") is None


def test_a_run_over_the_limit_is_split_under_the_limit_the_refusal_states(out: Path) -> None:
    n = os_samples()
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT) as api:
        result = invoke(*run_args(api.url, out))
        assert result.exit_code == 0, result.output
        # the whole run at once: refused; then batches of two requests, one after another, never refused
        assert api.refused == api.created[:1] and len(api.uploaded_lines(api.uploads[0])) == n
        assert [b.counts["total"] for b in accepted_batches(api)] == [2] * (n // 2)
        assert LIMIT * 0.75 < api.peak_enqueued <= LIMIT
        assert sorted(answered_once(api)) == sorted(line["custom_id"] for line in api.uploaded_lines(api.uploads[0]))
        saved = state(out)
        assert saved.token_limit == LIMIT
        # the client counts what the server counts
        by_batch = {e.batch_id: e for e in saved.batches}
        assert all(by_batch[b.id].tokens == b.tokens for b in accepted_batches(api))
        assert by_batch[api.refused[0]].refused and by_batch[api.refused[0]].collected
    assert "refused for the enqueued-token limit (the limit is 90,000 tokens)" in result.output
    assert "no attempt spent" in result.output
    records = judgments(out)
    assert len(records) == n and all(r.status == "ok" and r.verdicts[0].attempts == 1 for r in records.values())


def test_a_limit_given_with_judge_batch_tokens_is_never_passed(out: Path) -> None:
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT) as api:
        result = invoke(*run_args(api.url, out, "--judge-batch-tokens", 80_000))
        assert result.exit_code == 0, result.output
        assert api.refused == [] and [b.counts["total"] for b in accepted_batches(api)] == [2] * (os_samples() // 2)
        assert api.peak_enqueued <= 80_000 and len(answered_once(api)) == os_samples()
    assert state(out).token_limit is None  # nothing learnt: the option's is used


def test_a_refusal_while_the_limit_is_held_by_others_waits_without_spending_an_attempt(tmp_path: Path) -> None:
    notes = Notes()
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        # a batch not ours holds the whole limit until our third try
        theirs = FakeBatch("batch_theirs", "file-theirs", {}, 0, Outcome(), status="in_progress", model="judge-model")
        theirs.tokens = LIMIT
        api.batches[theirs.id] = theirs

        def outcome(number: int, requests: int) -> Outcome:
            if number == 3:
                theirs.status = "completed"
            return Outcome()

        api.outcome, api.token_limit = outcome, LIMIT
        (record,) = batch_judge_all(settings(api.url, max_retries=0), [make_request()], tmp_path, progress=notes)
    assert len(api.refused) == 2 and len(api.created) == 3 and len(api.answered) == 1
    assert record.status == "ok" and record.verdicts[0].attempts == 1
    assert sum("refused for the enqueued-token limit" in n for n in notes.notes) == 2


def test_a_batch_refused_under_the_limit_halves_the_batches_down_to_one_request(tmp_path: Path) -> None:
    """Issue 36: refused with none of ours in flight, though under the limit by awbench's count (here the message
    states none): the batches' budget is halved, down to one request a batch, said, and every verdict comes."""
    notes = Notes()
    requests = [make_request(i) for i in range(3)]
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT, stated_limit=False) as api:
        records = batch_judge_all(settings(api.url, max_tokens=40_000), requests, tmp_path, progress=notes)
    assert [r.status for r in records] == ["ok"] * 3 and all(r.verdicts[0].attempts == 1 for r in records)
    assert len(api.refused) == 1 and [b.counts["total"] for b in accepted_batches(api)] == [1, 1, 1]
    saved = BatchState.model_validate_json((tmp_path / STATE_FILE).read_text())
    (refused,) = [entry for entry in saved.batches if entry.refused]
    assert saved.token_limit is None and saved.budget == refused.tokens // 2
    (learnt,) = [n for n in notes.notes if "refused for the enqueued-token limit" in n]
    assert learnt == (
        f"judge {saved.judge_id}: batch {refused.batch_id} (3 requests, ~{refused.tokens:,} "
        "tokens by awbench's count) was refused for the enqueued-token limit (the limit is not stated "
        "(--judge-batch-tokens sets it)); with none of this run's batches in flight, the API counts more than "
        f"awbench estimates (or tokens of ended batches linger): batches now hold at most ~{saved.budget:,} tokens "
        "by awbench's count, down to one request each; no attempt spent"
    )


def test_single_requests_refused_in_a_row_wait_then_stop_resumably_saying_how_long(tmp_path: Path) -> None:
    """A batch not ours holds the whole limit: one request refused again and again waits poll x 1, 2, 4, 8, 16,
    then the run stops (no attempt spent); once the limit is free, the same judge resumes."""
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT) as api:
        theirs = FakeBatch("batch_theirs", "file-theirs", {}, 0, Outcome(), status="in_progress", model="judge-model")
        theirs.tokens = LIMIT
        api.batches[theirs.id] = theirs
        with pytest.raises(EndpointDown) as stopped:
            batch_judge_all(settings(api.url, batch_poll_interval=0.01), [make_request()], tmp_path)
        assert len(api.refused) == len(api.created) == MAX_LIMIT_REFUSALS and api.answered == []
        assert str(stopped.value).startswith(
            f"the Batch API refused {MAX_LIMIT_REFUSALS} batches of a single request in a row for the model's "
            "enqueued-token limit with none of this run's batches in flight, over 0.31 s of waiting"
        )
        theirs.status = "completed"
        (record,) = batch_judge_all(settings(api.url, batch_poll_interval=0.01), [make_request()], tmp_path)
    assert record.status == "ok" and record.verdicts[0].attempts == 1


def test_a_provider_counting_more_than_awbench_estimates_yields_every_verdict(out: Path) -> None:
    """Issue 36: a Batch API whose count holds the completion allowance once more than awbench's estimate (as one
    counting `max_completion_tokens` on top) refused batches awbench sized under the limit; the run got 21 of 65
    verdicts and stopped. Now the batches shrink until the API takes them."""
    n = os_samples()

    def counted(body: dict) -> int:
        return request_tokens(body) + int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)

    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT, count=counted) as api:
        result = invoke(*run_args(api.url, out))
        assert result.exit_code == 0, result.output
        assert len(api.answered) == n and api.peak_enqueued <= LIMIT
        assert len(api.refused) <= 3  # the whole run, then a batch of two, then none
    assert "batches now hold at most" in result.output
    records = judgments(out)
    assert len(records) == n and all(r.status == "ok" and r.verdicts[0].attempts == 1 for r in records.values())


def test_tokens_of_ended_batches_that_linger_are_waited_out(out: Path) -> None:
    """A provider that frees an ended batch's tokens late: the next batch is refused with none of ours in flight;
    awbench shrinks the batches and waits, and every verdict comes."""
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT, linger_s=0.3) as api:
        result = invoke(*run_args(api.url, out))
        assert result.exit_code == 0, result.output
        assert len(api.answered) == os_samples() and api.refused
    assert len(judgments(out)) == os_samples()


def test_a_request_larger_than_the_limit_alone_fails_its_sample_with_a_clear_message(tmp_path: Path) -> None:
    small, large = make_request(0), make_request(1, prediction="x" * 40_000)
    probe = create(settings("http://127.0.0.1:9/v1", max_tokens=1000))
    assert isinstance(probe, BatchJudge)
    counted = {
        r.key: request_tokens(probe.direct.request_body(render_messages(probe.direct.prompt_set, r), 0, "t"))
        for r in (small, large)
    }
    limit = counted[large.key] - 1
    assert counted[small.key] < limit
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT) as api:
        records = batch_judge_all(settings(api.url, max_tokens=1000, batch_tokens=limit), [small, large], tmp_path)
    by_key = {r.key: r for r in records}
    assert by_key[small.key].status == "ok" and len(api.answered) == 1
    failed = by_key[large.key]
    assert failed.status == "failed" and not failed.transient
    assert failed.error == (
        f"no complete verdict: the request counts ~{counted[large.key]:,} tokens (its prompt and max_tokens) "
        f"against the Batch API's enqueued-token limit of {limit:,}: no batch can hold it; lower "
        "--judge-max-tokens, or judge it directly (--no-judge-batch)"
    )


def test_no_verdict_made_exits_non_zero(out: Path) -> None:
    """Every request larger than the limit: 0 of 8 verdicts, nothing sent, exit 1."""
    with FakeBatchAPI(responder=lambda body: Reply(verdict())) as api:
        result = invoke(*run_args(api.url, out, "--judge-batch-tokens", 1000))
        assert api.created == [] and api.uploads == []
    assert result.exit_code == 1, result.output
    assert "no batch can hold it" in result.output
    assert all(r.status == "failed" for r in judgments(out).values())


def test_killed_between_batches_the_limit_and_the_batch_in_flight_are_resumed(out: Path) -> None:
    """A real `awbench judge` process killed with SIGKILL after its first batch under the learnt limit ended and
    the second is in flight; the same command then waits for that batch and sends the rest, once each."""
    n = os_samples()
    made = invoke("infer", "--model", "baseline:oracle", "--data", "sample", "--domains", "os", "--run-name", "r",
                  "--output", out)  # fmt: skip
    assert made.exit_code == 0, made.output
    judge_args = [
        "judge",
        "r",
        "--judge",
        "llm",
        "--judge-model",
        "judge-x",
        "--judge-batch",
        "--judge-batch-poll-interval",
        "0.02",
        "--output",
        out,
    ]
    # batch 1 (the whole run) refused, batch 2 runs, batch 3 and later stay in progress
    with FakeBatchAPI(responder=lambda body: Reply(verdict()), token_limit=LIMIT, hold_after=2) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {
            "OPENAI_API_KEY": SECRET,
            "PYTHONPATH": str(REPO),
        }
        command = [
            sys.executable,
            "-c",
            "from awbench.cli import main; main()",
            *map(str, [*judge_args, "--judge-base-url", api.url]),
        ]
        child = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and child.poll() is None:
                if len(api.created) == 3 and api.looked_at.count(api.created[2]) >= 2:
                    break
                time.sleep(0.05)
            assert child.poll() is None, child.communicate()[0]
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        (states,) = (out / "r" / "judges").glob(f"*/{STATE_FILE}")
        killed = BatchState.model_validate_json(states.read_text())
        assert killed.token_limit == LIMIT
        assert [(e.batch_id, e.collected, e.refused) for e in killed.batches] == [
            (api.created[0], True, True),
            (api.created[1], True, False),
            (api.created[2], False, False),
        ]
        in_flight = api.created[2]
        assert api.batches[in_flight].status == "in_progress"
        looked = len(api.looked_at)
        api.hold_after = None
        resumed = invoke(*judge_args, "--judge-base-url", api.url)
        assert resumed.exit_code == 0, resumed.output
        assert in_flight in api.looked_at[looked:]
        assert len(api.refused) == 1  # the learnt limit was kept: no second refusal
        assert [b.counts["total"] for b in accepted_batches(api)] == [2] * (n // 2)
        assert len(answered_once(api)) == n
    records = judgments(out)
    assert len(records) == n and all(r.status == "ok" and r.verdicts[0].attempts == 1 for r in records.values())


def test_dry_run_gives_the_batches_and_their_wall_time_at_the_limit_given_or_learnt(out: Path) -> None:
    made = invoke("infer", "--model", "baseline:oracle", "--data", "sample", "--domains", "os", "--run-name", "r",
                  "--output", out)  # fmt: skip
    assert made.exit_code == 0, made.output
    base = ["judge", "r", "--judge", "llm", "--judge-model", "judge-x", "--judge-batch", "--dry-run", "--output", out]
    unknown = invoke(*base)
    assert unknown.exit_code == 0, unknown.output
    assert "which (learnt at the first refusal, or --judge-batch-tokens) sets how many batches" in unknown.output
    counted = int(unknown.output.split(" tokens against the Batch API's")[0].rsplit("~", 1)[1].replace(",", ""))

    def expected(limit: int) -> str:
        batches = -(-counted // limit)
        return (
            f"{batches} batch(es) one after another under a limit of {limit:,}: about {batches} h 0 min at a "
            "typical 1 h per batch (an assumption: the Batch API promises 24 h each)"
        )

    given = invoke(*base, "--judge-batch-tokens", LIMIT)
    assert given.exit_code == 0 and expected(LIMIT) in given.output
    # a limit the evaluation learnt (batches.json), smaller than the one given
    judge_id = create(JudgeSettings(model="judge-x")).id
    learnt = BatchState(judge_id=judge_id, token_limit=60_000)
    (out / "r" / "judges" / judge_id).mkdir(parents=True)
    (out / "r" / "judges" / judge_id / STATE_FILE).write_text(learnt.model_dump_json())
    again = invoke(*base, "--judge-batch-tokens", LIMIT)
    assert again.exit_code == 0 and expected(60_000) in again.output
