"""The Turing test through the Batch API under the enqueued-token limit, against the real local fake server
(tests/fake_batch_api.py, `token_limit`), as the rubric's batch judge keeps it (awbench.judging.batch.limit):
batches split under `--judge-batch-tokens` or the limit a refusal states, a refusal that spends no attempt, a
question too large for any batch failed without being sent."""

from __future__ import annotations

import json
from pathlib import Path

from fake_batch_api import FakeBatchAPI
from test_turing import _key, knowing, make_run, truths, turing

from awbench.judging.batch.state import STATE_FILE
from awbench.transport.rate_control import request_tokens

__all__ = ["_key", "truths"]  # the fixtures (the judge's key, what is real), shared with test_turing.py

LIMIT = 40_000  # with --judge-max-tokens 1000 a question counts 1.8k-7.8k tokens, the 52 of them ~177k
BATCH = ("--judge-batch", "--judge-batch-poll-interval", "0.01", "--judge-max-tokens", "1000", "--format", "json")


def asked_once(api: FakeBatchAPI) -> list[str]:
    """The questions of the batches that ran; each asked once (no attempt spent on a refusal)."""
    ran = [b for i, b in api.batches.items() if i in api.created and i not in api.refused]
    ids = [line["custom_id"] for b in ran for line in api.uploaded_lines(b.input_file_id)]
    assert len(ids) == len(set(ids)) == len(api.answered)
    return ids


def state(out: Path) -> dict:
    return json.loads(next((out / "lo" / "turing").glob(f"*/{STATE_FILE}")).read_text())


def test_batches_are_split_under_the_given_limit(tmp_path: Path, truths: dict[str, set[str]]) -> None:
    make_run(tmp_path, "lo", "baseline:last-observation")
    with FakeBatchAPI(responder=knowing(truths), token_limit=LIMIT) as api:
        result = turing(tmp_path, "lo", api, *BATCH, "--judge-batch-tokens", str(LIMIT))
        assert result.exit_code == 0, result.output
        assert api.refused == [] and len(api.created) >= 5 and api.peak_enqueued <= LIMIT
        assert len(asked_once(api)) == 52
    report = json.loads(result.stdout)
    assert (report["questions"], report["accuracy"]["value"], report["parse_failures"]) == (52, 100.0, 0)
    assert all(0 < batch["tokens"] <= LIMIT for batch in state(tmp_path)["batches"])


def test_a_refused_batch_spends_no_attempt_and_its_questions_go_out_under_the_stated_limit(
    tmp_path: Path, truths: dict[str, set[str]]
) -> None:
    make_run(tmp_path, "lo", "baseline:last-observation")
    with FakeBatchAPI(responder=knowing(truths), token_limit=LIMIT) as api:
        result = turing(tmp_path, "lo", api, *BATCH)
        assert result.exit_code == 0, result.output
        assert len(api.refused) == 1 and api.refused[0] == api.created[0]  # all 52 at once: over the limit
        assert len(asked_once(api)) == 52 and api.peak_enqueued <= LIMIT
    report = json.loads(result.stdout)
    assert (report["questions"], report["accuracy"]["value"], report["parse_failures"]) == (52, 100.0, 0)
    kept = state(tmp_path)
    assert kept["token_limit"] == LIMIT and [b["refused"] for b in kept["batches"]].count(True) == 1
    answers = [json.loads(line) for line in next((tmp_path / "lo" / "turing").glob("*/answers.jsonl")).open()]
    assert len(answers) == 52 and {a["attempts"] for a in answers} == {1}


def test_a_question_no_batch_can_hold_fails_without_being_sent(tmp_path: Path, truths: dict[str, set[str]]) -> None:
    make_run(tmp_path, "lo", "baseline:last-observation")
    small = 5_000
    with FakeBatchAPI(responder=knowing(truths)) as api:
        result = turing(tmp_path, "lo", api, *BATCH, "--judge-batch-tokens", str(small))
        sent = asked_once(api)
        assert sent and all(request_tokens(body) <= small for body in api.answered)
    answers = [json.loads(line) for line in next((tmp_path / "lo" / "turing").glob("*/answers.jsonl")).open()]
    asked = {"|".join(cid.split("|")[:3]) for cid in sent}  # custom_id: the question's key, then attempt and hash
    failed = [a for a in answers if a["key"] not in asked]
    assert len(failed) == 52 - len(sent) > 0
    assert all("enqueued-token limit of 5,000: no batch can hold it" in (a["error"] or "") for a in failed)
    assert result.exit_code in (0, 1), result.output
