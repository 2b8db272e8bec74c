"""What the run commands print when they finish: the scores table, cost, agreement, cache use, and why
samples failed or went unscored (warnings and failures on stderr)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from awbench.cli.common import console, err_console, plural
from awbench.cli.fitting import FittingTable
from awbench.domains import DIMENSIONS, DOMAIN_LABELS
from awbench.judging import PromptError
from awbench.judging.batch.state import TYPICAL_BATCH_TURNAROUND_S
from awbench.judging.cost import CostEstimate
from awbench.run.failures import Setup, describe
from awbench.run.pipeline import DryRunEstimate
from awbench.run.scoring import ScoresFile, resume_advice
from awbench.run.variance import VARIANCE_COLUMNS, VARIANCE_NOTE, VARIANCE_TITLE, VarianceComponents

MAX_REASONS_SHOWN = 8


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def scores_table(scores: ScoresFile) -> Table:
    label = "rule score" if scores.judge == "rules" else "score"
    table = FittingTable(title=f"{scores.run}: {label} (0..100), failure policy {scores.failure_policy}")
    table.add_column("domain", overflow="fold")
    pending = any(d.pending for d in scores.domains.values())  # not judged yet: a column of its own, not unscored
    for column in ("n", "failed", "unscored", *(["pending"] if pending else []), label):
        table.add_column(column, justify="right", no_wrap=True)
    show_dims = any(d.dimensions for d in scores.domains.values()) and scores.judge == "llm"
    if show_dims:
        table.start_group()
        for dim in DIMENSIONS:
            table.add_column(dim.capitalize(), justify="right", no_wrap=True)
    if scores.rules:
        table.start_group()
        table.add_column("rule score", justify="right", no_wrap=True)
    for domain, d in scores.domains.items():
        waiting = [str(d.pending)] if pending else []
        row = [DOMAIN_LABELS.get(domain, domain), str(d.n), str(d.failed), str(d.unscored - d.pending), *waiting]
        row.append(_fmt(d.score))
        if show_dims:
            row += [_fmt(d.dimensions.get(dim)) for dim in DIMENSIONS]
        if scores.rules:
            rules_domain = scores.rules.domains.get(domain)
            row.append(_fmt(rules_domain.score if rules_domain else None))
        table.add_row(*row)
    table.add_section()
    total = scores.table()
    partial = scores.partial
    overall = [
        "Overall (macro)",
        str(total.n),
        str(total.failed),
        str(total.unscored - total.pending),
        *([str(total.pending)] if pending else []),
        _fmt_overall(scores.overall, partial),
    ]
    macro, micro = scores.dimension_overall() if show_dims else ({}, {})
    table.add_row(
        *overall,
        *([_fmt_overall(macro.get(dim), partial) for dim in DIMENSIONS] if show_dims else []),
        *([_fmt_overall(scores.rules.overall, partial)] if scores.rules else []),
    )
    table.add_row(
        "Overall (micro)",
        *[""] * (4 if pending else 3),
        _fmt_overall(scores.overall_micro, partial),
        *([_fmt_overall(micro.get(dim), partial) for dim in DIMENSIONS] if show_dims else []),
        *([_fmt_overall(scores.rules.overall_micro, partial)] if scores.rules else []),
    )
    if partial:
        table.caption = f"{partial}: the Overall is the mean of all seven"
    return table


def overall_line(scores: ScoresFile | None) -> str:
    """One line on an evaluation's Overall: its macro and micro means, or why there is none."""
    if scores is None or not any(d.score is not None for d in scores.domains.values()):
        return "nothing scored"
    if scores.partial:
        return f"Overall: {scores.partial}"
    return f"overall {_fmt(scores.overall)} (macro), {_fmt(scores.overall_micro)} (micro)"


def _fmt_overall(value: float | None, partial: str | None) -> str:
    return "partial" if partial else _fmt(value)


