"""Terminal views (rich) of what the analysis commands show: leaderboard tables, a comparison, one run's
overview and one sample in detail."""

from __future__ import annotations

from datetime import timezone

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from awbench.analysis.compare import (
    Comparison,
    JudgeComparison,
    LengthBias,
    PairedGrowth,
    judge_consistency,
    run_length_bias,
)
from awbench.analysis.growth import (
    AXIS_NAMES,
    TURN_BINS,
    Axis,
    GrowthTable,
    RunGrowth,
    Trend,
    fmt_bounds,
    fmt_points,
    fmt_spread,
    growth_summary,
    run_units,
    trend_phrase,
    trends,
)
from awbench.analysis.growth import (
    Cell as GrowthCell,
)
from awbench.analysis.leaderboard import (
    DIMENSION_LABELS,
    INTERVALS_NOTE,
    Cell,
    Leaderboard,
    fmt_cost,
    fmt_interval,
    fmt_number,
    interval,
    judged_several_times,
    shows_generations,
)
from awbench.analysis.listing import RunEntry, RunList
from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.runs import RunData, point_summary, run_intervals
from awbench.analysis.sample_view import SampleView, clip, unified_diff
from awbench.analysis.stats import MIN_TRAJECTORIES, TOO_FEW
from awbench.analysis.turing import TURING_TITLE, fmt_rate, run_turing_tests, turing_line
from awbench.cli.fitting import FittingTable
from awbench.cli.summary import variance_lines
from awbench.domains import DIMENSIONS, DOMAIN_LABELS, partial_label
from awbench.run.scoring import resume_advice
from awbench.safe_text import shown_on_terminal


def _stacked(cell: Cell) -> Text:
    """Value, and its interval below it (one decimal): keeps eight score columns narrow enough for a terminal."""
    text = Text(fmt_number(cell.value))
    if bounds := "too few" if cell.too_few else fmt_interval(cell, 1):
        text.append("\n" + bounds, style="dim")
    return text


def leaderboard_renderables(board: Leaderboard, notes: bool = True) -> list[RenderableType]:
    """A table per group, then (unless `notes` is false) the notes, one per line. The group's judge, prompt set
    and data are in its title (every row of a group shares them), so the terminal table leaves those columns to
    the file formats."""
    out: list[RenderableType] = []
    for group in board.groups:
        several = judged_several_times(group)
        # No vertical rules and two spaces between columns: twelve columns fit in about 110 characters; in fewer,
        # the domains are stacked below the run names again, Overall in the first table.
        title = ("rule scores · " if group.rules else "") + group.header
        intervals = any(interval(cell) is not None or cell.too_few for row in group.rows for cell in row.cells.values())
        table = FittingTable(
            title=title,
            box=box.SIMPLE_HEAD,
            padding=(0, 1, 0, 0),
            pad_edge=False,
            keys=2,
            title_style="bold magenta" if group.published else "bold",
            caption=Text(INTERVALS_NOTE) if intervals else None,
        )
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("Run", no_wrap=True)
        for c in board.columns:
            if c == OVERALL:
                table.start_group(lead=True)  # Overall, the counts, K and the cost stay together, in the first table
            table.add_column(board.labels[c], justify="right", no_wrap=True, style="bold" if c == OVERALL else None)
        table.add_column("Scored/\nfailed/\nunscored", justify="right", no_wrap=True)
        k = shows_generations(board)
        if k:
            table.add_column("K", justify="right", no_wrap=True)
        costs = any(row.cost_usd is not None for row in group.rows)
        if costs:
            table.add_column("Cost", justify="right", no_wrap=True)
        for row in group.rows:
            if row.published:
                run = Text(row.run, style="italic magenta") + Text(" published", style="dim")
            else:
                run = Text(row.run) + (Text(f"\n{row.model}", style="dim") if row.model != row.run else Text(""))
                if row.run in several:  # which of the run's evaluations: otherwise the rows look alike
                    run += Text(f"\njudge {row.judge_id}", style="dim")
            for mark in row.marks():
                run += Text(f"\n{mark}", style="yellow")
            counts = "" if row.scored is None else f"{row.scored}/{row.failed}/{row.unscored}"
            table.add_row(
                "" if row.rank is None else str(row.rank),
                run,
                *(_stacked(row.cells[c]) for c in board.columns),
                counts,
                *([str(row.generations)] if k else []),
                *([fmt_cost(row.cost_usd)] if costs else []),
            )
        out.append(table)
    if board.turing:
        turing = FittingTable(title=TURING_TITLE, keys=2)
        turing.add_column("Run", no_wrap=True)
        turing.add_column("Judge", no_wrap=True)
        turing.add_column("accuracy [95% CI]", justify="right", no_wrap=True)
        turing.add_column("fool rate [95% CI]", justify="right", no_wrap=True)
        for test in board.turing:
            turing.add_row(test.run, test.judge, fmt_rate(test.accuracy), fmt_rate(test.fool_rate))
        out.append(turing)
    if notes:
        out += [note_text(note) for note in board.notes]
    return out


