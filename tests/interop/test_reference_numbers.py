"""Reference-exact numbers: a reference-protocol run, an import and an export give, digit for digit, what the
reference `eval.py` prints, because awbench runs the checkout's own parsers and eval.py's arithmetic.

Local servers of our own answer with awkward outputs (`tests/awkward_outputs.py`: 38 generation shapes and 53
verdict shapes; each sample gets its own generation and its own sequence of answers, ask by ask). Without a
checkout, the stand-in checkout (`tests/reference_checkout.py`) stands for the reference's code and
`eval_py_printout` restates eval.py's `aggregate_scores` on the rows its judge stage would write. With
AWBENCH_REFERENCE_CHECKOUT naming a checkout of QwenLM/Qwen-AgentWorld, its own `eval.py` runs `infer`,
`judge` and `score` against the same servers, beside `awbench run --judge-prompts CHECKOUT`: every judge
message byte for byte, and every printed line, equal.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from awkward_outputs import GENERATIONS, VERDICTS
from fake_openai import FakeOpenAIServer, Reply
from reference_checkout import CHECKOUT_VARIABLE, TEMPLATE, expected_messages, real_checkout, stand_in, write_checkout
from typer.testing import CliRunner

from awbench.cli import app
from awbench.domains import DIMENSIONS, DOMAIN_LABELS
from awbench.resources import sample_dir
from awbench.run.scoring import ScoresFile

REFERENCE_ASKS = 3
KEY_ENV = "AWBENCH_TEST_REFERENCE_KEY"


def verdict_for(index: int, ask: int) -> str:
    """Sample `index`'s answer to its `ask`-th request (0-based): every shape is some sample's first answer."""
    return VERDICTS[(index * 7 + ask * 13) % len(VERDICTS)]


def generation_for(index: int) -> tuple[str | None, str]:
    generation = GENERATIONS[index % len(GENERATIONS)]
    return generation.content, generation.finish_reason


def current_of(job: dict) -> str:
    """The turn's action as eval.py's judge stage shows it."""
    turn = job["turn_idx"] - 1
    return job.get("current_prompt") or job["prompt"][turn]


def identity(job: dict) -> tuple[str, str]:
    """What tells a sample's judge message from the others': its action, and the end of its real observation,
    each where the message has them (the history holds earlier actions and observations too)."""
    truth = job["response"][job["turn_idx"] - 1].strip()
    return f"# Current Turn:\n\n{current_of(job)}\n\n**World Model Output", f"{truth[-40:].lstrip()}\n```"


@pytest.fixture
def jobs(tmp_path: Path) -> list[dict]:
    """The bundled sample's records, as eval.py's load_data reads them (files sorted), each made unique: a
    repeated record's action gets a suffix, so that every sample has its own answers."""
    out: list[dict] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(sample_dir().glob("*_test.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if not line.strip():
                continue
            job = json.loads(line)
            while identity(job) in seen:
                turn = job["turn_idx"] - 1
                job["prompt"][turn] += " (again)"
                if job.get("current_prompt"):
                    job["current_prompt"] += " (again)"
            seen.add(identity(job))
            out.append(job)
    assert len(out) >= len(VERDICTS) and len(out) >= len(GENERATIONS)  # every shape is met
    return out


@pytest.fixture
def data(tmp_path: Path, jobs: list[dict]) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    by_domain: dict[str, list[dict]] = defaultdict(list)
    for job in jobs:
        by_domain[job["task"].split("/")[-1]].append(job)
    for domain, rows in by_domain.items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (folder / f"{domain}_test.jsonl").write_text(text, encoding="utf-8")
    return folder


@dataclass
class Servers:
    """A candidate answering each sample with its generation, and a judge answering each sample's asks in turn.
    The judge's log holds (sample index, ask, messages) of every request."""

    jobs: list[dict]
    candidate: FakeOpenAIServer = field(init=False)
    judge: FakeOpenAIServer = field(init=False)
    asks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    log: list[tuple[int, int, list[dict]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.by_action = {(j["prompt"][j["turn_idx"] - 1], j["turn_idx"] - 1): i for i, j in enumerate(self.jobs)}
        self.candidate = FakeOpenAIServer(responder=self.generate)
        self.judge = FakeOpenAIServer(responder=self.grade)

    def generate(self, body: dict) -> Reply:
        messages = body["messages"]
        index = self.by_action[(messages[-1]["content"], sum(m["role"] == "assistant" for m in messages))]
        content, finish = generation_for(index)
        return Reply(content=content, finish_reason=finish)

    def grade(self, body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        index = self.sample_of(user)
        digest = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
        with self.lock:
            ask = self.asks[digest]
            self.asks[digest] += 1
            self.log.append((index, ask, body["messages"]))
        return Reply(content=verdict_for(index, ask))

    def sample_of(self, user: str) -> int:
        """The sample a judge message is about: its action and the end of its real observation are in it."""
        found = [i for i, job in enumerate(self.jobs) if all(part in user for part in identity(job))]
        assert len(found) == 1, (found, user[:300])
        return found[0]

    def reset(self) -> list[tuple[int, int, list[dict]]]:
        with self.lock:
            log, self.log = self.log, []
            self.asks.clear()
        return log


@pytest.fixture
def servers(jobs: list[dict]):
    both = Servers(jobs)
    with both.candidate, both.judge:
        yield both


def invoke(*args: object) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def awbench_run(out: Path, servers: Servers, data: Path, checkout: Path, name: str = "ref") -> Path:
    result = invoke(
        "run", "--model", "wm", "--base-url", servers.candidate.url, "--data", data, "--output", out,
        "--run-name", name, "--judge-base-url", servers.judge.url, "--judge-api-key-env", KEY_ENV,
        "--judge-prompts", checkout, "--max-failure-rate", "1", "--concurrency", "4", "--judge-concurrency", "4",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out / name


def awbench_printout(run: Path) -> str:
    result = invoke("score", run, "--format", "reference", "--max-failure-rate", "1")
    assert result.exit_code == 0, result.output
    return result.stdout


def eval_py_printout(rows: list[dict]) -> str:
    """eval.py's `aggregate_scores` printout for the rows of a judged.jsonl, restated: per subtask (sorted) the
    rows with `failed` 0.0, each column's exact mean over its non-zero values, normalised afterwards; printed as
    it goes, up to an OverflowError (a mean beyond a float), where eval.py stops."""
    normalize = lambda raw: (raw - 1) / 4 * 100
    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[row["task"].split("/")[-1]].append(row)
    out = ["", "=" * 70, "AgentWorldBench Evaluation Results", "=" * 70]
    totals: list[Any] = []
    try:
        for task in sorted(by_task):
            task_rows = by_task[task]
            valid = [r for r in task_rows if r.get("failed", 1.0) == 0.0]
            label = DOMAIN_LABELS.get(task, task.capitalize())
            out += ["", f"--- {label} ({len(valid)}/{len(task_rows)} valid, {len(task_rows) - len(valid)} failed) ---"]
            if not valid:
                out.append("  No valid results.")
                continue
            for column in [*DIMENSIONS, "total_score"]:
                values = [r.get(column, 0) for r in valid if r.get(column, 0) != 0]
                if column == "total_score":
                    totals += values
                out.append(f"  {column:>15s}: {normalize(mean(values) if values else 0.0):.2f}")
    except OverflowError:
        return "\n".join(out) + "\n"
    if totals:
        out += ["", "=" * 70, f"Overall: {normalize(mean(totals)):.2f}"]
        out += [f"Total samples: {len(rows)}, Valid: {len(totals)}, Failed: {len(rows) - len(totals)}", "=" * 70]
    return "\n".join(out) + "\n"


def eval_py_scores_alike(path: Path, printed: str, code: int = 0) -> None:
    """With AWBENCH_REFERENCE_CHECKOUT set: the checkout's own `eval.py score` prints `printed` for the file (and
    exits with `code`)."""
    if os.environ.get(CHECKOUT_VARIABLE):
        assert eval_py(Path(os.environ[CHECKOUT_VARIABLE]), "score", "--predictions", path, code=code) == printed


def imported(tmp_path: Path, rows: list[dict], name: str = "back") -> tuple[Path, Path]:
    """(the judged.jsonl written from `rows`, the run awbench imported it as)."""
    path = write_rows(tmp_path / f"{name}.jsonl", rows)
    out = tmp_path / "results"
    result = invoke("import", path, "--run-name", name, "--judge-model", "gpt-5.2-2025-12-11", "--output", out)
    assert result.exit_code == 0, result.output
    return path, out / name


def judged_rows(jobs: list[dict], code: Any) -> list[dict]:
    """The judged.jsonl eval.py's judge stage writes for these generations and answers, `code` being the
    checkout's package (its parse_model_output and parse_judge_output)."""
    rows = []
    for index, job in enumerate(jobs):
        content, _ = generation_for(index)
        gen = content or ""
        row = {**job, "gen": gen}
        if not gen:
            rows.append({**row, "failed": 1.0, "error_message": "No model generation"})
            continue
        parsed: dict = {}
        for ask in range(REFERENCE_ASKS):
            parsed = code.parse_judge_output(verdict_for(index, ask), response_tag="final_evaluation")
            if parsed["success"]:
                break
        extracted = code.parse_model_output(gen, "predicted_observation")
        if parsed["success"]:
            scores = parsed["scores"]
            row |= {"total_score": parsed["total_score"], **{d: scores.get(d, 0) for d in DIMENSIONS}, "failed": 0.0}
        else:
            row |= {"total_score": 0, "failed": 1.0, "error_message": "Judge scoring failed"}
        rows.append({**row, "extracted_output": extracted})
    return rows


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_reference_protocol_run_prints_what_eval_py_prints_with_the_checkouts_code(
    tmp_path: Path, jobs: list[dict], data: Path, servers: Servers
) -> None:
    checkout = write_checkout(tmp_path / "Qwen-AgentWorld")
    code = stand_in(checkout)
    run = awbench_run(tmp_path / "results", servers, data, checkout)
    rows = judged_rows(jobs, code)
    assert awbench_printout(run) == eval_py_printout(rows)

    # What the judge was asked: eval.py's messages for the checkout's extraction, no seed, every generation
    # with text (empty, cut-off and thinking-only ones too).
    systems = code.load_judge_system_prompts()
    for index, _, messages in servers.log:
        content, _ = generation_for(index)
        extracted = code.parse_model_output(content, "predicted_observation")
        assert messages == expected_messages(jobs[index], extracted, systems, TEMPLATE), index
    asked = {index for index, _, _ in servers.log}
    assert asked == {i for i in range(len(jobs)) if generation_for(i)[0]}
    assert not any("seed" in body for body in servers.judge.requests)

    # Why the strict score differs, sample by sample: every differing sample has one reason.
    scores = json.loads((run / "scores.json").read_text())
    reference = scores["reference"]
    assert reference["differing"] == sum(reference["differences"].values()) > 0
    assert reference["approximate"] == 0
    assert reference["totals"] == sum(1 for r in rows if r["failed"] == 0.0 and r["total_score"] != 0)
    judge = json.loads(next((run / "judges").glob("*/judge.json")).read_text())
    assert judge["described"]["reference_code"]["sha256"] == sets_sha(checkout)


def sets_sha(checkout: Path) -> str:
    from awbench.judging.llm.reference_code import load_reference_code

    return load_reference_code(checkout).sha256


def test_an_imported_judged_file_prints_what_eval_py_prints(tmp_path: Path, jobs: list[dict]) -> None:
    """Every value the reference writes imports: `false`, 0 and negative scores (whole, of any size: its parser
    keeps a judge's -1e300 as an integer of 301 digits), a total of int 0, rows without a generation, rows its
    judge could not read; the printout is eval.py's for the file, a line of hundreds of digits or -inf included."""
    rows = judged_rows(jobs, stand_in(write_checkout(tmp_path / "c")))
    scored = {"failed": 0.0, "total_score": 4.5}
    rows[1] |= {"factuality": False, "failed": 0.0}  # the judge answered `false`: the reference keeps it
    rows[2] |= {"consistency": -3, **scored}
    rows[3] |= {**dict.fromkeys(DIMENSIONS, 0), "total_score": 0, "failed": 0.0}  # success, nothing usable
    rows[4] |= {"factuality": -(10**12), **scored}
    rows[5] |= {"consistency": -(10**300), **scored}
    rows[6] |= {"realism": -9007199254740993, **scored}  # not a float: kept exact
    rows[7] |= {"format": int(-1.7e308), **scored}  # scaled, beyond a float: eval.py prints -inf
    for row in rows[1:8]:
        row["gen"] = row["gen"] or "x"
    path, run = imported(tmp_path, rows)
    printed = awbench_printout(run)
    assert printed == eval_py_printout(rows)
    assert "           format: -inf\n" in printed
    assert any(line.startswith("      consistency: -") and len(line) > 300 for line in printed.splitlines())
    eval_py_scores_alike(path, printed)

    # scores.json stays JSON: a line eval.py prints as -inf is held as that text.
    text = (run / "scores.json").read_text()
    reference = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in scores.json"))["reference"]
    assert reference["domains"]["android"]["dimensions"]["format"] == "-inf"
    back = ScoresFile.model_validate_json(text).reference  # as every reader of scores.json reads it
    assert back is not None and back.printout() == printed
    board = invoke("leaderboard", tmp_path / "results", "--by", "dimension", "--format", "json")  # ranked by it
    assert board.exit_code == 0, board.output
    (row,) = json.loads(board.stdout)["groups"][0]["rows"]
    assert row["cells"]["format"]["value"] == "-inf"


def test_a_mean_beyond_a_float_stops_eval_py_and_awbench_prints_what_it_printed(
    tmp_path: Path, jobs: list[dict]
) -> None:
    """A judge's negative score of 400 digits, which the reference keeps: its mean is beyond a float and eval.py
    raises OverflowError on that line, having printed the lines before it. awbench prints those lines, says on
    stderr where eval.py stops, and keeps every other number."""
    rows = judged_rows(jobs, stand_in(write_checkout(tmp_path / "c")))
    swe = next(i for i, row in enumerate(rows) if row["task"].endswith("/swe") and row["failed"] == 0.0)
    rows[swe]["quality"] = -(10**400)
    path, run = imported(tmp_path, rows)
    result = invoke("score", run, "--format", "reference", "--max-failure-rate", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == eval_py_printout(rows)
    swe_lines = result.stdout.split("--- SWE ")[1].splitlines()
    assert [line[:19] for line in swe_lines[1:]] == [f"  {d:>15s}: " for d in DIMENSIONS[:4]]  # and no more
    assert (
        "eval.py stops at SWE's quality: the mean of its scores is beyond a float (OverflowError); the lines "
        "before it are all it prints"
    ) in " ".join(result.stderr.split())
    reference = json.loads((run / "scores.json").read_text())["reference"]
    assert reference["domains"]["swe"]["overflows"] == ["quality"]
    assert "quality" not in reference["domains"]["swe"]["dimensions"] and reference["domains"]["web"]["score"]
    eval_py_scores_alike(path, result.stdout, code=1)


def first_scored(rows: list[dict], domain: str) -> dict:
    return next(row for row in rows if row["task"].endswith(f"/{domain}") and row["failed"] == 0.0)


def test_tasks_spelled_otherwise_are_grouped_as_eval_py_groups_them(tmp_path: Path, jobs: list[dict]) -> None:
    """eval.py groups rows by its subtask, the task after its last slash as written: `agentworld/SWE` and
    `agentworld/android ` are groups of their own, printed apart from SWE's and Android's lines. The import
    prints the same and says so; its export keeps each task as it was, so eval.py prints the same for it."""
    rows = judged_rows(jobs, stand_in(write_checkout(tmp_path / "c")))
    first_scored(rows, "swe")["task"] = "agentworld/SWE"
    first_scored(rows, "android")["task"] = "agentworld/android "
    path, run = imported(tmp_path, rows)
    result = invoke("score", run, "--format", "reference", "--max-failure-rate", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == eval_py_printout(rows)
    assert "--- Swe (1/1 valid, 0 failed) ---" in result.stdout and "--- Android  (1/1 valid" in result.stdout
    assert (
        "eval.py groups 2 samples under their task's own spelling, apart from their domain's line: 'SWE' (1), "
        "'android ' (1)"
    ) in " ".join(result.stderr.split())
    eval_py_scores_alike(path, result.stdout)

    scores = ScoresFile.model_validate_json((run / "scores.json").read_text())
    assert scores.reference is not None
    ranked = scores.ranked().domains  # a domain is ranked by its own line, which leaves the other spelling out
    assert (ranked["swe"].scored, ranked["swe"].score) == (9, scores.reference.domains["swe"].score)
    assert invoke("export", run, "--official", tmp_path / "official").exit_code == 0
    exported = [json.loads(line) for line in (tmp_path / "official" / "judged.jsonl").read_text().split("\n") if line]
    assert [row["task"] for row in exported] == [row["task"] for row in rows]
    assert eval_py_printout(exported) == result.stdout
    eval_py_scores_alike(tmp_path / "official" / "judged.jsonl", result.stdout)


def test_rows_repeated_alike_are_taken_once_and_the_reference_numbers_say_so(tmp_path: Path, jobs: list[dict]) -> None:
    """awbench takes a data row alike in every field to an earlier one once; eval.py counts every row. The
    reference numbers are those of the rows taken, and every place that shows them says that eval.py's differ."""
    rows = judged_rows(jobs, stand_in(write_checkout(tmp_path / "c")))
    repeated = [*rows, first_scored(rows, "os"), first_scored(rows, "web")]
    path, run = imported(tmp_path, repeated)
    result = invoke("score", run, "--format", "reference", "--max-failure-rate", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == eval_py_printout(rows) != eval_py_printout(repeated)
    note = (
        "2 data rows repeat an earlier row in every field: awbench evaluates each such sample once, eval.py counts "
        "every row, so its numbers for these data differ from the reference numbers here"
    )
    assert note in " ".join(result.stderr.split())
    assert note in " ".join(invoke("score", run, "--max-failure-rate", "1").stdout.split())
    assert json.loads((run / "scores.json").read_text())["reference"]["repeated"] == 2
    eval_py_scores_alike(path, eval_py_printout(repeated))  # which counts them twice


def test_every_valid_row_totalling_0_prints_what_eval_py_prints_and_exits_0(tmp_path: Path, jobs: list[dict]) -> None:
    """Every row the judge read has no usable score: eval.py prints -25.00 for each domain, no Overall, and
    exits 0. awbench's strict score has nothing, but the reference's reading measured every domain: exit 0 too
    (with --max-failure-rate 1, as every sample is unscored by the strict score)."""
    rows = judged_rows(jobs, stand_in(write_checkout(tmp_path / "c")))
    for row in rows:
        if row["failed"] == 0.0:
            row |= {**dict.fromkeys(DIMENSIONS, False), "total_score": 0}
    path, run = imported(tmp_path, rows)
    printed = awbench_printout(run)  # exit 0
    assert printed == eval_py_printout(rows) and "      total_score: -25.00\n" in printed and "Overall" not in printed
    eval_py_scores_alike(path, printed)


def test_the_export_of_a_reference_protocol_run_prints_the_same(tmp_path: Path, data: Path, servers: Servers) -> None:
    run = awbench_run(tmp_path / "results", servers, data, write_checkout(tmp_path / "Qwen-AgentWorld"))
    result = invoke("export", run, "--official", tmp_path / "official")
    assert result.exit_code == 0, result.output
    exported = [json.loads(line) for line in (tmp_path / "official" / "judged.jsonl").read_text().split("\n") if line]
    assert eval_py_printout(exported) == awbench_printout(run)


def test_the_arithmetic_is_eval_pys_to_the_last_digit(tmp_path: Path, jobs: list[dict]) -> None:
    """eval.py takes the exact mean of the raw totals and normalises it once: 4.0, 5.0, 2.5 and 1.8 print 58.13
    (58.12500000000001); normalising each row and summing floats gives 58.125, printed 58.12."""
    totals = [4.0, 5.0, 2.5, 1.8]
    rows = []
    for job, total in zip([j for j in jobs if j["task"].endswith("/swe")], totals):
        rows.append({**job, "gen": "x", "failed": 0.0, "total_score": total, **dict.fromkeys(DIMENSIONS, 3)})
    path = write_rows(tmp_path / "judged.jsonl", rows)
    result = invoke("import", path, "--run-name", "digits", "--output", tmp_path / "results")
    assert result.exit_code == 0, result.output
    printed = awbench_printout(tmp_path / "results" / "digits")
    assert "      total_score: 58.13\n" in printed and "Overall: 58.13\n" in printed
    assert printed == eval_py_printout(rows)
    if os.environ.get(CHECKOUT_VARIABLE):
        assert eval_py(Path(os.environ[CHECKOUT_VARIABLE]), "score", "--predictions", path) == printed


def test_score_format_reference_needs_a_reference_reading(tmp_path: Path) -> None:
    out = tmp_path / "results"
    made = invoke("run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--output", out)
    assert made.exit_code == 0, made.output
    result = invoke("score", out / "baseline-oracle__rules", "--format", "reference")
    assert result.exit_code == 2
    assert "has no reference reading: judge the run under the reference protocol" in " ".join(result.output.split())


# --- against the reference's own eval.py ----------------------------------------------------------------------


@pytest.fixture
def checkout() -> Path:
    return real_checkout("run its eval.py")


def eval_py(checkout: Path, *args: object, code: int = 0) -> str:
    """One `eval.py` command, run from the checkout as its README says; its stdout (the printout), once it has
    exited with `code`."""
    done = subprocess.run(
        [sys.executable, "eval.py", *map(str, args)],
        cwd=checkout / "eval",
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OPENAI_API_KEY": "sk-test"},
    )
    assert done.returncode == code, done.stderr[-2000:]
    return done.stdout


def test_eval_py_and_awbench_send_the_same_messages_and_print_the_same_numbers(
    tmp_path: Path, data: Path, servers: Servers, checkout: Path
) -> None:
    official = tmp_path / "eval_py"
    eval_py(checkout, "infer", "--data-dir", data, "--model-base-url", servers.candidate.url, "--model-name", "wm",
            "--output-dir", official)  # fmt: skip
    printed = eval_py(checkout, "judge", "--predictions", official / "predictions.jsonl", "--judge-base-url",
                      servers.judge.url, "--judge-model", "judge", "--output-dir", official)  # fmt: skip
    by_eval_py = {(index, ask): messages for index, ask, messages in servers.reset()}

    run = awbench_run(tmp_path / "results", servers, data, checkout)
    by_awbench = {(index, ask): messages for index, ask, messages in servers.reset()}
    # Every message eval.py sent, byte for byte (awbench asks again where its own strict reading needs it).
    assert by_eval_py and all(by_awbench.get(key) == messages for key, messages in by_eval_py.items())
    assert {i for i, _ in by_eval_py} == {i for i, _ in by_awbench}

    assert awbench_printout(run) == printed
    assert eval_py(checkout, "score", "--predictions", official / "judged.jsonl") == printed

    # eval.py's judged.jsonl imported, and awbench's run exported, print the same again.
    out = tmp_path / "results"
    result = invoke("import", official / "judged.jsonl", "--run-name", "imported", "--output", out)
    assert result.exit_code == 0, result.output
    assert awbench_printout(out / "imported") == printed
    result = invoke("export", run, "--official", tmp_path / "exported")
    assert result.exit_code == 0, result.output
    assert eval_py(checkout, "score", "--predictions", tmp_path / "exported" / "judged.jsonl") == printed
