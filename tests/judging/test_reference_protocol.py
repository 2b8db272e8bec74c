"""The reference protocol: judge messages byte for byte as the release's judge stage builds them, against a
stand-in checkout (our own code with the reference's layout and function names), and the reference's messages
restated independently of awbench's own record types (both in tests/reference_checkout.py). The checkout's
code itself: tests/judging/test_reference_code.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reference_checkout import MARKER, TEMPLATE, expected_messages, write_checkout

from awbench.data.dataset import read_source
from awbench.domains import DOMAINS
from awbench.judging.llm.prompts import (
    PromptError,
    load_prompt_set,
    reference_messages,
    render_messages,
)
from awbench.records import BenchmarkRecord, JudgeRequest, Sample
from awbench.resources import sample_dir


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return write_checkout(tmp_path / "Qwen-AgentWorld")


def request_for(job: dict, prediction: str) -> JudgeRequest:
    record = BenchmarkRecord.model_validate(job)
    return JudgeRequest(sample=Sample(key=record.base_key(), record=record, origin="test"), prediction=prediction)


def raw_jobs() -> list[dict]:
    jobs = []
    for path in sorted(sample_dir().glob("*_test.jsonl")):
        jobs += [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    return jobs


def test_every_sample_record_gives_the_reference_messages_byte_for_byte(checkout: Path) -> None:
    prompt_set = load_prompt_set(str(checkout))
    systems = {d: (checkout / "prompts" / d / "judge_system_prompt.txt").read_text(encoding="utf-8") for d in DOMAINS}
    jobs = raw_jobs()
    assert {j["task"].split("/")[-1] for j in jobs} == set(DOMAINS) and any(j["turn_idx"] == 1 for j in jobs)
    for job in jobs:
        truth = job["response"][job["turn_idx"] - 1]
        for prediction in (truth, f"  {MARKER}\nsomething else  ", "plain prediction"):
            got = render_messages(prompt_set, request_for(job, prediction))
            assert got == expected_messages(job, prediction, systems, TEMPLATE), job["task"]


@pytest.mark.parametrize("case", ["first_turn", "empty_system", "backticks", "marker_inside", "current_prompt_differs"])
def test_edge_records(checkout: Path, case: str) -> None:
    job: dict[str, Any] = {
        "task": "agentworld/terminal",
        "id": 3,
        "turn_idx": 2,
        "total_turns": 4,
        "system_str": "You are a shell.",
        "prompt": ["### Turn 1\n**Action:**\n```bash\nls\n```", "### Turn 2\n**Action:**\necho '```'"],
        "response": [f"{MARKER}\na.txt\n", f"{MARKER}\n```\n"],
        "current_prompt": "",  # empty: the reference takes the prompt entry instead
    }
    prediction = f"{MARKER}\n```\n"
    if case == "first_turn":
        job |= {"turn_idx": 1, "prompt": job["prompt"][:1], "response": job["response"][:1]}
    elif case == "empty_system":
        job["system_str"] = ""
    elif case == "backticks":
        job["response"][0] = f"{MARKER}\n````\nnested ``` fence\n````"
        prediction = "```json\n{}\n```"
    elif case == "marker_inside":
        prediction = f"before {MARKER} after"
    elif case == "current_prompt_differs":
        job["current_prompt"] = "### Turn 2\n**Action:**\npwd"
    prompt_set = load_prompt_set(str(checkout))
    systems = {d: prompt_set.system[d] for d in DOMAINS}
    assert reference_messages(prompt_set, request_for(job, prediction)) == expected_messages(
        job, prediction, systems, TEMPLATE
    )


def test_the_checkout_may_be_given_as_its_prompts_folder_and_is_hashed(checkout: Path, tmp_path: Path) -> None:
    whole, prompts_only = load_prompt_set(str(checkout)), load_prompt_set(str(checkout / "prompts"))
    assert whole.protocol == prompts_only.protocol == "reference"
    assert whole.sha256 == prompts_only.sha256 and whole.source == str(checkout.resolve())
    assert whole.user_template == TEMPLATE
    other = write_checkout(tmp_path / "edited")
    (other / "prompts" / "os" / "judge_system_prompt.txt").write_text("You grade os simulations, strictly.\n")
    assert load_prompt_set(str(other)).sha256 != whole.sha256


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (None, "cannot import name 'JUDGE_USER_PROMPT'"),
        ("{context} {world_model_input} {ground_truth}", "has the fields"),
        ("{context} {oops", "is not a format string"),
    ],
)
def test_a_bad_judge_template_is_named(tmp_path: Path, template: str | None, message: str) -> None:
    checkout = write_checkout(tmp_path / "c", template)
    with pytest.raises(PromptError, match=message):
        load_prompt_set(str(checkout))


def test_a_template_file_cannot_replace_the_reference_template(checkout: Path, tmp_path: Path) -> None:
    template = tmp_path / "t.md"
    template.write_text("{{action}} {{prediction}} {{ground_truth}}")
    with pytest.raises(PromptError, match="cannot be combined with the reference protocol"):
        load_prompt_set(str(checkout), str(template))


def test_sample_records_load_as_benchmark_records() -> None:
    samples, _ = read_source("sample")
    assert len(samples) == len(raw_jobs())
