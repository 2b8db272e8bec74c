"""Pairwise comparison of runs by an LLM judge (`compare_runs`, the flow of `awbench compare --pairwise` and
`awbench leaderboard --pairwise`): for each sample both runs of a pair predicted, which prediction is closer to
the real observation? Asked in both orders (each run's prediction once as Response A), through the choice judge
(`awbench.judging.choice.judge`). The runs are only read (run.json once each); the answers are kept outside them,
never mixed with their rubric scores:

    OUTPUT/pairwise/<x>/<y>/<judge id>/pair.json      the two runs and the judge (`PairInfo`)
    OUTPUT/pairwise/<x>/<y>/<judge id>/answers.jsonl  one row per question; the last of a key wins

x and y are the two run names in sorted order, so `compare A B` and `compare B A` share their answers; the judge id
names the judge's model, settings and prompt set. A folder per name: no run name holds a "/", so no two pairs share
one (`pair_directory`). Questions are keyed `{sample key}|{x or y}`, the run whose
prediction is Response A; each answer row records the hash of its question's messages, so a changed prediction
or prompt is asked again and nothing else is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from awbench.config import PAIR_FILE, PAIRWISE_DIR, JudgeSettings
from awbench.files import JsonlTable, StoreError, own_dir, read_json, write_atomic
from awbench.judging.choice.judge import ChoiceAnswer, ChoiceJudge, ChoiceQuestion, answer_table
from awbench.judging.choice.pairwise_prompts import load_pairwise_prompts, pairwise_messages
from awbench.judging.cost import CostEstimate
from awbench.judging.llm.prompts import PromptSet, protocol_request, shown_text
from awbench.records import SCHEMA_VERSION, PredictionRecord, Sample
from awbench.run.pipeline import PipelineError, choice_judge, run_samples
from awbench.run.scoring import GenKey
from awbench.run.stages import Progress
from awbench.run.store import JudgeInfo, RunLock, RunStore, refuse_run_output

Side = Literal["x", "y"]
SIDES: tuple[Side, Side] = ("x", "y")


@dataclass(frozen=True)
class Contender:
    """A run as the pairwise judge sees it: its name, directory and predictions."""

    name: str
    path: Path
    predictions: Mapping[GenKey, PredictionRecord]


@dataclass(frozen=True)
class PairedSample:
    """A sample both runs predicted, with each run's prediction as the judge is shown it, x's first."""

    sample: Sample
    texts: tuple[str, str]


@dataclass
class Pairing:
    """Two runs' predictions side by side: what can be compared, and what is left out and why."""

    x: str
    y: str
    paired: list[PairedSample]
    missing: dict[str, int] = field(default_factory=dict)  # run -> samples it has no prediction for
    failed: dict[str, int] = field(default_factory=dict)  # run -> samples whose generation failed

    def left_out(self) -> list[str]:
        """One line per run with samples left out: how many, and why."""
        lines = []
        for run in (self.x, self.y):
            missing, failed = self.missing.get(run, 0), self.failed.get(run, 0)
            reasons = [f"{missing} not predicted"] * bool(missing) + [f"{failed} failed generations"] * bool(failed)
            if reasons:
                lines.append(
                    f"{missing + failed} samples left out: {run} has no prediction there ({', '.join(reasons)})"
                )
        return lines


def pair_predictions(samples: Iterable[Sample], a: Contender, b: Contender, prompt_set: PromptSet) -> Pairing:
    """The samples both runs predicted (generation 0), x being the run whose name sorts first; each prediction as
    a judge of the prompt set's protocol is shown it (`protocol_request`: none for a failed generation)."""
    x, y = sorted((a, b), key=lambda run: run.name)
    pairing = Pairing(x=x.name, y=y.name, paired=[])
    for sample in samples:
        texts = []
        for run in (x, y):
            prediction = run.predictions.get((sample.key, 0))
            request = None if prediction is None else protocol_request(prompt_set, sample, prediction)
            text = None if request is None else request.prediction
            if prediction is None:
                pairing.missing[run.name] = pairing.missing.get(run.name, 0) + 1
            elif text is None:
                pairing.failed[run.name] = pairing.failed.get(run.name, 0) + 1
            texts.append(text)
        if texts[0] is not None and texts[1] is not None:
            pairing.paired.append(PairedSample(sample, (texts[0], texts[1])))
    return pairing


