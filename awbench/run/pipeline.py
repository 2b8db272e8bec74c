"""The run as a Python API (the CLI wraps it): `run` (infer, judge and score in one pipelined pass), `infer`,
`judge` (add or resume one judge's evaluation of an existing run), `score` and `estimate`.

Every call reads what the store already holds and computes only what is missing, so running the same command
again resumes. One process at a time writes to a run (its lock). A run that fails before its first record
leaves nothing behind; a judge that fails before its first verdict leaves the run's files as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from awbench.backends import Backend, check_backend, create_backend, describe_backend
from awbench.config import DataSettings, JudgeSettings, RunConfig, differing_settings, judge_settings
from awbench.data.dataset import LoadedData, load_samples
from awbench.errors import AwbenchError
from awbench.judging import BudgetExhausted, Judge, check_judges, create_judges
from awbench.judging.cost import CostEstimate
from awbench.records import Sample
from awbench.run.evaluations import score_run
from awbench.run.scoring import STOPPED_BY_CAP, ScoresFile
from awbench.run.stages import (
    JudgeStage,
    NoBar,
    Plan,
    Progress,
    StageSummary,
    all_or_none,
    execute,
    plan,
    reusable,
)
from awbench.run.store import JudgeInfo, RunManifest, RunStore, environment_facts
from awbench.transport.endpoints import Endpoints, MissingAPIKey

if TYPE_CHECKING:
    from awbench.judging.choice.judge import ChoiceJudge
    from awbench.judging.llm.prompts import PromptSet

MAX_WARNINGS_SHOWN = 5


class PipelineError(AwbenchError):
    """A run cannot go on for a reason the user can act on."""

    key = "cannot_run"


class SilentProgress:
    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[NoBar]:
        yield NoBar()

    def note(self, text: str) -> None:
        return None

    def warn(self, text: str) -> None:
        return None


class RunOutcome(BaseModel):
    stages: list[StageSummary]
    scores: ScoresFile  # the primary judge's; `scores.failures` says why samples failed or went unscored
    exit_code: int


class JudgeOutcome(BaseModel):
    stages: list[StageSummary]  # one per judge of the configuration, the first judge's first
    scores: dict[str, ScoresFile]  # every evaluation's, by judge id
    judged: ScoresFile  # the first judge's
    exit_code: int
    max_failure_rate: float  # the run's, which `exit_code` holds the judged scores to
    config: RunConfig  # the run's settings, with this command's judge


# A judge's settings; changes to the run's primary judge's settings; or a function of those that makes them.
JudgeChoice = JudgeSettings | Mapping[str, Any] | Callable[[JudgeSettings | None], JudgeSettings] | None


async def run(config: RunConfig, overwrite: bool = False, progress: Progress = SilentProgress()) -> RunOutcome:
    """Infer, judge and score in one resumable, pipelined call."""
    if config.judge is None:
        raise PipelineError("a run needs judge settings")
    data = _load(config, progress)
    endpoints = Endpoints(progress.note)  # says when a rate limit holds the run back
    judges = _judges(config.judge, endpoints)
    with opened_run(config, data, overwrite, progress, judges) as store:
        with _scored_when_capped(store, data.samples, judges):
            stages = await _execute(store, data.samples, config, judges, endpoints, progress, infer=True)
        scores = score_run(store, data.samples, reuse_fresh=True)
        finish(store)
    primary = scores[store.read_manifest().primary_judge or judges[0].id]
    return RunOutcome(stages=stages, scores=primary, exit_code=exit_code(primary, config.scoring.max_failure_rate))


async def infer(config: RunConfig, overwrite: bool = False, progress: Progress = SilentProgress()) -> StageSummary:
    """Generate predictions only; judge them later with `judge`."""
    data = _load(config, progress)
    endpoints = Endpoints(progress.note)  # says when a rate limit holds the run back
    with opened_run(config.model_copy(update={"judge": None}), data, overwrite, progress, []) as store:
        summaries = await _execute(store, data.samples, config, [], endpoints, progress, infer=True)
    return summaries[0]


async def judge(
    store: RunStore,
    settings: JudgeChoice = None,
    progress: Progress = SilentProgress(),
    retry_failed: bool = False,
) -> JudgeOutcome:
    """Add or resume one judge configuration's evaluation of a run's predictions, and score every evaluation;
    the rest of the run is left as it is. `settings`: the judge's; or changes to the run's primary judge's
    settings (None: none), merged as `awbench judge RUN --judge-...` merges them (`config.judge_settings`); or a
    function of the primary judge's settings that makes them (the CLI's, naming its options in errors)."""
    endpoints = Endpoints(progress.note)  # says when a rate limit holds the run back
    with store.locked(progress.warn):
        manifest = store.read_manifest()
        chosen = chosen_judge(manifest, settings)
        judges = _judges(chosen, endpoints)
        samples = run_samples(store, manifest=manifest)
        config = manifest.config.model_copy(update={"judge": chosen, "retry_failed": retry_failed})
        with _scored_when_capped(store, samples, judges):
            stages = await _execute(store, samples, config, judges, endpoints, progress, infer=False)
        scores = score(store, samples)
    judged = scores[judges[0].id]
    rate = manifest.config.scoring.max_failure_rate
    return JudgeOutcome(
        stages=stages[1:],
        scores=scores,
        judged=judged,
        exit_code=exit_code(judged, rate),
        max_failure_rate=rate,
        config=config,
    )


@contextmanager
def _scored_when_capped(store: RunStore, samples: list[Sample], judges: list[Judge]) -> Iterator[None]:
    """Judging stopped by --max-cost: each evaluation says so in its judge.json (its pending generations are
    "not judged yet (stopped by --max-cost)", never failures), and the run is scored before the error is raised,
    so that `ls` and the leaderboard see its state at once. Judging again clears it."""
    evaluations = [store.evaluation(j.id) for j in judges]
    for evaluation in evaluations:
        if evaluation.exists():
            evaluation.note_stopped(None)
    try:
        yield
    except BudgetExhausted as error:
        for evaluation in evaluations:
            if evaluation.exists():  # made by this command's first verdict, or before
                evaluation.note_stopped(STOPPED_BY_CAP)
        error.scores = score_run(store, samples).get(judges[0].id)  # None: stopped before its first verdict
        raise


def chosen_judge(manifest: RunManifest, settings: JudgeChoice) -> JudgeSettings:
    """The judge settings `settings` asks for, on a run whose run.json is `manifest` (see `judge`)."""
    if isinstance(settings, JudgeSettings):
        return settings
    if callable(settings):
        return settings(manifest.config.judge)
    return judge_settings(manifest.config.judge, settings or {})


def estimate_judge(store: RunStore, settings: JudgeChoice = None, retry_failed: bool = False) -> DryRunEstimate:
    """`judge --dry-run`: what judging the run's existing predictions would still spend (see `estimate`)."""
    manifest = store.read_manifest()
    config = manifest.config.model_copy(
        update={"judge": chosen_judge(manifest, settings), "retry_failed": retry_failed}
    )
    return estimate(config, existing_only=True)


