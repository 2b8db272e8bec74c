"""`awbench compare A B --pairwise` and `awbench leaderboard --pairwise`: a judge asked which of two runs'
predictions is closer to the real observation (`awbench.run.pairwise`), then win rates and a Bradley–Terry ranking
(`awbench.analysis.pairwise`). Options that only the pairwise judge uses are refused without --pairwise."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from awbench.cli.common import console, err_console, fail
from awbench.cli.options import JUDGE, OPTION_NAMES, Options
from awbench.cli.progress import RichProgress
from awbench.cli.run_commands import cli_judge_settings
from awbench.cli.summary import judge_cost
from awbench.run.store import resolve_run

if TYPE_CHECKING:
    from awbench.analysis.pairwise import Answered, PairwiseComparison, PairwiseLeaderboard
    from awbench.analysis.runs import RunData
    from awbench.judging.choice import ChoiceAnswer, ChoiceJudge
    from awbench.run.pairwise import PairJob

# The judge options that mean something for a two-choice question (not the rule judge's, nor the rubric verdict's
# schema and repeats, nor the rubric batch judge's fallback).
PAIRWISE_JUDGE = JUDGE.only(
    *(
        opt.name
        for opt in JUDGE.options
        if opt.name not in ("judge", "rule_workers", "judge_samples", "judge_structured", "judge_batch_fallback")
    )
)


def refuse_without_pairwise(options: Options, pairwise: bool, dry_run: bool) -> None:
    given = [OPTION_NAMES[f"JudgeSettings.{name}"] for name in options.settings(PAIRWISE_JUDGE, given_only=True)]
    given += ["--dry-run"] if dry_run else []
    if not pairwise and given:
        verb = "applies" if len(given) == 1 else "apply"
        fail(
            f"{', '.join(given)} {verb} only with --pairwise (a judge asked which of two predictions is closer)",
            key="bad_option",
        )


def _runs(names: Sequence[str], output: Path) -> list[RunData]:
    from awbench.analysis.runs import load_run_data

    runs = []
    for name in names:
        store = resolve_run(name, output)
        runs.append(load_run_data(store))
    fingerprints = {run.manifest.data_fingerprint for run in runs}
    if len(fingerprints) > 1:
        listed = ", ".join(f"{run.name} ({run.manifest.data_fingerprint[:12]})" for run in runs)
        fail(
            f"the runs were made on different data: {listed}; a pairwise judge compares predictions of the same samples"
        )
    if len({run.name for run in runs}) < len(runs):
        fail("a run is named twice: give different runs")
    return runs


def _jobs(runs: Sequence[RunData], pairs: Sequence[tuple[int, int]], output: Path, judge: ChoiceJudge) -> list[PairJob]:
    from awbench.run.pairwise import Contender, pair_job

    def contender(run: RunData) -> Contender:
        return Contender(run.name, run.store.path, run.predictions)

    samples = list(runs[0].samples.values())
    fingerprint = runs[0].manifest.data_fingerprint
    return [pair_job(output, contender(runs[a]), contender(runs[b]), samples, fingerprint, judge) for a, b in pairs]


def _ask(jobs: list[PairJob], judge: ChoiceJudge, dry_run: bool) -> list[dict[str, ChoiceAnswer]] | None:
    """Every job's answers; None after printing the estimate, with --dry-run."""
    from awbench.run.pairwise import ask_pairs, estimate

    if dry_run:
        found = estimate(jobs, judge)
        console.print(
            f"dry run: {len(jobs)} pairs, {sum(len(job.questions) for job in jobs)} questions; {found.calls} judge "
            f"calls, ~{found.prompt_tokens:,} prompt and ~{found.completion_tokens:,} completion tokens; estimated "
            f"judge cost {judge_cost(found.cost_usd, judge.settings.batch)}. Nothing was spent.",
            highlight=False,
            soft_wrap=True,
        )
        return None

    async def go() -> list[dict[str, ChoiceAnswer]]:
        try:
            return await ask_pairs(jobs, judge, RichProgress())
        finally:
            await judge.aclose()

    return asyncio.run(go())


def _judge(options: Options) -> ChoiceJudge:
    """The pairwise judge the options ask for; its prompts default to awbench's pairwise set."""
    from awbench.judging.choice import ChoiceJudge
    from awbench.judging.pairwise_prompts import BUILTIN, load_pairwise_prompts
    from awbench.transport.openai_client import Endpoints

    given = options.settings(PAIRWISE_JUDGE, given_only=True)
    if given.get("prompts") == "rubric":
        fail(
            f"--judge-prompts rubric is the rubric's prompt set: --pairwise takes '{BUILTIN}', a directory, or a "
            "Qwen-AgentWorld checkout",
            key="bad_option",
        )
    settings = cli_judge_settings(None, options)
    settings = settings.model_copy(update={"prompts": given.get("prompts", BUILTIN)})
    prompt_set = load_pairwise_prompts(settings.prompts, settings.template)
    return ChoiceJudge(settings, prompt_set, Endpoints(RichProgress().note))


