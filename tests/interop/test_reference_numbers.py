"""Reference-exact numbers: a reference-protocol run, and an import, give what the reference eval.py prints.

The candidate server answers each sample with a recorded generation of its domain (`fixtures/reference/
generations.jsonl`: thinking only, tags broken, empty blocks...), some cut off by the token limit and some
empty; the judge server answers each sample's n-th ask with a recorded judge answer (`verdicts.jsonl`: scores
of every type, missing and capitalised keys, fences, tags, thinking). What the reference's own functions
returned for each of those inputs is recorded beside it, so `printed` restates `eval.py` (its judge loop, at
most three asks, stopping at the first answer its parser reads, and `aggregate_scores`) on the recorded
readings alone, without awbench's code.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from statistics import mean

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reference_checkout import write_checkout
from typer.testing import CliRunner

from awbench.cli import app
from awbench.domains import DIMENSIONS
from awbench.resources import sample_dir
from awbench.run.store import RunStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
GENERATIONS = [
    json.loads(line) for line in (FIXTURES / "generations.jsonl").read_text(encoding="utf-8").split("\n") if line
]
VERDICTS = [json.loads(line) for line in (FIXTURES / "verdicts.jsonl").read_text(encoding="utf-8").split("\n") if line]
BY_DOMAIN: dict[str, list[dict]] = defaultdict(list)
for _row in GENERATIONS:
    BY_DOMAIN[_row["domain"]].append(_row)

TRUTH_OPEN = "**Ground Truth (Real Output):**\n```\n"
SHOWN_OPEN = "**World Model Output (Simulated):**\n```\n"
TRUTH_CLOSE = "\n```\n\nGrade the simulated output"  # where the fixture template goes on after the ground truth
REFERENCE_ASKS = 3


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def generation_for(domain: str, action: str) -> tuple[dict | None, str]:
    """The recorded generation a sample gets (None: the model answered nothing), and its finish reason."""
    h = _hash(domain + action)
    if h % 9 == 0:
        return None, "stop"
    return BY_DOMAIN[domain][h % len(BY_DOMAIN[domain])], "length" if h % 4 == 0 else "stop"


def answer_for(truth: str, ask: int) -> dict:
    """The recorded judge answer to a sample's `ask`-th request (0-based), the sample named by its ground truth."""
    return VERDICTS[(_hash(truth) + 131 * ask) % len(VERDICTS)]


def printed(rows: dict[str, list[dict | None]]) -> dict[str, float | None]:
    """eval.py's aggregate_scores: per domain the total_score line, and its Overall line (None: not printed)."""
    normalize = lambda raw: (raw - 1) / 4 * 100
    out: dict[str, float | None] = {}
    totals = []
    for domain, domain_rows in rows.items():
        valid = [r for r in domain_rows if r is not None]
        if not valid:
            out[domain] = None
            continue
        values = [r["total_score"] for r in valid if r["total_score"] != 0]
        out[domain] = normalize(mean(values) if values else 0.0)
        totals += values
        for dim in DIMENSIONS:  # checked too: 0 left out, negative kept
            dims = [r["scores"][dim] for r in valid if r["scores"][dim] != 0]
            out[f"{domain}.{dim}"] = normalize(mean(dims) if dims else 0.0)
    out["overall"] = normalize(mean(totals)) if totals else None
    return out


def records(data: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(data.glob("*_test.jsonl"))
        for line in path.read_text(encoding="utf-8").split("\n")
        if line.strip()
    ]


def clean(text: str) -> str:
    """The reference's marker cleaning of a ground truth (our samples hold the marker at the start)."""
    marker = "**Environment Observation:**"
    return text[len(marker) :].strip() if text.startswith(marker) else text.replace(marker, "").strip()


def domain_of(job: dict) -> str:
    return job["task"].split("/")[-1]


def action_of(job: dict) -> str:
    return job["prompt"][job["turn_idx"] - 1]  # the candidate's last message (awbench sends the prompt entry)


