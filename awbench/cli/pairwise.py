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

from awbench.cli.common import console, err_console, fail, plural
from awbench.cli.options import JUDGE, OPTION_NAMES, Options
from awbench.cli.progress import RichProgress
from awbench.cli.run_commands import cli_judge_settings
from awbench.cli.summary import judge_cost
from awbench.run.store import resolve_run

if TYPE_CHECKING:
    from awbench.analysis.pairwise import Answered, PairwiseComparison, PairwiseLeaderboard
    from awbench.config import JudgeSettings
    from awbench.run.pairwise import PairwiseOutcome

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


def _settings(options: Options) -> JudgeSettings:
    """The pairwise judge the options ask for; its prompts default to awbench's pairwise set."""
    from awbench.judging.choice.pairwise_prompts import BUILTIN

    given = options.settings(PAIRWISE_JUDGE, given_only=True)
    if given.get("prompts") == "rubric":
        fail(
            f"--judge-prompts rubric is the rubric's prompt set: --pairwise takes '{BUILTIN}', a directory, or a "
            "Qwen-AgentWorld checkout",
            key="bad_option",
        )
    settings = cli_judge_settings(None, options)
    return settings.model_copy(update={"prompts": given.get("prompts", BUILTIN)})


def _compare(
    names: Sequence[str], pairs: Sequence[tuple[int, int]], output: Path, options: Options, dry_run: bool
) -> PairwiseOutcome | None:
    """The runs' pairs asked of the pairwise judge (`awbench.run.pairwise.compare_runs`); None after printing the
    estimate, with --dry-run."""
    from awbench.run.pairwise import compare_runs

    stores = [resolve_run(name, output) for name in names]
    settings = _settings(options)
    outcome = asyncio.run(compare_runs(stores, pairs, settings, output, RichProgress(), dry_run))
    found = outcome.estimate
    if found is None:
        return outcome
    console.print(
        f"dry run: {plural(len(pairs), 'pair')}, {plural(outcome.questions, 'question')}; {found.calls} judge calls, "
        f"~{found.prompt_tokens:,} prompt and ~{found.completion_tokens:,} completion tokens; estimated judge cost "
        f"{judge_cost(found)}. Nothing was spent.",
        highlight=False,
        soft_wrap=True,
    )
    return None


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
    """A against B by the pairwise judge, and the share of questions that may go without a choice (the runs'
    strictest --max-failure-rate); None with --dry-run (the estimate is printed)."""
    from awbench.analysis.pairwise import compare_pairwise as comparison

    outcome = _compare([run_a, run_b], [(0, 1)], output, options, dry_run)
    if outcome is None:
        return None
    assert outcome.answers is not None
    first, pairing, answers = outcome.names[0], outcome.pairings[0], outcome.answers[0]
    compared = comparison(first, pairing, answers, outcome.judge_id, outcome.prompts, resamples, seed)
    return compared, outcome.max_failure_rate


def leaderboard_pairwise(
    names: Sequence[str], output: Path, options: Options, dry_run: bool, resamples: int, seed: int
) -> tuple[PairwiseLeaderboard, float] | None:
    """The runs' Bradley–Terry ranking by the pairwise judge, and the share of questions that may go without a
    choice (the runs' strictest --max-failure-rate); None with --dry-run (the estimate is printed)."""
    from awbench.analysis.pairwise import pairwise_leaderboard

    if len(names) < 2:
        fail(f"--pairwise ranks two or more runs; found {len(names)}")
    pairs = list(combinations(range(len(names)), 2))
    outcome = _compare(names, pairs, output, options, dry_run)
    if outcome is None:
        return None
    assert outcome.answers is not None
    keyed = {(outcome.names[a], outcome.names[b]): i for i, (a, b) in enumerate(pairs)}
    board = pairwise_leaderboard(
        outcome.names,
        {key: outcome.pairings[i] for key, i in keyed.items()},
        {key: outcome.answers[i] for key, i in keyed.items()},
        outcome.judge_id,
        outcome.prompts,
        resamples,
        seed,
    )
    return board, outcome.max_failure_rate


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
