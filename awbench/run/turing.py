"""The double-blind Turing test of a run's predictions (`awbench turing RUN`), kept as its own evaluation,
never mixed with the rubric's:

    turing/<judge id>/turing.json    the judge's settings, its prompts, the seed of the positions
    turing/<judge id>/answers.jsonl  one row per question and attempt (`awbench.judging.choice`), keyed
                                     `{sample key}|{generation}|{A or B: where the real observation is shown}`
    turing/<judge id>/batches.json   with --judge-batch: the batches, for resuming

Each judged prediction (what a rubric judge of the same protocol is asked: under awbench's, a failed generation
has nothing to show and is not asked; under the reference protocol, every generation with text) is one question: its real
observation shown as Response A or B, drawn per prediction from the seed (`real_position`), the judge not told;
`both_orders` asks both ways. Re-running resumes: only what the table does not hold answered is asked.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from awbench.config import JudgeSettings
from awbench.files import own_dir, write_atomic
from awbench.judging import Notes
from awbench.judging.choice import ChoiceAnswer, ChoiceJudge, ChoiceQuestion, answer_table
from awbench.judging.cost import CostEstimate
from awbench.judging.prompts import protocol_request
from awbench.judging.turing import Position, turing_messages
from awbench.records import SCHEMA_VERSION, PredictionRecord, Sample
from awbench.run.store import JudgeId, RunStore, judge_folders, read_info_file

TURING_DIR = "turing"
INFO_FILE = "turing.json"


class TuringInfo(BaseModel):
    """turing.json: what makes this evaluation what it is."""

    schema_version: int = SCHEMA_VERSION
    id: JudgeId
    settings: JudgeSettings
    described: dict[str, Any] = Field(default_factory=dict)  # prompt set, its sha256, the parser
    seed: int
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

    def ensure(self, info: TuringInfo) -> None:
        """turing.json written once, when the evaluation is first asked for (a later seed is recorded too)."""
        if not self.info_path.exists() or self.read_info().seed != info.seed:
            own_dir(self.store.path, self.path, make=True)
            write_atomic(self.info_path, info.model_dump_json(indent=2) + "\n")


def turing_evaluations(store: RunStore) -> list[TuringEvaluation]:
    """Every Turing test of the run, by judge id; an id awbench does not make is refused."""
    return [TuringEvaluation(store, i) for i in judge_folders(store.path / TURING_DIR, INFO_FILE)]


def real_position(seed: int, key: str, generation: int) -> Position:
    """Where a prediction's real observation is shown: a fair coin per prediction, the same for the same seed."""
    digest = hashlib.sha256(f"{seed}|{key}|{generation}".encode()).digest()
    return "A" if digest[0] & 1 == 0 else "B"


def turing_questions(
    judge: ChoiceJudge,
    samples: list[Sample],
    predictions: dict[tuple[str, int], PredictionRecord],
    seed: int,
    both_orders: bool,
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
                ("A", "B") if both_orders else (real_position(seed, sample.key, record.generation),)
            )
            for real in positions:
                questions.append(
                    ChoiceQuestion(
                        key=f"{sample.key}|{record.generation}|{real}",
                        messages=turing_messages(judge.prompt_set, sample, request.prediction, real),
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


def estimate_turing(store: RunStore, judge: ChoiceJudge, questions: list[ChoiceQuestion]) -> CostEstimate:
    return judge.estimate(questions, TuringEvaluation(store, judge.id).answers)


async def run_turing(
    store: RunStore, judge: ChoiceJudge, questions: list[ChoiceQuestion], seed: int, notes: Notes
) -> dict[str, ChoiceAnswer]:
    """Ask what is not answered yet (under the run's lock); the evaluation's answers, by question key."""
    evaluation = TuringEvaluation(store, judge.id)
    with store.locked(notes.warn):
        if judge.pending(questions, evaluation.answers.load()):
            await judge.check()  # before anything is written or spent
            evaluation.ensure(TuringInfo(id=judge.id, settings=judge.settings, described=judge.describe(), seed=seed))
        return await judge.ask(questions, evaluation.answers, notes)


def read_answers(path: Path) -> list[ChoiceAnswer]:
    """The answers kept in a Turing evaluation's directory (the last row of each question)."""
    return list(answer_table(path).load().values())
