"""The double-blind Turing test of a run's predictions (`turing_test`, the flow of `awbench turing RUN`), kept as
its own evaluation, never mixed with the rubric's:

    turing/<judge id>/turing.json       the judge's settings, its prompts, the seed, how positions are drawn
    turing/<judge id>/positions.secret  the random secret the positions are drawn from, made once
    turing/<judge id>/answers.jsonl     one row per question and attempt (`awbench.judging.choice.judge`), keyed
                                        `{sample key}|{generation}|{A or B: where the real observation is shown}`
    turing/<judge id>/batches.json      with --judge-batch: the batches, for resuming

Each judged prediction (what a rubric judge of the same protocol is asked: under awbench's, a failed generation
has nothing to show and is not asked; under the reference protocol, every generation with text) is one question: its real
observation shown as Response A or B, drawn per prediction (`real_position`) from the evaluation's secret, the
seed, the sample key and the generation, the judge not told; `both_orders` asks both ways. Nothing the world
model sees (the sample, the run's seed) tells it where its prediction will be shown: the secret is made when the
evaluation first asks, after the predictions. An evaluation begun before secrets existed (its turing.json
without `positions`) keeps the positions it was asked with, drawn from the seed alone, so its answers stay
valid; it is marked `"positions": "seed"` (predictable: a world model given the sample key could place its
prediction). Re-running resumes: only what the table does not hold answered is asked.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from awbench.config import JudgeSettings
from awbench.files import StoreError, own_dir, read_own, write_atomic
from awbench.judging.choice.judge import ChoiceAnswer, ChoiceJudge, ChoiceQuestion, answer_table
from awbench.judging.choice.turing_prompts import Position, load_turing_prompts, shown_observations, turing_messages
from awbench.judging.cost import CostEstimate
from awbench.judging.llm.prompts import protocol_request
from awbench.records import SCHEMA_VERSION, PredictionRecord, Sample
from awbench.run.pipeline import choice_judge, run_samples
from awbench.run.stages import Progress
from awbench.run.store import JudgeId, RunStore, judge_folders, read_info_file

TURING_DIR = "turing"
INFO_FILE = "turing.json"
SECRET_FILE = "positions.secret"
_SECRET = re.compile(r"[0-9a-f]{64}")
_SECRET_BYTES = 128  # the most positions.secret may hold: more than a secret, never a whole stray file
Positions = Literal["secret", "seed"]


class TuringInfo(BaseModel):
    """turing.json: what makes this evaluation what it is."""

    schema_version: int = SCHEMA_VERSION
    id: JudgeId
    settings: JudgeSettings
    described: dict[str, Any] = Field(default_factory=dict)  # prompt set, its sha256, the parser
    seed: int
    # "secret": drawn with positions.secret; "seed": from the seed alone, as before secrets (predictable)
    positions: Positions = "seed"
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


class TuringEvaluation:
    def __init__(self, store: RunStore, judge_id: str) -> None:
        self.store, self.id = store, judge_id
        self.path = own_dir(store.path, store.path / TURING_DIR / judge_id)
        self.info_path = self.path / INFO_FILE
        self.answers = answer_table(self.path)

    def read_info(self) -> TuringInfo:
        missing = f"run {self.store.path} has no Turing test by judge {self.id!r}"
        return read_info_file(self.info_path, TuringInfo, missing)

    def secret(self) -> str | None:
        """What the real observations' positions are drawn from: the evaluation's secret (a new one, kept by
        `ensure`, when it has not asked anything yet); None for an evaluation begun before secrets."""
        secret_path = self.path / SECRET_FILE
        if self.predictable():
            return None
        if secret_path.exists():
            return _read_secret(secret_path)
        if self.info_path.exists():
            raise StoreError(
                f"{secret_path} is missing: the positions of the answers kept cannot be drawn again; remove "
                f"{self.path} to start this Turing test afresh",
                key="turing_secret",
            )
        return secrets.token_hex(32)

    def predictable(self) -> bool:
        """Whether the positions were drawn from the seed alone (an evaluation begun before secrets)."""
        return self.info_path.exists() and self.read_info().positions == "seed"

    def ensure(self, info: TuringInfo, secret: str | None) -> None:
        """The secret kept before anything is asked with it, once; turing.json written when the evaluation is
        first asked for, and again when what it records changes (a later seed, a new reader)."""
        own_dir(self.store.path, self.path, make=True)
        secret_path = self.path / SECRET_FILE
        if secret is not None and not secret_path.exists():
            write_atomic(secret_path, secret + "\n")
        elif secret is not None and _read_secret(secret_path) != secret:
            raise StoreError(f"another command began this Turing test meanwhile ({self.path}): run the command again")
        if self.info_path.exists():
            kept = self.read_info()
            if kept.model_dump(exclude={"created_at"}) == info.model_dump(exclude={"created_at"}):
                return
            info = info.model_copy(update={"created_at": kept.created_at})
        write_atomic(self.info_path, info.model_dump_json(indent=2) + "\n")


def _read_secret(path: Path) -> str:
    secret = read_own(path, _SECRET_BYTES).decode("ascii", errors="replace").strip()  # no link, FIFO or device
    if not _SECRET.fullmatch(secret):
        raise StoreError(f"{path}: not a secret awbench made (64 hexadecimal digits)", key="turing_secret")
    return secret


def turing_evaluations(store: RunStore) -> list[TuringEvaluation]:
    """Every Turing test of the run, by judge id; an id awbench does not make is refused."""
    return [TuringEvaluation(store, i) for i in judge_folders(store.path / TURING_DIR, INFO_FILE)]


def latest_turing_test(store: RunStore) -> TuringInfo | None:
    """The run's most recently begun Turing test: what `awbench turing RUN` without judge options shows again."""
    infos = [evaluation.read_info() for evaluation in turing_evaluations(store)]
    return max(infos, key=lambda info: info.created_at, default=None)