def variance_table(variance: VarianceComponents) -> FittingTable:
    """Each domain's and the Overall's standard error, split into its sources (`awbench.run.variance`)."""
    table = FittingTable(title=VARIANCE_TITLE, caption=VARIANCE_NOTE)
    table.add_column("", overflow="fold")
    for column in VARIANCE_COLUMNS:
        if column in ("SE", "judge SD"):
            table.start_group()
        table.add_column(column, justify="right", no_wrap=True)
    rows = variance.rows()
    for i, (label, cells) in enumerate(rows):
        table.add_row(label, *cells, style="bold" if label == "Overall" else None, end_section=i == len(rows) - 2)
    return table


def variance_lines(variance: VarianceComponents | None) -> list[RenderableType]:
    """The table, and what the run cannot tell apart."""
    if variance is None:
        return []
    note = variance.unseen_note()
    return [variance_table(variance), *([Text(f"note: {note}", style="yellow")] if note else [])]


def _fmt_rho(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def reference_lines(scores: ScoresFile) -> list[str]:
    """The numbers the reference eval.py prints for this evaluation, and why the strict ones above differ."""
    reference = scores.reference
    if reference is None:
        return []
    domains = ", ".join(f"{DOMAIN_LABELS.get(d, repr(d))} {_fmt(r.score)}" for d, r in reference.domains.items())
    lines = [
        f"as the reference eval.py prints it (what the leaderboard ranks): {domains}; Overall "
        f"{_fmt(reference.overall)} (macro), eval.py's own Overall line {_fmt(reference.overall_printed)}"
    ]
    lines += reference.notes()
    if reference.quoted:
        lines.append(
            f"{reference.quoted} reference readings may have taken a verdict quoted from the prediction (eval.py "
            f"reads them so); awbench's strict score uses the judge's own: see `awbench show {scores.run} --flagged`"
        )
    return lines


ScoresFormat = Literal["table", "json", "reference"]


def print_summary(
    scores: ScoresFile,
    code: int,
    max_failure_rate: float,
    run_dir: Path,
    setup: Setup,
    fmt: ScoresFormat = "table",
) -> None:
    """The scores table and what it says on stdout, problems on stderr. `json`: stdout holds the scores.json
    alone (which has every number the table and its lines give); `reference`: what the reference eval.py prints
    for the evaluation, digit for digit. The problems stay on stderr."""
    if fmt == "reference":
        if scores.reference is None:
            raise PromptError(
                f"judge {scores.judge_id} of {run_dir} has no reference reading: judge the run under the reference "
                "protocol (--judge-prompts CHECKOUT), or import the reference's judged.jsonl"
            )
        console.print(scores.reference.printout(), markup=False, highlight=False, soft_wrap=True, emoji=False, end="")
        for reference_note in scores.reference.notes():
            err_console.print(reference_note, markup=False, highlight=False, soft_wrap=True)
    elif fmt == "json":
        console.print(scores.model_dump_json(indent=2), markup=False, highlight=False, soft_wrap=True, emoji=False)
    else:
        console.print(scores_table(scores))
        for line in reference_lines(scores):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    completeness = scores.completeness
    if note := completeness.pending_note():
        err_console.print(
            f"{note}: {completeness.judged} of {completeness.selected} judged, not ranked by the leaderboard nor "
            f"exported; {resume_advice(run_dir)}",
            style="red",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if fmt == "table":
        _print_details(scores)
    _print_problems(scores, code, max_failure_rate, run_dir, setup)
    if fmt == "table":
        console.print(f"run saved in {run_dir}", highlight=False)


def _print_details(scores: ScoresFile) -> None:
    if scores.cost_usd is not None:
        console.print(f"judge cost: ${scores.cost_usd:.4f}")
    if scores.agreement:
        per_domain = ", ".join(  # in the table's order (MCP, Search, Terminal...), as every domain list
            f"{DOMAIN_LABELS.get(d, d)} {_fmt_rho(scores.agreement[d])}"
            for d in scores.domains
            if d in scores.agreement
        )
        console.print(
            f"rule score vs LLM judge, Spearman: overall {_fmt_rho(scores.agreement.get('overall'))} ({per_domain})"
        )
    for renderable in variance_lines(scores.variance):
        console.print(renderable, highlight=False)
    if note := scores.generations_note():
        console.print(note, highlight=False)
    for label, usage in (("prefix cache", scores.usage), ("judge prompt cache", scores.judge_usage)):
        if usage.get("prompt_tokens") and "cached_tokens" in usage:
            share = usage["cached_tokens"] / usage["prompt_tokens"]
            console.print(f"{label}: {share:.1%} of {usage['prompt_tokens']:,} prompt tokens were cached")


def _print_problems(scores: ScoresFile, code: int, max_failure_rate: float, run_dir: Path, setup: Setup) -> None:
    if note := scores.flagged_note(str(run_dir)):
        err_console.print(note, highlight=False, markup=False, soft_wrap=True)
    total = sum(d.n for d in scores.domains.values()) * scores.generations
    bad = sum(d.failed + d.unscored - d.pending for d in scores.domains.values())  # waiting is not failing
    if bad:
        style = "red" if code else "yellow"
        err_console.print(
            f"{bad} of {total} {'generations' if scores.generations > 1 else 'samples'} failed "
            f"or were not scored (tolerated: {max_failure_rate:.0%}):",
            style=style,
        )
        lines = describe(scores.failures, setup)
        for line in lines[:MAX_REASONS_SHOWN]:
            err_console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
        if len(lines) > MAX_REASONS_SHOWN:
            err_console.print(f"  ... and {len(lines) - MAX_REASONS_SHOWN} more reasons", highlight=False)
        err_console.print(
            f"look at them with `awbench show {run_dir} --failed`", highlight=False, markup=False, soft_wrap=True
        )


def judge_time(estimate: CostEstimate) -> str:
    """The judge's wall time at its rate limits, beside the tokens those limits count."""
    against = "the Batch API's enqueued-token limit" if estimate.batch_price else "a tokens-per-minute limit"
    counted = f"~{estimate.limit_tokens:,} tokens against {against} (prompts + --judge-max-tokens per call)"
    if estimate.batch_price and estimate.batches and estimate.batch_tokens and estimate.wall_s is not None:
        return (
            f"{counted}; {estimate.batches} batch(es) one after another under a limit of "
            f"{estimate.batch_tokens:,}: about {duration(estimate.wall_s)} at a typical {TYPICAL_BATCH_TURNAROUND_S / 3600:g} h per batch "
            "(an assumption: the Batch API promises 24 h each)"
        )
    if estimate.batch_price:
        return (
            f"{counted}, which (learnt at the first refusal, or --judge-batch-tokens) sets how many batches run one "
            "after another, each answered within 24 h"
        )
    if estimate.wall_s is None:
        return f"{counted}; give --judge-tpm/--judge-rpm for the wall time at your limits"
    return f"{counted}; about {duration(estimate.wall_s)} at --judge-tpm/--judge-rpm"


def duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"


def judge_cost(estimate: CostEstimate) -> str:
    """An estimated judge cost as `--dry-run` prints it, with the prompt cache's share and its assumption."""
    if estimate.cost_usd is None:
        return "unknown (give --judge-price-in/--judge-price-out)"
    if estimate.batch_price:
        return f"${estimate.cost_usd:.4f} at the Batch API's half price (prompt cache hits not counted: docs/batch.md)"
    if not estimate.cached_tokens or estimate.uncached_cost_usd in (None, estimate.cost_usd):  # no cached price
        return f"${estimate.cost_usd:.4f}"
    return (
        f"${estimate.cost_usd:.4f} with ~{estimate.cached_tokens / estimate.prompt_tokens:.0%} of the prompt tokens "
        f"served by the provider's prompt cache (${estimate.uncached_cost_usd:.4f} without it; assumed: each prompt "
        "finds what its trajectory's earlier turn, or its sample's first request, left cached, as awbench sends them "
        "in that order, and the provider keeps a prefix for minutes on one machine)"
    )


def print_estimate(estimate: DryRunEstimate) -> None:
    judge = estimate.judge
    console.print(
        f"dry run: {plural(estimate.samples, 'sample')}; {plural(estimate.generations, 'generation')} to make; "
        f"{judge.calls} judge calls, ~{judge.prompt_tokens:,} prompt and ~{judge.completion_tokens:,} completion "
        f"tokens; estimated judge cost {judge_cost(judge)}{'; ' + judge_time(judge) if judge.calls else ''}. "
        "Nothing was spent.",
        highlight=False,
        soft_wrap=True,
    )