def note_text(note: str) -> Text:
    return Text(f"note: {note}", style="yellow")


def comparison_renderables(c: Comparison) -> list[RenderableType]:
    judges = c.judge if c.judge_b is None else f"judges {c.judge} and {c.judge_b}"
    table = FittingTable(title=f"A = {c.run_a}   B = {c.run_b}   ({judges}; difference A − B)")
    table.add_column("", overflow="fold")
    for name in ("n", "A", "B", "A − B", "95% CI", "P(A > B)", "win", "tie", "loss"):
        if name == "win":
            table.start_group()
        table.add_column(name, justify="right", no_wrap=True)
    for row in c.rows:
        label = "Overall" if row.name == OVERALL else DOMAIN_LABELS[row.name]
        style = "bold" if row.name == OVERALL else None
        table.add_row(
            label,
            str(row.n),
            fmt_number(row.mean_a),
            fmt_number(row.mean_b),
            f"{row.diff:+.2f}",
            TOO_FEW if row.too_few else f"[{fmt_number(row.lo)}, {fmt_number(row.hi)}]",
            f"{row.a_better:.1%}" if row.a_better is not None else "–",
            str(row.wins),
            str(row.ties),
            str(row.losses),
            style=style,
        )
    out: list[RenderableType] = [Text(f"warning: {w}", style="bold yellow") for w in c.warnings]
    out.append(table)
    out += [Text(f"note: {note}", style="dim") for note in c.notes]
    if c.judge_agreement:
        ag = c.judge_agreement
        agree = FittingTable(title=f"Judge agreement on the same predictions (n = {ag.n})", keys=0)
        for name in (*(DIMENSION_LABELS[d] for d in DIMENSIONS), "Spearman (total)"):
            agree.add_column(name, justify="right", no_wrap=True)
        agree.add_row(*(fmt_number(ag.alpha[d], 3) for d in DIMENSIONS), fmt_number(ag.spearman, 3))
        out += [agree, Text("Krippendorff's alpha (ordinal) per dimension between the two runs' judges", style="dim")]
    out.append(length_bias_table(c.length_bias))
    for growth in c.growth.values():
        out += paired_growth_renderables(growth)
    return out