def real_position(seed: int, key: str, generation: int, secret: str | None) -> Position:
    """Where a prediction's real observation is shown: a fair coin per prediction, keyed by the evaluation's
    secret (HMAC-SHA256), the same for the same secret and seed; without a secret (an evaluation begun before
    secrets) a plain hash of the seed, key and generation, as then."""
    message = f"{seed}|{key}|{generation}".encode()
    if secret is None:
        digest = hashlib.sha256(message).digest()
    else:
        digest = hmac.new(bytes.fromhex(secret), message, hashlib.sha256).digest()
    return "A" if digest[0] & 1 == 0 else "B"


def turing_questions(
    judge: ChoiceJudge,
    samples: list[Sample],
    predictions: dict[tuple[str, int], PredictionRecord],
    seed: int,
    both_orders: bool,
    secret: str | None,
) -> list[ChoiceQuestion]:
    """One question per judged prediction (two with `both_orders`), in sample and generation order."""
    by_key: dict[str, list[PredictionRecord]] = {}
    for record in predictions.values():
        by_key.setdefault(record.key, []).append(record)
    questions = []
    for sample in samples:
        for record in sorted(by_key.get(sample.key, []), key=lambda r: r.generation):
            request = protocol_request(judge.prompt_set, sample, record)
            if request is None:
                continue
            positions: tuple[Position, ...] = (
                ("A", "B") if both_orders else (real_position(seed, sample.key, record.generation, secret),)
            )
            shown = list(shown_observations(judge.prompt_set, sample, request.prediction).values())
            for order, real in enumerate(positions):
                questions.append(
                    ChoiceQuestion(
                        key=f"{sample.key}|{record.generation}|{real}",
                        messages=turing_messages(judge.prompt_set, sample, request.prediction, real),
                        responses=shown,
                        place=sample.place(record.generation * len(positions) + order),
                        meta={
                            "sample": sample.key,
                            "generation": record.generation,
                            "domain": sample.domain,
                            "trajectory": sample.record.trajectory_id,
                            "real": real,
                        },
                    )
                )
    return questions


@dataclass
class TuringOutcome:
    """What `turing_test` did: its questions, and their answers (none with `dry_run`, for which `estimate` says what
    asking would still spend)."""

    judge_id: str
    path: Path  # the evaluation's directory
    questions: list[ChoiceQuestion]
    answers: dict[str, ChoiceAnswer]  # by question key
    kept: list[ChoiceAnswer]  # every answer the evaluation keeps, earlier questions' included
    estimate: CostEstimate | None
    predictable: bool  # begun before secrets: the positions follow the seed alone
    max_failure_rate: float  # the run's


async def turing_test(
    store: RunStore,
    settings: JudgeSettings,
    seed: int | None,
    both_orders: bool,
    progress: Progress,
    dry_run: bool = False,
) -> TuringOutcome:
    """Ask the judge of `settings` about the run's predictions (`seed`: where the real observations are shown,
    with the evaluation's secret; None: the run's seed, else 0), under the run's lock; with `dry_run`, only
    estimate, writing nothing."""
    prompts = load_turing_prompts(settings.prompts, settings.template)
    judge = choice_judge(settings, prompts, progress, "Turing judge")
    try:
        with nullcontext() if dry_run else store.locked(progress.warn):
            manifest = store.read_manifest()
            chosen_seed = seed if seed is not None else manifest.config.data.seed or 0
            evaluation = TuringEvaluation(store, judge.id)
            secret = evaluation.secret()
            samples = run_samples(store, manifest=manifest)
            questions = turing_questions(judge, samples, store.predictions.load(), chosen_seed, both_orders, secret)
            found = judge.estimate(questions, evaluation.answers) if dry_run else None
            answers = {} if dry_run else await ask_turing(evaluation, judge, questions, chosen_seed, secret, progress)
    finally:
        await judge.aclose()
    return TuringOutcome(
        judge_id=judge.id,
        path=evaluation.path,
        questions=questions,
        answers=answers,
        kept=[] if dry_run else read_answers(evaluation.path),
        estimate=found,
        predictable=evaluation.predictable(),
        max_failure_rate=manifest.config.scoring.max_failure_rate,
    )


async def ask_turing(
    evaluation: TuringEvaluation,
    judge: ChoiceJudge,
    questions: list[ChoiceQuestion],
    seed: int,
    secret: str | None,
    notes: Progress,
) -> dict[str, ChoiceAnswer]:
    """Ask what is not answered yet, and read again what an earlier reader read (the run locked by the caller);
    the evaluation's answers, by question key. `secret`: the one the questions' positions were drawn with."""
    pending = judge.pending(questions, evaluation.answers.load())
    if pending:
        await judge.check()  # before anything is written or spent
    if pending or evaluation.info_path.exists():  # kept up to date: the reader may be new
        positions: Positions = "seed" if secret is None else "secret"
        described = judge.describe()
        info = TuringInfo(id=judge.id, settings=judge.settings, described=described, seed=seed, positions=positions)
        evaluation.ensure(info, secret)
    if not pending:  # nothing to ask: no progress to show, the answers only read (again)
        return await judge.ask(questions, evaluation.answers, notes)
    with notes.stage(f"turing {judge.id}", len(pending)) as bar:
        return await judge.ask(questions, evaluation.answers, notes, bar.advance)


def read_answers(path: Path) -> list[ChoiceAnswer]:
    """The answers kept in a Turing evaluation's directory (the last row of each question)."""
    return list(answer_table(path).load().values())
