"""`awbench run | infer | judge | score`: thin wrappers that build a RunConfig and call the pipeline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from awbench.backends import infer_backend_name
from awbench.cli.common import console, err_console, fail, file_path, refuse_run_outputs
from awbench.cli.options import DATA, JUDGE, MODEL, OPTION_NAMES, OUTPUT, SCORING, Options, command, with_default
from awbench.cli.progress import RichProgress
from awbench.cli.summary import ScoresFormat, print_estimate, print_summary
from awbench.config import (
    SHARED_FIELDS,
    DataSettings,
    JudgeSettings,
    ModelSettings,
    RunConfig,
    ScoringSettings,
    default_run_name,
    judge_settings,
    unused_judge_fields,
    unused_model_fields,
)
from awbench.judging import BudgetExhausted
from awbench.run import pipeline
from awbench.run.evaluations import resolve_judge
from awbench.run.failures import Setup
from awbench.run.reparse import reparse_judgments
from awbench.run.rewards import reward_evaluations, write_rewards
from awbench.run.store import resolve_run

RunArgument = Annotated[str, typer.Argument(help="Run name under --output, or a run directory.")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an existing run of that name.")]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the calls, tokens and cost still to spend, and spend nothing.")
]


def cli_judge_settings(base: JudgeSettings | None, options: Options) -> JudgeSettings:
    """The judge settings a command asks for: the judge options given over `base` (the run's, or the defaults);
    options that judge would not use are refused (`config.unused_judge_fields`)."""
    given = options.settings(JUDGE, given_only=True)
    settings = judge_settings(base, given, names=OPTION_NAMES)
    _refuse_unused_by_judge(settings, given, candidate=None)
    return settings


def _refuse_unused_by_judge(settings: JudgeSettings, given: Mapping[str, Any], candidate: str | None) -> None:
    """The judge's side of the one rule; an option of both parties is spared when the `candidate` backend uses it."""
    for unused, why in unused_judge_fields(settings, given):
        fields = [f for f in unused if not (f in SHARED_FIELDS and candidate and _model_uses(candidate, f))]
        if fields:
            inner = [f"engine.{name}" for name in given.get("engine", {})] if "engine" in fields else []
            names = inner + [f for f in fields if f != "engine"]
            _refuse([OPTION_NAMES[f"JudgeSettings.{name}"] for name in names], why)


def _scoring_settings(base: ScoringSettings, options: Options) -> ScoringSettings:
    return ScoringSettings.model_validate({**base.model_dump(), **options.settings(SCORING, given_only=True)})


def _model_uses(backend: str, field: str) -> bool:
    return not unused_model_fields(backend, [field])


def _judge_uses(judge: JudgeSettings, field: str) -> bool:
    return not unused_judge_fields(judge, [field])


def _refuse_unused(backend: str, given: Mapping[str, Any], judge: JudgeSettings | None) -> None:
    """Options the backend would ignore are refused, named, with why (`config.unused_model_fields`), but for those
    of both parties that the `judge` uses."""
    for unused, why in unused_model_fields(backend, given):
        unused = [f for f in unused if not (f in SHARED_FIELDS and judge and _judge_uses(judge, f))]
        if unused:
            fields = [f"engine.{inner}" for inner in given["engine"]] if "engine" in unused else []
            fields += [name for name in unused if name != "engine"]
            _refuse([OPTION_NAMES[f"ModelSettings.{name}"] for name in fields], f"the {backend} backend ({why})")


def _used_shared(settings: Mapping[str, Any], uses: Callable[[str], bool]) -> dict[str, Any]:
    """A party's settings without the options of both parties that it does not use: run.json records a setting
    only where it was applied."""
    return {name: value for name, value in settings.items() if name not in SHARED_FIELDS or uses(name)}


@contextmanager
def _summary_when_capped(run_dir: Path, config: Callable[[], RunConfig]) -> Iterator[None]:
    """--max-cost stopped the judging: the scores so far (written before the error) are printed as at a
    command's end, pending generations as such, then the error says what stopped it. `config`: the run's, read
    only then."""
    try:
        yield
    except BudgetExhausted as error:
        if error.scores is not None:
            made = config()
            print_summary(error.scores, error.exit_code, made.scoring.max_failure_rate, run_dir, Setup.of(made))
        raise


def _refuse(options: list[str], why: str) -> None:
    """The one message for options a party would not use: which, to what, why."""
    verb, pronoun = ("does", "it") if len(options) == 1 else ("do", "them")
    fail(f"{', '.join(options)} {verb} not apply to {why}: leave {pronoun} out", key="bad_option")


def _config(options: Options, judged: bool) -> RunConfig:
    """One RunConfig from a command's options."""
    data = DataSettings(**options.settings(DATA))
    chosen = options.settings(MODEL)
    chosen["backend"] = chosen["backend"] or infer_backend_name(chosen["model"], chosen["base_urls"])
    judge_given = options.settings(JUDGE, given_only=True) if judged else {}
    judge = judge_settings(None, judge_given, names=OPTION_NAMES) if judged else None
    _refuse_unused(chosen["backend"], options.settings(MODEL, given_only=True), judge)
    if judge:
        _refuse_unused_by_judge(judge, judge_given, candidate=chosen["backend"])
        judge = judge_settings(None, _used_shared(judge_given, partial(_judge_uses, judge)), names=OPTION_NAMES)
    chosen = _used_shared(chosen, partial(_model_uses, chosen["backend"]))
    model = ModelSettings(**chosen, seed=data.seed)  # --seed: the sample's and the sampling's
    output = options.settings(OUTPUT)
    return RunConfig(
        run_name=output["run_name"] or default_run_name(model.model, judge, output["output"]),
        output=output["output"],
        data=data,
        model=model,
        judge=judge,
        scoring=_scoring_settings(ScoringSettings(), options) if judged else ScoringSettings(),
        retry_failed=output["retry_failed"],
    )


@command(DATA, MODEL, OUTPUT, JUDGE, SCORING, config_file=True)
def run(overwrite: OverwriteOpt = False, dry_run: DryRunOpt = False, *, options: Options) -> None:
    """Infer, judge and score in one resumable command; judging starts as soon as each prediction is saved.

    Example: awbench run --model baseline:last-observation --judge rules --data sample
    """
    config = _config(options, judged=True)
    if dry_run:
        print_estimate(pipeline.estimate(config))
        return
    with _summary_when_capped(config.run_dir, lambda: config):
        outcome = asyncio.run(pipeline.run(config, overwrite=overwrite, progress=RichProgress()))
    print_summary(outcome.scores, outcome.exit_code, config.scoring.max_failure_rate, config.run_dir, Setup.of(config))
    raise typer.Exit(outcome.exit_code)


@command(DATA, MODEL, OUTPUT, config_file=True)
def infer(overwrite: OverwriteOpt = False, *, options: Options) -> None:
    """Generate predictions only (judge them later with `awbench judge RUN`).

    Example: awbench infer --model Qwen/Qwen-AgentWorld-35B-A3B --engine-arg tensor_parallel_size=4 --data sample
    """
    config = _config(options, judged=False)
    summary = asyncio.run(pipeline.infer(config, overwrite, RichProgress()))
    console.print(
        f"infer: {summary.computed} generated ({summary.failed} failed), {summary.reused} reused; run saved in {config.run_dir}"
    )


@command(JUDGE.defaulting_to("the run's primary judge's"), OUTPUT.only("output", "retry_failed"), config_file=True)
def judge(
    run: RunArgument,
    reparse: Annotated[
        bool, typer.Option("--reparse", help="Re-parse the saved raw verdicts with the current parser; no API call.")
    ] = False,
    judge_id: Annotated[
        str | None, typer.Option("--judge-id", help="With --reparse: which evaluation (default: the primary).")
    ] = None,
    dry_run: DryRunOpt = False,
    *,
    options: Options,
) -> None:
    """Add or resume one judge's evaluation of a run's predictions, beside the others; nothing else of the run
    changes.

    By default (no judge option given) it resumes the run's primary judge, the one the run was made with, and
    judges only what is missing, failed or changed. Each judge option given changes that one setting of the
    primary judge's; a judge that differs so is another evaluation, kept beside the others. On a rule-judged
    run, LLM judge options (--judge-model, --judge-prompts...) add an LLM judge at `awbench run`'s defaults. A
    run made by `awbench infer` has no primary judge yet: the defaults are those of `awbench run`.

    Example: awbench judge my-run --judge-model gpt-5.2-2025-12-11 --max-cost 20
    """
    store = resolve_run(run, options.values["output"])
    retry_failed = options.values["retry_failed"]
    if reparse:
        changed = reparse_judgments(store, judge_id)
        console.print(f"reparse: {changed} verdicts changed; no API call was made")
        return

    def settings(base: JudgeSettings | None) -> JudgeSettings:
        return cli_judge_settings(base, options)

    if dry_run:
        print_estimate(pipeline.estimate_judge(store, settings, retry_failed))
        return

    def judged_config() -> RunConfig:
        manifest = store.read_manifest()
        return manifest.config.model_copy(update={"judge": pipeline.chosen_judge(manifest, settings)})

    with _summary_when_capped(store.path, judged_config):
        outcome = asyncio.run(pipeline.judge(store, settings, RichProgress(), retry_failed))
    for summary in outcome.stages:
        console.print(f"{summary.stage}: {summary.computed} judged ({summary.failed} failed), {summary.reused} reused")
    print_summary(outcome.judged, outcome.exit_code, outcome.max_failure_rate, store.path, Setup.of(outcome.config))
    raise typer.Exit(outcome.exit_code)


@command(SCORING.defaulting_to("the run's"), OUTPUT.only("output"))
def score(
    run: RunArgument,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge", help=with_default("Which evaluation to print: a judge id, or llm/rules.", "the primary")
        ),
    ] = None,
    reward: Annotated[
        Path | None,
        typer.Option(
            "--reward",
            help="Also write per-sample RL rewards (0.9 rubric + 0.1 rule) to this JSONL file.",
            parser=file_path("--reward"),
        ),
    ] = None,
    fmt: Annotated[
        ScoresFormat,
        typer.Option(
            "--format",
            help="table; json: the evaluation's scores.json; reference: what the reference eval.py prints for it "
            "(notes go to stderr).",
        ),
    ] = "table",
    *,
    options: Options,
) -> None:
    """Compute scores.json of every evaluation of a run from its predictions and judgments; print one.

    Example: awbench score my-run --failure-policy exclude
    """
    refuse_run_outputs({"--reward": reward})
    store = resolve_run(run, options.values["output"])
    with store.locked():
        if reward is not None:
            reward_evaluations(store)  # refused before anything changes
        manifest = store.read_manifest()
        scoring = _scoring_settings(manifest.config.scoring, options)
        if scoring != manifest.config.scoring:
            store.write_manifest(
                manifest.model_copy(update={"config": manifest.config.model_copy(update={"scoring": scoring})})
            )
            (console if fmt == "table" else err_console).print(
                scoring_change_note(store.path.name, manifest.config.scoring, scoring),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        chosen = resolve_judge(store, judge)
        samples = pipeline.run_samples(store)
        scores = pipeline.score(store, samples)[chosen.id]
        if reward is not None:
            count = write_rewards(store, samples, reward)
            (console if fmt == "table" else err_console).print(
                f"wrote {count} rewards to {reward}", highlight=False, markup=False, soft_wrap=True
            )
    code = pipeline.exit_code(scores, scoring.max_failure_rate)
    print_summary(scores, code, scoring.max_failure_rate, store.path, Setup.of(manifest.config), fmt)
    raise typer.Exit(code)


def scoring_change_note(run: str, before: ScoringSettings, after: ScoringSettings) -> str:
    """Scoring options given to `score` are the run's from now on (run.json): later `score`, `show`, `leaderboard`
    and `report` use them. Said, with how to go back."""
    changed = [field for field in type(after).model_fields if getattr(before, field) != getattr(after, field)]
    what = ", ".join(
        f"{OPTION_NAMES[f'ScoringSettings.{field}']} {getattr(before, field)} -> {getattr(after, field)}"
        for field in changed
    )
    back = " ".join(f"{OPTION_NAMES[f'ScoringSettings.{field}']} {getattr(before, field)}" for field in changed)
    return f"{run}: {what}, saved in its run.json for every later command (back with `awbench score {run} {back}`)"


def register(app: typer.Typer) -> None:
    for function in (run, infer, judge, score):
        app.command()(function)