def score(store: RunStore, samples: list[Sample]) -> dict[str, ScoresFile]:
    """Compute and write every evaluation's scores.json (the primary's also as the run's); judge id -> scores."""
    return score_run(store, samples)


def finish(store: RunStore) -> None:
    manifest = store.read_manifest()
    manifest.finished_at = datetime.now(timezone.utc)
    store.write_manifest(manifest)


def exit_code(scores: ScoresFile, max_failure_rate: float) -> int:
    """The exit code of `run`, `judge` and `score`: 0 when the evaluation is good; 1 when failures exceed the
    tolerated rate, nothing at all was scored (by the strict score, nor by the reference's reading where there is
    one: eval.py prints a domain whose valid rows all total 0), or some generation is not judged yet (incomplete)."""
    total = sum(d.n for d in scores.domains.values()) * scores.generations
    failures = sum(d.failed + d.unscored for d in scores.domains.values())
    scored = [*scores.domains.values(), *scores.ranked().domains.values()]
    measured = any(d.score is not None for d in scored) and scores.completeness.complete
    return measurement_exit_code(measured, total, failures, max_failure_rate)


def measurement_exit_code(measured: bool, total: int, failures: int, max_failure_rate: float) -> int:
    """The one exit rule, of `run`, `judge`, `score`, `turing` and the pairwise judge: 1 when nothing (or not
    everything asked for) was measured, or when failures (of `total` items) exceed the tolerated rate; else 0."""
    return 1 if not measured or total == 0 or failures / total > max_failure_rate else 0