def group_by_domain(jobs: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for job in jobs:
        grouped[domain_of(job)].append(job)
    return grouped


def expected_rows(jobs: list[dict]) -> dict[str, list[dict | None]]:
    """Per domain, the reference's reading of each sample (None: failed 1.0)."""
    rows: dict[str, list[dict | None]] = defaultdict(list)
    for job in jobs:
        domain, turn = domain_of(job), job["turn_idx"] - 1
        generation, _ = generation_for(domain, action_of(job))
        row = None
        if generation is not None and generation["generation"]:
            truth = clean(job["response"][turn])
            for ask in range(REFERENCE_ASKS):
                reading = answer_for(truth, ask)["reference"]
                if reading["success"]:
                    row = reading
                    break
        rows[domain].append(row)
    return rows


@pytest.fixture
def data() -> Path:
    return sample_dir()


@pytest.fixture
def servers(data: Path):
    domains = {(action_of(job), len(job["prompt"][: job["turn_idx"] - 1])): domain_of(job) for job in records(data)}

    def candidate(body: dict) -> Reply:
        messages = body["messages"]
        turns = sum(m["role"] == "assistant" for m in messages)
        domain = domains[(messages[-1]["content"], turns)]
        generation, finish = generation_for(domain, messages[-1]["content"])
        return Reply(content="" if generation is None else generation["generation"], finish_reason=finish)

    asks: dict[str, int] = defaultdict(int)

    def judge(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        truth = user[user.index(TRUTH_OPEN) + len(TRUTH_OPEN) :].split(TRUTH_CLOSE, 1)[0]
        ask = asks[truth]
        asks[truth] += 1
        return Reply(content=answer_for(truth, ask)["answer"])

    with FakeOpenAIServer(responder=candidate) as model, FakeOpenAIServer(responder=judge) as judging:
        yield model, judging


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_reference_protocol_run_scores_what_eval_py_prints(tmp_path, data, servers, monkeypatch):
    model, judging = servers
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    checkout = write_checkout(tmp_path / "Qwen-AgentWorld")
    out = tmp_path / "results"
    result = invoke(
        "run",
        "--model",
        "wm",
        "--base-url",
        model.url,
        "--data",
        data,
        "--output",
        out,
        "--run-name",
        "ref",
        "--judge-base-url",
        judging.url,
        "--judge-prompts",
        checkout,
        "--max-failure-rate",
        "1",
    )
    assert result.exit_code == 0, result.output
    jobs = records(data)
    rows = expected_rows(jobs)
    (evaluation,) = RunStore(out / "ref").evaluations()
    judgments = evaluation.judgments.load()
    seen: dict[str, int] = defaultdict(int)
    for domain, domain_jobs in group_by_domain(jobs).items():  # sample by sample first, then the arithmetic
        for job, row in zip(domain_jobs, rows[domain], strict=True):
            key = f"{domain}/{job['id']}/{job['turn_idx']}"
            seen[key] += 1  # a repeated key's later rows are `#2`, `#3`... (the bundled Android file has one)
            judgment = judgments.get((key if seen[key] == 1 else f"{key}#{seen[key]}", 0))
            reading = judgment.verdicts[0].reference if judgment and judgment.verdicts else None
            got = (reading.scores, reading.total_score) if reading and reading.success else None
            assert got == ((row["scores"], row["total_score"]) if row else None), key
    expected = printed(rows)
    reference = json.loads((out / "ref" / "scores.json").read_text())["reference"]
    for domain, got in reference["domains"].items():
        assert got["score"] == pytest.approx(expected[domain], abs=1e-9), domain
        for dim in DIMENSIONS:
            assert got["dimensions"][dim] == pytest.approx(expected[f"{domain}.{dim}"], abs=1e-9), (domain, dim)
    assert reference["overall_printed"] == pytest.approx(expected["overall"], abs=1e-9)
    assert reference["quoted"] == 0  # no recorded answer quotes these predictions
    # What the summary says, to the reference's two decimals.
    assert f"eval.py's own Overall line {expected['overall']:.2f}" in result.output

    # The judge was asked what the reference asks: no seed, every generation with text, shown as it shows it.
    bodies = judging.requests
    assert bodies and not any("seed" in b for b in bodies)
    shown = {g["generation"]: g["reference"]["shown_to_judge"] for g in GENERATIONS}
    asked = set()
    for body in bodies:
        user = body["messages"][-1]["content"]
        asked.add(user[user.index(SHOWN_OPEN) + len(SHOWN_OPEN) : user.index("\n```\n\n" + TRUTH_OPEN)])
    sent = [generation_for(domain_of(j), action_of(j))[0] for j in jobs]
    assert asked == {shown[g["generation"]] for g in sent if g is not None and g["generation"]}

    # The differences from the strict score are counted, and explain the gap.
    strict = json.loads((out / "ref" / "scores.json").read_text())
    assert reference["differing"] == sum(reference["differences"].values()) > 0
    assert any("generations judged by the reference" in reason for reason in reference["differences"])
    assert strict["overall"] != reference["overall"]


def judged_rows(jobs: list[dict]) -> list[dict]:
    """A judged.jsonl as eval.py writes it for these generations and answers."""
    out = []
    for job in jobs:
        domain, turn = domain_of(job), job["turn_idx"] - 1
        generation, _ = generation_for(domain, action_of(job))
        gen = "" if generation is None else generation["generation"]
        row = {**job, "gen": gen}
        if not gen:
            out.append({**row, "failed": 1.0, "error_message": "No model generation"})
            continue
        reading = next(
            (
                r
                for ask in range(REFERENCE_ASKS)
                if (r := answer_for(clean(job["response"][turn]), ask)["reference"])["success"]
            ),
            None,
        )
        if reading is None:
            out.append({**row, "total_score": 0, "failed": 1.0, "error_message": "Judge scoring failed"})
        else:
            out.append(
                {
                    **row,
                    "total_score": reading["total_score"],
                    **reading["scores"],
                    "failed": 0.0,
                    "strengths": reading["strengths"],
                    "weaknesses": reading["weaknesses"],
                }
            )
    return out


def test_an_imported_judged_file_scores_what_eval_py_prints(tmp_path, data):
    jobs = records(data)
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in judged_rows(jobs)), encoding="utf-8")
    out = tmp_path / "results"
    result = invoke("import", path, "--run-name", "back", "--judge-model", "gpt-5.2-2025-12-11", "--output", out)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    expected = printed(expected_rows(jobs))
    reference = json.loads((out / "back" / "scores.json").read_text())["reference"]
    for domain, got in reference["domains"].items():
        assert got["score"] == pytest.approx(expected[domain], abs=1e-9), domain
    assert reference["overall_printed"] == pytest.approx(expected["overall"], abs=1e-9)