def question_key(sample_key: str, first: Side) -> str:
    return f"{sample_key}|{first}"


def pair_directory(output: Path, x: str, y: str, judge_id: str) -> Path:
    """`pairwise/<x>/<y>/<judge id>/`. Earlier versions joined the names, `pairwise/<x>__vs__<y>/`, which the
    pairs (p, q__vs__r) and (p__vs__q, r) shared: such a folder is still used, so that nothing is asked again, by
    the pair its pair.json names, as long as no folder of this layout was made for it."""
    folder = output / PAIRWISE_DIR / x / y / judge_id
    legacy = output / PAIRWISE_DIR / f"{x}__vs__{y}" / judge_id
    if not folder.exists() and _pair_named(legacy / PAIR_FILE) == (x, y):
        return legacy
    return folder


def _pair_named(path: Path) -> tuple[str, str] | None:
    """The names of the two runs a pair.json names; None when there is none that can be read."""
    try:
        info = read_json(path)
        return str(info["x"]["name"]), str(info["y"]["name"])
    except (StoreError, KeyError, TypeError):
        return None


class PairRun(BaseModel):
    name: str
    path: str


class PairInfo(BaseModel):
    """pair.json: which two runs, on which data, compared by which judge."""

    schema_version: int = SCHEMA_VERSION
    x: PairRun
    y: PairRun
    data_fingerprint: str
    judge: JudgeInfo


def pair_questions(pairing: Pairing, prompt_set: PromptSet) -> list[ChoiceQuestion]:
    """Two questions per paired sample: x's prediction as Response A, then y's."""
    questions = []
    for paired in pairing.paired:
        key, (x_text, y_text) = paired.sample.key, paired.texts
        for order, (first, (a, b)) in enumerate(zip(SIDES, ((x_text, y_text), (y_text, x_text)))):
            questions.append(
                ChoiceQuestion(
                    key=question_key(key, first),
                    messages=pairwise_messages(prompt_set, paired.sample, a, b),
                    responses=[shown_text(prompt_set, paired.sample, text) for text in (a, b)],
                    place=paired.sample.place(order),
                    meta={"sample": key, "response_a": pairing.x if first == "x" else pairing.y},
                )
            )
    return questions


@dataclass(frozen=True)
class PairJob:
    """One pair's questions and where their answers are kept."""

    pairing: Pairing
    info: PairInfo
    directory: Path
    questions: list[ChoiceQuestion]

    @property
    def table(self) -> JsonlTable[ChoiceAnswer, str]:
        return answer_table(self.directory)


def pair_job(
    output: Path, a: Contender, b: Contender, samples: list[Sample], fingerprint: str, judge: ChoiceJudge
) -> PairJob:
    """What asking `judge` about runs a and b takes; nothing is written yet."""
    pairing = pair_predictions(samples, a, b, judge.prompt_set)
    x, y = sorted((a, b), key=lambda run: run.name)
    info = PairInfo(
        x=PairRun(name=x.name, path=str(x.path.resolve())),
        y=PairRun(name=y.name, path=str(y.path.resolve())),
        data_fingerprint=fingerprint,
        judge=JudgeInfo(id=judge.id, kind="llm", settings=judge.settings, described=judge.describe()),
    )
    directory = own_dir(output, pair_directory(output, pairing.x, pairing.y, judge.id))
    refuse_run_output("the pairwise answers", directory, pairs=False)
    return PairJob(pairing, info, directory, pair_questions(pairing, judge.prompt_set))


def estimate(jobs: list[PairJob], judge: ChoiceJudge) -> CostEstimate:
    """The calls, tokens and cost still to spend on `jobs` (first asks only)."""
    parts = [judge.estimate(job.questions, job.table) for job in jobs]

    def total(costs: list[float | None]) -> float | None:
        return None if None in costs else sum(c for c in costs if c is not None)

    return CostEstimate(
        calls=sum(part.calls for part in parts),
        prompt_tokens=sum(part.prompt_tokens for part in parts),
        completion_tokens=sum(part.completion_tokens for part in parts),
        cost_usd=total([part.cost_usd for part in parts]),
        cached_tokens=sum(part.cached_tokens for part in parts),
        uncached_cost_usd=total([part.uncached_cost_usd for part in parts]),
        batch_price=judge.settings.batch,
    )