# --- Opening a run -----------------------------------------------------------------------------------------


def _load(config: RunConfig, progress: Progress) -> LoadedData:
    """The data, after the checks that need nothing read (an unknown backend or baseline, a missing key)."""
    with _whose_key("candidate"):
        check_backend(config.model)
    data = load_samples(config.data)
    if data.skipped:
        progress.warn(f"skipped {data.skipped} invalid records (--skip-invalid); `awbench data validate` lists them")
    warnings = [p for p in data.problems if p.severity == "warning"]
    for problem in warnings[:MAX_WARNINGS_SHOWN]:
        progress.warn(f"warning: {problem}")
    if len(warnings) > MAX_WARNINGS_SHOWN:
        progress.warn(f"... and {len(warnings) - MAX_WARNINGS_SHOWN} more warnings (awbench data validate lists them)")
    if not data.samples:
        raise PipelineError(f"no samples selected from {data.source}: check --domains, --ids and --limit")
    return data


def _judges(settings: JudgeSettings, endpoints: Endpoints) -> list[Judge]:
    """Made before anything is written: bad prompts, an unknown price for --max-cost or a missing key stop
    the run with nothing spent."""
    with _whose_key("judge"):
        judges = create_judges(settings, endpoints)
        check_judges(settings)
    return judges


def choice_judge(settings: JudgeSettings, prompt_set: PromptSet, progress: Progress, role: str) -> ChoiceJudge:
    """The two-choice judge of the Turing test or of a pairwise comparison (`role`: "Turing judge", "pairwise
    judge"); settings it cannot use (a rubric verdict's schema, several samples, a cap without a price) are the
    user's to change."""
    from awbench.judging.choice.judge import ChoiceJudge

    try:
        return ChoiceJudge(settings, prompt_set, Endpoints(progress.note), role)
    except ValueError as error:
        raise PipelineError(str(error)) from None


@contextmanager
def _whose_key(party: str) -> Iterator[None]:
    """A missing key names whose it is; only the judge's can be done without (the rule judge needs none)."""
    try:
        yield
    except MissingAPIKey as error:
        hint = ". For a free offline score without any API, use --judge rules" if party == "judge" else ""
        raise MissingAPIKey(f"the {party}: {error}{hint}") from None


@contextmanager
def opened_run(
    config: RunConfig, data: LoadedData, overwrite: bool, progress: Progress, judges: list[Judge]
) -> Iterator[RunStore]:
    """The run directory, locked, checked against the settings it was made with. Made now, it is removed
    again if nothing was recorded in it before an error."""
    # Absolute: a world model in this process may change the working directory while the run writes its files.
    store = RunStore(config.run_dir.absolute())
    store.refuse_foreign()  # a directory that is not a run is never emptied
    made_parents = [p for p in store.path.parents if not p.exists()]  # --output made for this run, nearest first
    with store.locked(progress.warn):
        made_now = overwrite or not store.exists()  # under the lock: another process may have made it meanwhile
        if made_now:
            _clear(store)
            manifest = RunManifest(
                config=config,
                model_described=describe_backend(config.model),
                data_source=data.source,
                data_fingerprint=data.fingerprint,
                samples=len(data.samples),
                primary_judge=judges[0].id if judges else None,
                primary_described=judges[0].describe() if judges else {},
                made_by="run" if config.judge else "infer",
                **environment_facts(),
            )
            store.write_manifest(manifest)
        else:
            _resume(store, config, data)
        try:
            yield store
        except BaseException:
            if made_now and not store.predictions.load():  # the file may exist, opened for a first record
                _clear(store, everything=True)
                for parent in made_parents:
                    try:
                        parent.rmdir()  # only while empty: another run may have been made there meanwhile
                    except OSError:
                        break
            raise