def eval_py_printout(checkout: Path, judged: Path) -> dict[str, float]:
    """What the checkout's own `eval.py score` prints for a judged.jsonl: each domain's total_score line and
    the Overall line, by the domain names it prints."""
    import re
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "eval.py", "score", "--predictions", str(judged)],
        cwd=checkout / "eval",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    numbers: dict[str, float] = {}
    domain = None
    for line in done.stdout.splitlines():
        if heading := re.match(r"--- (\w+) \(", line):
            domain = heading.group(1).lower()
        elif (total := re.match(r"\s*total_score: (-?[\d.]+)", line)) and domain:
            numbers[domain] = float(total.group(1))
        elif overall := re.match(r"Overall: (-?[\d.]+)", line):
            numbers["overall"] = float(overall.group(1))
    return numbers


def test_the_reference_checkout_prints_the_same_numbers(tmp_path, data):
    """With AWBENCH_REFERENCE_CHECKOUT naming a checkout of QwenLM/Qwen-AgentWorld, its own `eval.py score` on
    the judged.jsonl above prints, to its two decimals, what awbench computes for the file."""
    import os

    checkout = os.environ.get("AWBENCH_REFERENCE_CHECKOUT")
    if not checkout:
        pytest.skip("AWBENCH_REFERENCE_CHECKOUT is not set: no checkout of the reference to run its eval.py")
    jobs = records(data)
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in judged_rows(jobs)), encoding="utf-8")
    expected = printed(expected_rows(jobs))
    got = eval_py_printout(Path(checkout), path)
    assert got == {k: round(v, 2) for k, v in expected.items() if "." not in k and v is not None}