async def ask_pairs(jobs: list[PairJob], judge: ChoiceJudge, notes: Progress) -> list[dict[str, ChoiceAnswer]]:
    """Every job's answers (question key -> answer), asking what its table does not hold and reading again what an
    earlier reader read, one pair after the other, each with the pair's directory locked; the judge is checked
    before the first call. A pair with nothing to ask or read again is only read. --max-cost covers every pair's
    spend, earlier runs included: the judge reads every pair's answers before it asks (`ChoiceJudge.kept`)."""
    kept = [judge.kept(job.table) for job in jobs]
    answers, checked = [], False
    for job, answered in zip(jobs, kept):
        pending = judge.pending(job.questions, answered)
        if not pending and not judge.reread(job.questions, answered):
            wanted = {question.key for question in job.questions}
            answers.append({key: answer for key, answer in answered.items() if key in wanted})
            continue
        if pending and not checked:
            await judge.check()  # before anything is written or spent
            checked = True
        if pending:
            notes.note(f"{job.pairing.x} vs {job.pairing.y}: {len(pending)} questions to ask ({judge.id})")
        job.directory.mkdir(parents=True, exist_ok=True)
        lock = RunLock(job.directory)
        lock.acquire()
        try:
            write_atomic(job.directory / PAIR_FILE, job.info.model_dump_json(indent=2) + "\n")
            with notes.stage(f"pairwise {job.pairing.x} vs {job.pairing.y}", len(pending)) as bar:
                answers.append(await judge.ask(job.questions, job.table, notes, bar.advance))
        finally:
            lock.release()
    return answers


@dataclass
class PairwiseOutcome:
    """What `compare_runs` found: one pairing per pair asked for, and their answers (None with `dry_run`, for
    which `estimate` says what asking would still spend)."""

    names: list[str]  # the runs', in the order given
    judge_id: str
    prompts: str  # the prompt set, `{name}@{sha256 prefix}`
    pairings: list[Pairing]
    answers: list[dict[str, ChoiceAnswer]] | None
    estimate: CostEstimate | None
    questions: int
    max_failure_rate: float  # the share of questions that may go without a choice: the strictest of the runs'


async def compare_runs(
    stores: Sequence[RunStore],
    pairs: Sequence[tuple[int, int]],
    settings: JudgeSettings,
    output: Path,
    progress: Progress,
    dry_run: bool = False,
) -> PairwiseOutcome:
    """Ask the pairwise judge of `settings` about each pair of runs (indices into `stores`), keeping the answers
    under `output`; with `dry_run`, only estimate. The runs are read, never written; they must be of the same
    data and have different names."""
    runs = [_contender(store) for store in stores]
    fingerprints = {fingerprint for _, fingerprint in runs}
    if len(fingerprints) > 1:
        listed = ", ".join(f"{run.name} ({fingerprint[:12]})" for run, fingerprint in runs)
        raise PipelineError(
            f"the runs were made on different data: {listed}; a pairwise judge compares predictions of the same samples"
        )
    if len({run.name for run, _ in runs}) < len(runs):
        raise PipelineError("a run is named twice: give different runs")
    manifests = [store.read_manifest() for store in stores]
    samples = run_samples(stores[0], manifest=manifests[0])
    prompt_set = load_pairwise_prompts(settings.prompts, settings.template)
    judge = choice_judge(settings, prompt_set, progress, "pairwise judge")
    try:
        (fingerprint,) = fingerprints
        jobs = [pair_job(output, runs[a][0], runs[b][0], samples, fingerprint, judge) for a, b in pairs]
        found = estimate(jobs, judge) if dry_run else None
        answers = None if dry_run else await ask_pairs(jobs, judge, progress)
    finally:
        await judge.aclose()
    return PairwiseOutcome(
        names=[run.name for run, _ in runs],
        judge_id=judge.id,
        prompts=f"{prompt_set.name}@{prompt_set.sha256[:6]}",
        pairings=[job.pairing for job in jobs],
        answers=answers,
        estimate=found,
        questions=sum(len(job.questions) for job in jobs),
        max_failure_rate=min(m.config.scoring.max_failure_rate for m in manifests),
    )


def _contender(store: RunStore) -> tuple[Contender, str]:
    """A run as the pairwise judge sees it, and its data's fingerprint."""
    manifest = store.read_manifest()
    return Contender(store.name, store.path, store.predictions.load()), manifest.data_fingerprint