def _clear(store: RunStore, everything: bool = False) -> None:
    """Empty the run directory (its lock aside, which this process holds), or remove it."""
    import shutil

    for child in store.path.iterdir():
        if child.name == ".lock":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()  # a link itself, never what it leads to
    if everything:
        (store.path / ".lock").unlink(missing_ok=True)
        store.path.rmdir()


def _resume(store: RunStore, config: RunConfig, data: LoadedData) -> None:
    manifest = store.read_manifest()
    old = manifest.config
    conflicts = [f"data.{d}" for d in differing_settings(old.data, config.data)]
    conflicts += [f"model.{d}" for d in differing_settings(old.model, config.model)]
    described = describe_backend(config.model)
    if described != manifest.model_described:  # the same spec, another version of the model
        conflicts.append(f"model described: {manifest.model_described} -> {described}")
    if manifest.data_fingerprint != data.fingerprint:
        conflicts.append(f"data fingerprint: {manifest.data_fingerprint[:12]} -> {data.fingerprint[:12]}")
    if conflicts:
        raise PipelineError(
            f"run {store.path} was made with other settings:\n  "
            + "\n  ".join(conflicts)
            + "\nuse another --run-name, or --overwrite to replace the run",
            key="settings_differ",
        )
    # Operational settings (endpoints, concurrency) are this command's; what the run computes is unchanged.
    updated = old.model_copy(
        update={
            "model": config.model,
            "data": config.data,
            "scoring": config.scoring,
            "output": config.output,
            "retry_failed": config.retry_failed,
        }
    )
    if updated != old:
        store.write_manifest(manifest.model_copy(update={"config": updated}))


def run_samples(
    store: RunStore, load: Callable[[DataSettings], LoadedData] = load_samples, manifest: RunManifest | None = None
) -> list[Sample]:
    """The samples of an existing run, reloaded from its data source and checked against its fingerprint
    (`manifest`: run.json when already read)."""
    manifest = manifest or store.read_manifest()
    data = load(manifest.config.data)
    if data.fingerprint != manifest.data_fingerprint:
        raise PipelineError(
            f"the data at {data.source} is not what run {store.name} was made with "
            f"(fingerprint {manifest.data_fingerprint[:12]}, now {data.fingerprint[:12]})",
            key="data_changed",
        )
    return data.samples


# --- Executing ---------------------------------------------------------------------------------------------


async def _execute(
    store: RunStore,
    samples: list[Sample],
    config: RunConfig,
    judges: list[Judge],
    endpoints: Endpoints,
    progress: Progress,
    infer: bool,
) -> list[StageSummary]:
    """[inference summary, one summary per judge]."""
    assert config.judge is not None or not judges
    stages = [_judge_stage(store, j, config.judge, progress) for j in judges]  # type: ignore[arg-type]
    work = plan(store, samples, config.model if infer else None, stages, config.retry_failed)
    _note_reuse(work, store, progress, infer)
    backend = create_backend(config.model, endpoints) if work.generations else None
    try:
        if work.generations or any(s.feed.fed for s in stages):
            await _check_endpoints(backend, [s.judge for s in stages])
        return await execute(store, work, backend, config.model.model, progress, config.retry_failed)
    finally:
        if backend is not None:
            await _close_backend(backend, progress)
        for j in judges:
            await j.aclose()
        for line in endpoints.retry_report():  # said even when the command stops: what the servers went through
            progress.note(f"retried: {line}")


async def _close_backend(backend: Backend, progress: Progress) -> None:
    """A model that fails to close (a Python model's own `close()`) loses nothing: every prediction is on disk
    already, and the run is scored; the failure is a warning."""
    try:
        await backend.aclose()
    except Exception as error:
        progress.warn(f"the world model was not closed: {error}; its predictions are kept")