def judge_comparison_renderables(c: JudgeComparison) -> list[RenderableType]:
    table = FittingTable(title=f"{c.run}: judge A = {c.judge_a}, judge B = {c.judge_b} (failed generations left out)")
    table.add_column("", overflow="fold")
    for name in ("n", "Spearman", "Krippendorff α", "A", "B", "A − B", "95% CI"):
        if name == "A":
            table.start_group()
        table.add_column(name, justify="right", no_wrap=True)
    for row in c.rows:
        p = row.paired
        table.add_row(
            "Overall" if row.name == OVERALL else DOMAIN_LABELS[row.name],
            str(row.n),
            fmt_number(row.spearman, 3),
            fmt_number(row.alpha, 3),
            fmt_number(p.mean_a),
            fmt_number(p.mean_b),
            f"{p.diff:+.2f}" if p.diff is not None else "–",
            TOO_FEW if p.too_few else f"[{fmt_number(p.lo)}, {fmt_number(p.hi)}]",
            style="bold" if row.name == OVERALL else None,
        )
    out: list[RenderableType] = [
        table,
        Text(
            "α: ordinal Krippendorff's alpha of the 0..100 totals; the interval resamples whole trajectories",
            style="dim",
        ),
    ]
    if c.dimension_alpha:
        out.append(
            Text(
                "per dimension α: "
                + ", ".join(f"{DIMENSION_LABELS[d]} {fmt_number(v, 3)}" for d, v in c.dimension_alpha.items())
            )
        )
    return out


def length_bias_table(biases: dict[str, LengthBias]) -> Table:
    """Each cell: the mean score, its count below it (two narrow lines leave the run names room)."""
    table = FittingTable(title="Mean score by prediction / ground-truth length (failed generations left out)")
    table.add_column("run", no_wrap=True)
    bins = list(next(iter(biases.values())))
    for b in bins:
        table.add_column(b, justify="right", no_wrap=True)
    for run, bias in biases.items():
        table.add_row(run, *(Text(fmt_number(m, 1)).append(f"\nn={n}", style="dim") for n, m in bias.values()))
    return table