def _prompts(judge: ChoiceJudge) -> str:
    return f"{judge.prompt_set.name}@{judge.prompt_set.sha256[:6]}"


def _tolerated(runs: Sequence[RunData]) -> float:
    """The share of questions that may go without a choice: the strictest --max-failure-rate of the runs."""
    return min(run.manifest.config.scoring.max_failure_rate for run in runs)


def exit_on_failures(answered: Answered, tolerated: float) -> None:
    """`run`'s exit rule over the questions asked: exit 1 when none got a choice, or more than `tolerated` got
    none (the views have said how many)."""
    from awbench.run.pipeline import measurement_exit_code

    code = measurement_exit_code(
        answered.unanswered < answered.questions, answered.questions, answered.unanswered, tolerated
    )
    if code:
        err_console.print(
            f"{answered.unanswered} of {answered.questions} questions have no choice: more than the tolerated "
            f"{tolerated:.0%} (the runs' --max-failure-rate)",
            style="red",
            soft_wrap=True,
        )
        raise typer.Exit(code)


def compare_pairwise(
    run_a: str, run_b: str, output: Path, options: Options, dry_run: bool, resamples: int, seed: int
) -> tuple[PairwiseComparison, float] | None:
    """A against B by the pairwise judge, and the share of questions that may go without a choice
    (`_tolerated`); None with --dry-run (the estimate is printed)."""
    from awbench.analysis.pairwise import compare_pairwise as comparison

    runs = _runs([run_a, run_b], output)
    judge = _judge(options)
    jobs = _jobs(runs, [(0, 1)], output, judge)
    answers = _ask(jobs, judge, dry_run)
    if answers is None:
        return None
    compared = comparison(runs[0].name, jobs[0].pairing, answers[0], judge.id, _prompts(judge), resamples, seed)
    return compared, _tolerated(runs)


def leaderboard_pairwise(
    names: Sequence[str], output: Path, options: Options, dry_run: bool, resamples: int, seed: int
) -> tuple[PairwiseLeaderboard, float] | None:
    """The runs' Bradley–Terry ranking by the pairwise judge, and the share of questions that may go without a
    choice (`_tolerated`); None with --dry-run (the estimate is printed)."""
    from awbench.analysis.pairwise import pairwise_leaderboard

    if len(names) < 2:
        fail(f"--pairwise ranks two or more runs; found {len(names)}")
    runs = _runs(names, output)
    judge = _judge(options)
    pairs = list(combinations(range(len(runs)), 2))
    jobs = _jobs(runs, pairs, output, judge)
    answers = _ask(jobs, judge, dry_run)
    if answers is None:
        return None
    keyed = {(runs[a].name, runs[b].name): i for i, (a, b) in enumerate(pairs)}
    board = pairwise_leaderboard(
        [run.name for run in runs],
        {key: jobs[i].pairing for key, i in keyed.items()},
        {key: answers[i] for key, i in keyed.items()},
        judge.id,
        _prompts(judge),
        resamples,
        seed,
    )
    return board, _tolerated(runs)


def show_pairwise_leaderboard(
    dirs: Sequence[str],
    output: Path,
    fmt: str,
    options: Options,
    dry_run: bool,
    resamples: int,
    seed: int,
    unused: dict[str, bool],
) -> None:
    """`awbench leaderboard --pairwise`: the runs under `dirs` (else `output`) ranked, as a table or json on
    stdout. `unused`: the leaderboard's options that do not apply, by name, and whether each was given."""
    if given := [name for name, used in unused.items() if used]:
        fail(f"{', '.join(given)}: not with --pairwise (its output is a table or json on stdout)", key="bad_option")
    from awbench.analysis.listing import locate_runs, run_dirs
    from awbench.cli.pairwise_views import pairwise_leaderboard_renderables

    found = [str(path) for root in locate_runs(dirs, output) for path in run_dirs(root)]
    outcome = leaderboard_pairwise(found, output, options, dry_run, resamples, seed)
    if outcome is None:
        return
    ranked, tolerated = outcome
    if fmt == "json":  # as written: no markup, no wrapping, no emoji
        text = ranked.model_dump_json(indent=2) + "\n"
        console.print(text, end="", markup=False, highlight=False, soft_wrap=True, emoji=False)
    else:
        console.print(*pairwise_leaderboard_renderables(ranked), sep="\n")
    exit_on_failures(ranked.answered, tolerated)