def _judge_stage(store: RunStore, judge_: Judge, settings: JudgeSettings, progress: Progress) -> JudgeStage:
    evaluation = store.evaluation(judge_.id)
    info = JudgeInfo(
        id=judge_.id,
        kind=judge_.kind,
        settings=settings.model_copy(update={"kind": judge_.kind}),
        described=judge_.describe(),
    )
    existing = evaluation.judgments.load()
    judge_.bind(evaluation.path, progress, existing.values())  # --max-cost covers the whole spend, resumes included
    return JudgeStage(
        judge=judge_,
        evaluation=evaluation,
        info=info,
        existing=existing,
        on_first_record=lambda: _adopt_primary(store, judge_, settings),
    )


def _adopt_primary(store: RunStore, judge_: Judge, settings: JudgeSettings) -> None:
    """A run made by `infer` gets its first judge as its primary, when that judge records its first verdict."""
    manifest = store.read_manifest()
    if manifest.primary_judge is None:
        config = manifest.config.model_copy(update={"judge": settings})
        store.write_manifest(
            manifest.model_copy(
                update={"primary_judge": judge_.id, "primary_described": judge_.describe(), "config": config}
            )
        )


def _note_reuse(work: Plan, store: RunStore, progress: Progress, infer: bool) -> None:
    if infer and not work.generations and work.reused_predictions:
        progress.note(f"infer: nothing to do, all {work.reused_predictions} predictions are already in {store.path}")
    for stage in work.judges:
        if not stage.feed.fed and not work.generations:
            progress.note(
                f"judge {stage.judge.id}: nothing to do, {stage.summary.reused} verdicts already in {store.path}"
            )


async def _check_endpoints(backend: Backend | None, judges: list[Judge]) -> None:
    """Every endpoint that will be used answers, before the first sample: a dead one costs nothing. The checks
    run at once (each may wait for a busy server); the first that fails stops the others."""
    parties: list[Backend | Judge] = [*([backend] if backend else []), *judges]
    await all_or_none([party.check() for party in parties])


class DryRunEstimate(BaseModel):
    samples: int
    generations: int  # candidate requests still to make
    judge: CostEstimate  # what the LLM judge would still take (its calls, tokens, cost, prompt cache, wall time)


def estimate(config: RunConfig, existing_only: bool = False) -> DryRunEstimate:
    """What a run would still spend, without spending anything or writing any file. Predictions not made
    yet are assumed as long as the real observation; `existing_only` (judging an existing run) counts only
    the predictions it has."""
    from awbench.records import PredictionRecord
    from awbench.run.stages import needs_generation

    samples = load_samples(config.data).samples
    store = RunStore(config.run_dir)
    predictions = store.predictions.load() if store.exists() else {}
    k = config.model.generations
    wanted = [(s, g) for s in samples for g in range(k)]
    todo = (
        0
        if existing_only
        else sum(needs_generation(predictions.get((s.key, g)), config.retry_failed) for s, g in wanted)
    )
    result = DryRunEstimate(
        samples=len(samples),
        generations=todo,
        judge=CostEstimate(calls=0, prompt_tokens=0, completion_tokens=0, cost_usd=0.0),
    )
    if config.judge is None or not config.judge.uses_llm:
        return result
    (llm,) = create_judges(config.judge.model_copy(update={"kind": "llm"}))
    evaluation = store.evaluation(llm.id)
    existing = evaluation.judgments.load() if store.exists() else {}
    llm.bind(evaluation.path, SilentProgress(), existing.values())  # nothing is written: what it keeps is read
    requests = []
    for sample, g in wanted:
        record = predictions.get((sample.key, g))
        if record is None or needs_generation(record, config.retry_failed):
            if existing_only:
                continue
            record = PredictionRecord(
                key=sample.key,
                generation=g,
                domain=sample.domain,
                sample_hash=sample.hash,
                status="ok",
                prediction=sample.record.ground_truth,
            )
        request = llm.request(sample, record)
        if request is None:
            continue
        if not reusable(existing.get((sample.key, g)), llm.cache_key(request), config.retry_failed):
            requests.append(request)
    if not requests:
        return result
    return result.model_copy(update={"judge": llm.estimate(requests)})