def run_overview(
    data: RunData, judge_id: str, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> list[RenderableType]:
    evaluation = data.evaluation(judge_id)
    ci = run_intervals(data, judge_id, resamples, seed)
    label = "rule scores" if evaluation.kind == "rules" else "scores"
    table = FittingTable(title=f"{data.name}: {label} of judge {judge_id}, 95% bootstrap intervals over trajectories")
    dimensions = DIMENSIONS if evaluation.kind == "llm" else ()  # the rule judge has no rubric dimensions
    table.add_column("domain", overflow="fold")
    for name in ("n", "score", "95% CI", *(DIMENSION_LABELS[d] for d in dimensions)):
        if name == DIMENSION_LABELS[DIMENSIONS[0]]:
            table.start_group()
        table.add_column(name, justify="right", no_wrap=True)
    points = data.points(judge_id)
    for name, (n, score, dims) in point_summary(points).items():
        table.add_row(
            "Overall" if name == OVERALL else DOMAIN_LABELS[name],
            str(n),
            fmt_number(score),
            f"[{ci[name]['score'][0]:.2f}, {ci[name]['score'][1]:.2f}]" if name in ci else TOO_FEW,
            *(fmt_number(dims.get(d), 1) for d in dimensions),
            style="bold" if name == OVERALL else None,
        )
    if partial := partial_label({d: 0.0 for d, pts in points.items() if pts}):  # "partial (2 of 7 domains)"
        table.add_row("Overall", "", "partial", partial.removeprefix("partial (").removesuffix(")"), style="bold")
    out: list[RenderableType] = [
        table,
        *variance_lines(data.variance(judge_id)),
        length_bias_table({data.name: run_length_bias(data, judge_id)}),
    ]
    if not (completeness := data.completeness(judge_id)).complete:
        out.insert(
            0,
            Text(
                f"{completeness.label()}: not ranked by the leaderboard nor exported; {resume_advice(data.store.path, data.manifest.made_by, completeness.stopped)}",
                style="bold red",
            ),
        )
    overall = trends(run_units(data, judge_id, "turn"), TURN_BINS, resamples, seed).get(OVERALL)
    if overall is not None:
        out.append(
            Text(
                f"Along trajectories, overall {trend_phrase(overall, 'turn')}; by bin and domain: "
                f"`awbench show {data.store.path} --by-turn` (or --by-context)"
            )
        )
    if len(data.evaluations) > 1:
        out.append(
            Text(
                "judges of this run: "
                + ", ".join(f"{i}{' (primary)' if i == data.primary else ''}" for i in data.evaluations)
                + "; choose one with --judge ID"
            )
        )
    consistency = judge_consistency(data, judge_id)
    if consistency:
        out.append(
            Text(
                f"Krippendorff's alpha (ordinal) between repeated verdicts (up to {consistency.k} per prediction, "
                f"{consistency.n} predictions): "
                + ", ".join(f"{DIMENSION_LABELS[d]} {fmt_number(a, 3)}" for d, a in consistency.alpha.items())
            )
        )
    scores = evaluation.scores
    if scores and scores.agreement:
        out.append(
            Text(
                "Rule score vs LLM total, Spearman: "
                + ", ".join(f"{DOMAIN_LABELS.get(d, d)} {fmt_number(v, 3)}" for d, v in scores.agreement.items())
            )
        )
    out += [Text(turing_line(test)) for test in run_turing_tests(data.store)]
    if scores and (note := scores.generations_note()):
        out.append(Text(note))
    if scores and (note := scores.flagged_note(str(data.store.path))):
        out.append(Text(note, style="yellow"))
    return out


def sample_renderables(view: SampleView, diff: bool, max_chars: int) -> list[RenderableType]:
    status = "" if view.status in (None, "ok") else f"  [{view.status}]"
    head = Text.assemble(
        (view.key, "bold cyan"),
        f"  · {DOMAIN_LABELS[view.domain]} · trajectory {view.trajectory}",
        (f" · {view.origin}", "dim"),
        (status, "bold red"),
    )
    out: list[RenderableType] = [Text(""), head]
    if view.earlier_turns:
        out.append(Text(f"… {view.earlier_turns} earlier turn(s) not shown", style="dim"))
    for action, observation in view.context:
        out.append(
            Panel(
                Group(Text(clip(action, 600)), Text(clip(observation, 600), style="dim")),
                title="earlier turn",
                title_align="left",
                border_style="dim",
            )
        )
    out.append(Panel(Text(clip(view.action, max_chars)), title="action", title_align="left", border_style="cyan"))
    if diff:
        text = (
            "\n".join(unified_diff(view.ground_truth, view.prediction)) or "(prediction and ground truth are identical)"
        )
        out.append(
            Panel(
                Syntax(clip(text, max_chars * 2), "diff", word_wrap=True),
                title="ground truth → prediction",
                title_align="left",
            )
        )
    else:
        side = Table.grid(expand=True, padding=(0, 1))
        side.add_column(ratio=1)
        side.add_column(ratio=1)
        side.add_row(
            Panel(
                Text(clip(view.ground_truth, max_chars)), title="ground truth", title_align="left", border_style="green"
            ),
            Panel(
                Text(clip(view.prediction, max_chars)), title="prediction", title_align="left", border_style="yellow"
            ),
        )
        out.append(side)
    scores = FittingTable(title="scores (0..100)", min_width=24, keys=0)
    columns = ["total", *(DIMENSION_LABELS[d] for d in DIMENSIONS if d in view.dimensions), *(view.rule_parts or {})]
    for name in columns:
        scores.add_column(name, justify="right", no_wrap=True)
    scores.add_row(
        fmt_number(view.score, 1),
        *(fmt_number(view.dimensions[d], 1) for d in DIMENSIONS if d in view.dimensions),
        *(fmt_number(v * 100, 1) for v in (view.rule_parts or {}).values()),
    )
    out.append(scores)
    if view.error:
        out.append(Text(f"error: {view.error}", style="red"))
    if view.flags:
        out.append(Text(f"flags: {', '.join(view.flags)}", style="yellow"))
    for i, reasons in enumerate(view.reasons, start=1):
        label = f"verdict {i} ({reasons.status})" if len(view.reasons) > 1 else f"judge ({reasons.status})"
        lines = [Text(label, style="bold")]
        lines += [Text(f"+ {s}", style="green") for s in reasons.strengths]
        lines += [Text(f"- {w}", style="red") for w in reasons.weaknesses]
        out.append(Group(*lines))
    return out


# --------------------------------------------------------------------------- along trajectories

CELL_NOTE = (
    "Cells: mean score, its 95% bootstrap interval over whole trajectories, and n samples; Overall: the mean "
    "over the domains in the bin (with how many when some are missing)."
)
FEW_NOTE = (
    f"From fewer than {MIN_TRAJECTORIES} trajectories, a cell or trend has no interval ({TOO_FEW}) and is "
    "never called a rise or a fall."
)
TREND_NOTE = (
    "Trend: least-squares slope of the score on log2({what}), in points per doubling, with its "
    "interval; Overall: the mean of the domains' slopes."
)
BIN_NOTES: dict[Axis, str] = {
    "turn": "Bins of the turn index (turn_idx): 1, 2-3, 4-7, 8-15, 16-31, 32+.",
    "context": "Bins of the candidate's context (system prompt, earlier turns, action) in tokens ≈ characters / 4, "
    "K = 1,024.",
}


def _growth_cell(cell: GrowthCell | None, signed: bool = False, domains: int | None = None) -> Text:
    if cell is None or cell.mean is None:
        return Text("–", style="dim")
    text = Text(fmt_points(cell.mean, signed))
    bounds = fmt_spread(cell, signed)
    if bounds:
        text.append("\n" + bounds, style="dim")
    count = f"n={cell.n}" + (
        f" · {cell.domains} dom." if cell.domains is not None and domains and cell.domains < domains else ""
    )
    text.append("\n" + count, style="dim")
    return text


def _trend_cell(trend: Trend | None) -> Text:
    if trend is None or trend.slope is None:
        return Text("–", style="dim")
    text = Text(fmt_points(trend.slope, signed=True), style="bold" if trend.clear else "")
    bounds = fmt_spread(trend, signed=True)
    if bounds:
        text.append("\n" + bounds, style="dim")
    return text


def _bins_table(
    title: str, bins: list[str], rows: dict[str, dict[str, GrowthCell]], trend: dict[str, Trend], signed: bool = False
) -> Table:
    table = FittingTable(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("domain", overflow="fold")
    for label in bins:
        table.add_column(label, justify="right", no_wrap=True)
    table.add_column("trend /\ndoubling", justify="right", no_wrap=True)
    domains = sum(1 for name in rows if name != OVERALL)
    for name, cells in rows.items():
        table.add_row(
            "Overall" if name == OVERALL else DOMAIN_LABELS.get(name, name),
            *(_growth_cell(cells.get(label), signed, domains) for label in bins),
            _trend_cell(trend.get(name)),
            style="bold" if name == OVERALL else None,
            end_section=name != OVERALL and list(rows)[-2:-1] == [name],
        )
    return table


def growth_table_renderables(growth: GrowthTable, run: str, judge_id: str) -> list[RenderableType]:
    """`show --by-turn` / `--by-context`: bins x domains, the trend per domain, and a line to scan."""
    title = f"{run}: score by {AXIS_NAMES[growth.axis]} (judge {judge_id})"
    if not growth.rows:
        return [Text(f"{title}: no scored samples")]
    table = _bins_table(title, growth.bins, growth.rows, growth.trend)
    what = "turn index" if growth.axis == "turn" else "context tokens"
    notes = [
        BIN_NOTES[growth.axis],
        CELL_NOTE
        if growth.intervals
        else CELL_NOTE.replace(", its 95% bootstrap interval over whole trajectories,", ""),
        TREND_NOTE.format(what=what),
        FEW_NOTE,
    ]
    return [table, *(Text(note, style="dim") for note in notes), Text(growth_summary(growth))]


def run_growth_renderables(growth: RunGrowth, axes: list[Axis]) -> list[RenderableType]:
    out: list[RenderableType] = []
    for axis in axes:
        out += growth_table_renderables(growth.table(axis), growth.run, growth.judge)
    return out


def paired_growth_renderables(g: PairedGrowth) -> list[RenderableType]:
    """`compare`: overall A − B per bin (the macro mean over the domains in the bin), the one-line summary, and
    each domain's trend of A − B. The JSON output has every domain's row in every bin."""
    if not g.rows:
        return [Text(g.summary)]
    table = FittingTable(title=f"A − B by {AXIS_NAMES[g.axis]} (overall, on the samples both scored)")
    table.add_column(AXIS_NAMES[g.axis], overflow="fold")
    for name in ("n", "A", "B", "A − B", "95% CI", "P(A > B)"):
        table.add_column(name, justify="right", no_wrap=True)
    for label in g.bins:
        paired = g.rows.get(label)
        row = paired[-1] if paired else None
        if row is None:
            table.add_row(label, "0", *("–",) * 5)
            continue
        table.add_row(
            label,
            str(row.n),
            fmt_number(row.mean_a, 1),
            fmt_number(row.mean_b, 1),
            fmt_points(row.diff, True),
            TOO_FEW if row.too_few else fmt_bounds(row.lo, row.hi, True) or "–",
            f"{row.a_better:.1%}" if row.a_better is not None else "–",
        )
    trend = g.trend.get(OVERALL)
    if trend is not None:
        table.add_row(
            "trend / doubling",
            "",
            "",
            "",
            fmt_points(trend.slope, True),
            fmt_spread(trend, True) or "–",
            "",
            style="bold",
            end_section=False,
        )
    domains = [(d, t) for d, t in g.trend.items() if d != OVERALL and t.slope is not None]
    out: list[RenderableType] = [table, Text(g.summary, style="bold")]
    if domains:
        out.append(
            Text(
                "A − B per doubling of the "
                + AXIS_NAMES[g.axis]
                + ": "
                + ", ".join(
                    f"{DOMAIN_LABELS.get(d, d)} {fmt_points(t.slope, True)}{' ' + b if (b := fmt_spread(t, True)) else ''}"
                    for d, t in domains
                ),
                style="dim",
            )
        )
    return out


# --------------------------------------------------------------------------- awbench ls


def run_list_table(listing: RunList) -> Table:
    """One row per run, its model below its name. Names and judge ids are never cut or wrapped: in a narrow
    terminal the state wraps, and what does not fit beside them goes into a second table."""
    table = FittingTable(box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False)
    for name, numeric, identifier in (
        ("run / model", False, True),
        ("judges", False, True),
        ("state", False, False),
        ("Overall", True, True),
        ("finished (UTC)", True, True),
    ):
        table.add_column(name, justify="right" if numeric else "left", no_wrap=identifier, overflow="fold")
    for entry in listing.runs:
        table.add_row(
            Text.assemble(entry.run, "\n", (entry.model, "dim")),
            Text("\n".join(entry.judges) or "–"),
            Text(entry.state_label(), style="red" if entry.state == "incomplete" else ""),
            _overall(entry),
            _finished(entry),
        )
    return table


def run_list_lines(listing: RunList) -> str:
    """`awbench ls` in a pipe: one line per run, tab-separated (run, model, judges joined by commas, state, Overall,
    finish time), never wrapped, for grep, cut and awk."""
    fields = [
        (e.run, e.model, ",".join(e.judges) or "–", e.state_label(), _overall(e), _finished(e)) for e in listing.runs
    ]
    return "".join("\t".join(map(shown_on_terminal, row)) + "\n" for row in fields)


def _overall(entry: RunEntry) -> str:
    return "partial" if entry.partial else fmt_number(entry.overall)


def _finished(entry: RunEntry) -> str:
    return entry.finished_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M") if entry.finished_at else "–"
