"""`awbench leaderboard | compare | show | report`: reading finished runs. Thin wrappers over
`awbench.analysis.runs`, `awbench.analysis.leaderboard`, `awbench.analysis.compare` and `awbench.analysis.report`; the rich rendering lives in
`awbench.cli.analysis_views`."""

from __future__ import annotations

import io
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import RenderableType

from awbench.analysis.options import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    OVERALL,
    Format,
    View,
)
from awbench.cli.common import (
    OutputOption,
    console,
    err_console,
    fail,
    file_path,
    plural,
    refuse_run_outputs,
    text_console,
)
from awbench.cli.options import Options, command
from awbench.cli.pairwise import (
    PAIRWISE_JUDGE,
    compare_pairwise,
    exit_on_failures,
    refuse_without_pairwise,
    show_pairwise_leaderboard,
)
from awbench.cli.run_commands import DryRunOpt
from awbench.domains import DIMENSIONS, DOMAINS
from awbench.errors import EXIT_FAILURES
from awbench.files import write_output
from awbench.run.store import resolve_run
from awbench.suggest import did_you_mean

if TYPE_CHECKING:
    from awbench.analysis.runs import RunData
    from awbench.analysis.sample_view import SampleLine

# The analysis modules (numpy, the leaderboard, charts) are imported by the commands that use them: the other
# commands (a resumed `awbench run` above all) start without them.

JudgeOpt = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="Which judge evaluation: a judge id (or its start), or llm/rules when a run has one of that kind. \\[default: each run's primary; the leaderboard: every evaluation]",
    ),
]
ResamplesOpt = Annotated[int, typer.Option("--resamples", min=2000, help="Bootstrap resamples (at least 2,000).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Bootstrap seed.")]
PAIRWISE_HELP = (
    "Ask a judge which of two runs' predictions is closer to the real observation, for each sample both predicted, "
    "in both orders (the judge options below; answers kept under OUTPUT/pairwise/)."
)
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Write to this file instead of the terminal.", parser=file_path("--out")),
]
HtmlOutOpt = Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.", parser=file_path("--out"))]


def register(app: typer.Typer) -> None:
    app.command("ls")(ls)
    app.command("leaderboard")(leaderboard)
    app.command("compare")(compare)
    app.command("show")(show)
    app.command("report")(report)


JsonFormat = Annotated[
    Literal["table", "json"],
    typer.Option("--format", help="table, or json (documented in the README; notes go to stderr)."),
]


def _emit(text: str, out: Path | None) -> None:
    if out is None and console.is_terminal:
        console.print(text, end="", soft_wrap=True)  # shown: a control character in a name as U+FFFD
    elif out is None:
        typer.echo(text, nl=False, color=True)  # as the file -o writes, byte for byte (no ANSI code taken out)
    else:
        _write(out, text)
        err_console.print(f"wrote {out}")


def _write(out: Path, text: str) -> None:
    """As the user means it (`write_output`: a file atomically, a failed write leaving the previous file as it
    was; a device or FIFO in place); a directory where the file goes, a read-only place or a full disk: a message
    naming the path, not a traceback."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_output(out, text)


def _render_text(renderables: list[RenderableType], width: int = 240) -> str:
    buffer = io.StringIO()
    text_console(file=buffer, width=width, color_system=None).print(*renderables, sep="\n")
    return buffer.getvalue()


RunsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Runs or directories of runs, each a path or a name under --output (default: --output).",
        show_default=False,
    ),
]


def _print_notes(notes: list[str]) -> None:
    """Notes go to stderr, one per line, so that stdout holds only the leaderboard (a CSV stays a CSV)."""
    from awbench.cli.analysis_views import note_text

    for note in notes:
        err_console.print(note_text(note), highlight=False, markup=False, soft_wrap=True)


def _nothing_to_show(judge: str | None, view: str = "domain") -> str:
    if view == "dimension":
        return "nothing to show: no run here has LLM-judge scores, and only those have rubric dimensions"
    if judge is not None:
        return f"nothing to show: no run here has {judge} scores"
    return "nothing to show: every run was left out (the notes say why)"


def ls(
    dirs: RunsArg = None,
    output: OutputOption = Path("results"),
    fmt: JsonFormat = "table",
) -> None:
    """The runs under --output (or the directories given), one line each: name, model, judges, state (complete,
    incomplete x of N judged, not scored, or running with the process that holds it), Overall, finish time.
    Given one run: its sample keys, one per line with their status (scored, failed, predicted or pending).

    Example: awbench ls; awbench ls results/ other-results/ --format json; awbench ls my-run
    """
    from awbench.analysis.listing import list_runs, locate_runs
    from awbench.cli.analysis_views import run_list_lines, run_list_table

    roots = locate_runs(dirs or [], output)
    if dirs and len(roots) == 1 and (roots[0] / "run.json").exists():
        _list_samples(roots[0], fmt)
        return
    listing, notes = list_runs(roots)
    if fmt == "json":
        _emit(listing.model_dump_json(indent=2) + "\n", None)
    elif listing.runs and console.is_terminal:
        console.print(run_list_table(listing))
    elif listing.runs:
        sys.stdout.write(
            run_list_lines(listing)
        )  # in stdout's encoding (click's echo would write UTF-8 to an ASCII one)
    else:
        notes.append(f"no runs under {', '.join(str(d) for d in roots)}")
    _print_notes(notes)


def _list_samples(run_dir: Path, fmt: str) -> None:
    """`ls RUN`: stdout holds the keys and their status (`awbench show RUN --sample KEY` takes them), aligned in a
    terminal, tab-separated in a pipe (as `ls` of runs: `cut -f1` gives the keys); the counts go to stderr."""
    from awbench.analysis.listing import SAMPLE_STATUSES, list_samples
    from awbench.analysis.runs import run_sample_keys
    from awbench.run.store import RunStore

    store = RunStore(run_dir)
    manifest = store.read_manifest()
    listing = list_samples(store, manifest, run_sample_keys(store, manifest))
    if fmt == "json":
        _emit(listing.model_dump_json(indent=2) + "\n", None)
    elif console.is_terminal:
        width = max((len(s.key) for s in listing.samples), default=0)
        _emit("".join(f"{s.key:<{width}}  {s.status}\n" for s in listing.samples), None)
    else:
        _emit("".join(f"{s.key}\t{s.status}\n" for s in listing.samples), None)
    counts = Counter(s.status for s in listing.samples)
    tally = ", ".join(f"{counts[status]} {status}" for status in SAMPLE_STATUSES if counts[status])
    err_console.print(
        f"{store.name}: {plural(len(listing.samples), 'sample')}" + (f" ({tally})" if tally else ""),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@command(PAIRWISE_JUDGE)
def leaderboard(
    dirs: RunsArg = None,
    output: OutputOption = Path("results"),
    by: Annotated[View, typer.Option("--by", help="Columns: domain scores, or rubric dimensions.")] = "domain",
    domain: Annotated[
        str | None, typer.Option("--domain", help="With --by dimension: one domain instead of the mean over domains.")
    ] = None,
    judge: JudgeOpt = None,
    ci: Annotated[
        bool,
        typer.Option("--ci", help="95% bootstrap intervals [lo, hi] (resampling whole trajectories; loads the data)."),
    ] = False,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = DEFAULT_SEED,
    reference: Annotated[
        bool, typer.Option("--reference", help="Add the published leaderboard, as its own group.")
    ] = False,
    mix_reference: Annotated[
        bool,
        typer.Option(
            "--mix-reference", help="Rank the published rows with the computed runs (LLM-judged groups only)."
        ),
    ] = False,
    fmt: Annotated[Format, typer.Option("--format", help="table, markdown, csv, json or html.")] = "table",
    out: OutOpt = None,
    pairwise: Annotated[bool, typer.Option("--pairwise", help=PAIRWISE_HELP)] = False,
    dry_run: DryRunOpt = False,
    *,
    options: Options,
) -> None:
    """One row per scored run, ranked by Overall; runs scored differently are ranked in separate groups.
    Notes (runs left out, and why) go to stderr; with nothing left to show it exits 1. With --pairwise: a judge
    compares every pair of runs' predictions, and a Bradley–Terry fit ranks the runs.

    Example: awbench leaderboard results/ --ci --reference --format markdown -o leaderboard.md;
    awbench leaderboard run-a run-b run-c --pairwise --judge-model gpt-5.2-2025-12-11
    """
    refuse_without_pairwise(options, pairwise, dry_run)
    if pairwise:
        unused = {
            "--by": by != "domain",
            "--domain": domain is not None,
            "--judge": judge is not None,
            "--ci": ci,
            "--reference": reference,
            "--mix-reference": mix_reference,
            "--out": out is not None,
            f"--format {fmt}": fmt not in ("table", "json"),
        }
        show_pairwise_leaderboard(dirs or [], output, fmt, options, dry_run, resamples, seed, unused)
        return
    from awbench.analysis.leaderboard import (
        build_leaderboard,
        to_csv,
        to_json,
        to_markdown,
    )
    from awbench.analysis.listing import locate_runs
    from awbench.analysis.report import leaderboard_page
    from awbench.analysis.runs import discover_runs
    from awbench.cli.analysis_views import leaderboard_renderables

    if domain is not None and (by != "dimension" or domain not in DOMAINS):
        fail(f"--domain needs --by dimension and one of {', '.join(DOMAINS)}")
    refuse_run_outputs({"--out": out})
    roots = locate_runs(dirs or [], output)
    stores, notes = discover_runs(roots)
    if not stores and not (reference or mix_reference):
        _print_notes(notes)
        fail(f"no scored runs under {', '.join(str(d) for d in roots)}", key="no_scored_runs")
    board = build_leaderboard(
        stores,
        view=by,
        scope=domain or OVERALL,
        judge=judge,
        ci=ci,
        resamples=resamples,
        seed=seed,
        reference=reference or mix_reference,
        mix_reference=mix_reference,
        notes=notes,
    )
    if not board.groups:
        _print_notes(board.notes)
        fail(_nothing_to_show(judge, by), EXIT_FAILURES, key="nothing_to_show")
    if fmt == "table":
        if out is None:
            console.print(*leaderboard_renderables(board, notes=False), sep="\n")
        else:
            _emit(_render_text(leaderboard_renderables(board)), out)
    elif fmt == "html":
        _emit(leaderboard_page(board), out)
    else:
        _emit({"markdown": to_markdown, "csv": to_csv, "json": to_json}[fmt](board), out)
    _print_notes(board.notes)


def _load(run: str, output: Path) -> RunData:
    from awbench.analysis.runs import load_run_data

    store = resolve_run(run, output)
    return load_run_data(store)


@command(PAIRWISE_JUDGE)
def compare(
    run_a: Annotated[str, typer.Argument(help="Run A: a run directory, or a name under --output.")],
    run_b: Annotated[str | None, typer.Argument(help="Run B (not with --judges).")] = None,
    judges: Annotated[
        tuple[str, str] | None,
        typer.Option("--judges", help="Compare two judges of RUN_A instead: judge ids (or llm/rules)."),
    ] = None,
    output: OutputOption = Path("results"),
    judge: JudgeOpt = None,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = DEFAULT_SEED,
    fmt: JsonFormat = "table",
    pairwise: Annotated[bool, typer.Option("--pairwise", help=PAIRWISE_HELP)] = False,
    dry_run: DryRunOpt = False,
    *,
    options: Options,
) -> None:
    """A against B on the samples both scored: paired differences with bootstrap intervals, win/tie/loss. With
    --judges A B: two judges of one run's predictions, their agreement per domain. With --pairwise: a judge says,
    for each sample both runs predicted, which prediction is closer to the real observation (asked in both
    orders): A's win rate per domain, with intervals.

    Example: awbench compare my-model__gpt-5.2 baseline__gpt-5.2; awbench compare my-run --judges rules gpt-5.2;
    awbench compare run-a run-b --pairwise --judge-model gpt-5.2-2025-12-11
    """
    from awbench.analysis.compare import Comparison, JudgeComparison, compare_judges, compare_runs
    from awbench.cli.analysis_views import (
        comparison_renderables,
        judge_comparison_renderables,
    )

    if (run_b is None) == (judges is None):
        fail("give a second run, or --judges A B to compare two judges of one run")
    refuse_without_pairwise(options, pairwise, dry_run)
    if pairwise:
        if judges is not None or judge is not None:
            fail(
                f"{'--judges' if judges is not None else '--judge'}: not with --pairwise, which asks its own judge",
                key="bad_option",
            )
        from awbench.cli.pairwise_views import pairwise_comparison_renderables

        outcome = compare_pairwise(run_a, run_b, output, options, dry_run, resamples, seed)  # type: ignore[arg-type]
        if outcome is None:
            return
        compared, tolerated = outcome
        if fmt == "json":
            _emit(compared.model_dump_json(indent=2) + "\n", None)
        else:
            console.print(*pairwise_comparison_renderables(compared), sep="\n")
        if not compared.rows:
            fail(f"nothing compared: no sample of {run_a} and {run_b} has a choice in both orders", EXIT_FAILURES)
        exit_on_failures(compared.answered, tolerated)
        return
    a = _load(run_a, output)
    result: Comparison | JudgeComparison
    if judges is not None:
        result = compare_judges(a, judges[0], judges[1], resamples=resamples, seed=seed)
    else:
        result = compare_runs(a, _load(run_b, output), judge=judge, resamples=resamples, seed=seed)  # type: ignore[arg-type]
    if fmt == "json":
        _emit(result.model_dump_json(indent=2) + "\n", None)
    elif isinstance(result, JudgeComparison):
        console.print(*judge_comparison_renderables(result), sep="\n")
    else:
        console.print(*comparison_renderables(result), sep="\n")


def show(
    run: Annotated[str, typer.Argument(help="A run directory, or a name under --output.")],
    output: OutputOption = Path("results"),
    sample: Annotated[str | None, typer.Option("--sample", help="Show this sample key.")] = None,
    worst: Annotated[int | None, typer.Option("--worst", min=1, help="Show the N lowest-scored samples.")] = None,
    failed: Annotated[
        bool,
        typer.Option(
            "--failed", help="List the samples that failed or were not scored: one line each, key, status and why."
        ),
    ] = False,
    flagged: Annotated[
        bool,
        typer.Option(
            "--flagged", help="List the samples with flags (suspected_injection, repaired text), one line each."
        ),
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="With --failed or --flagged: each sample in detail, as --sample shows it.")
    ] = False,
    domain: Annotated[
        str | None, typer.Option("--domain", help="With --worst, --failed or --flagged: only this domain.")
    ] = None,
    dimension: Annotated[
        str | None, typer.Option("--dimension", help="With --worst: rank by this rubric dimension.")
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="A unified diff instead of side by side.")] = False,
    by_turn: Annotated[
        bool,
        typer.Option(
            "--by-turn",
            help="Scores by turn-index bin and domain, with intervals and the trend per doubling of the turn index.",
        ),
    ] = False,
    by_context: Annotated[
        bool,
        typer.Option(
            "--by-context", help="Scores by context-length bin (tokens ≈ characters / 4) and domain, with the trend."
        ),
    ] = False,
    judge: JudgeOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="With --failed or --flagged: at most this many samples.")
    ] = 20,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=200, help="Clip each text to this many characters.")
    ] = 4000,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = DEFAULT_SEED,
    fmt: JsonFormat = "table",
) -> None:
    """One run: its scores with intervals, length bias and judge agreement; its scores along trajectories
    (--by-turn, --by-context); or samples in detail.

    Example: awbench show my-model__gpt-5.2 --worst 5 --domain terminal --diff; awbench show my-model__gpt-5.2 --by-turn
    """
    from awbench.analysis.growth import Axis, run_growth
    from awbench.analysis.run_views import SampleList, growth_view, run_summary
    from awbench.analysis.sample_view import (
        failed_keys,
        failure_line,
        flag_line,
        flagged_keys,
        pending_count,
        sample_view,
        worst_keys,
    )
    from awbench.cli.analysis_views import (
        run_growth_renderables,
        run_overview,
        sample_renderables,
    )
    from awbench.run.scoring import resume_advice

    if sum(map(bool, (sample, worst, failed, flagged, by_turn or by_context))) > 1:
        fail("give one of --sample, --worst, --failed, --flagged and --by-turn/--by-context")
    if domain is not None and domain not in DOMAINS:
        fail(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    if dimension is not None and dimension.lower() not in DIMENSIONS:
        fail(f"unknown dimension {dimension!r}; expected one of {', '.join(DIMENSIONS)}")
    data = _load(run, output)
    judge_id = data.evaluation(judge).id
    if dimension is not None and data.evaluation(judge_id).kind == "rules":
        fail(
            f"the rule judge scores no rubric dimension ({', '.join(DIMENSIONS)}): --dimension needs an LLM "
            f"judge's evaluation (--judge llm, or its id)",
            key="bad_option",
        )
    if by_turn or by_context:
        choices: tuple[tuple[Axis, bool], ...] = (("turn", by_turn), ("context", by_context))
        axes = [axis for axis, chosen in choices if chosen]
        growth = run_growth(data, judge_id, resamples, seed)
        if fmt == "json":
            _emit(growth_view(growth, axes).model_dump_json(indent=2) + "\n", None)
        else:
            console.print(*run_growth_renderables(growth, axes), sep="\n")
        return
    if sample:
        if sample not in data.samples:
            fail(f"{data.name} has no sample {sample!r}{did_you_mean(sample, data.samples)}", key="unknown_sample")
        keys, matched = [sample], 1
    elif worst:
        keys = worst_keys(data, judge_id, worst, domain=domain, dimension=dimension.lower() if dimension else None)
        if not keys:
            fail("no scored samples match")
        matched = len(keys)
    elif failed or flagged:
        keys = (failed_keys if failed else flagged_keys)(data, judge_id, domain)
        matched = len(keys)
        what = "failed or unscored" if failed else "flagged"
        # In JSON, stdout holds the JSON alone: what the terminal view says first goes to stderr.
        say = err_console if fmt == "json" else console
        where = "" if domain is None else " in " + domain
        if not keys:
            say.print(f"{data.name}: no {what} samples{where} (judge {judge_id})")
        else:
            say.print(
                f"{data.name}: {plural(len(keys), what + ' sample')}{where} (judge {judge_id}); showing "
                f"{min(limit, len(keys))}"
            )
        if failed and (waiting := pending_count(data, judge_id, domain)):
            stopped = data.completeness(judge_id).stopped
            err_console.print(
                f"{waiting} not judged yet{f' ({stopped})' if stopped else ''}, not listed: waiting is not failing; "
                f"{resume_advice(data.store.path, data.manifest.made_by, stopped)}"
            )
        keys = keys[:limit]
        if fmt == "table" and not full:
            line = failure_line if failed else flag_line
            _print_lines([line(data, judge_id, key) for key in keys])
            return
        if not keys and fmt == "table":
            return
    else:
        if fmt == "json":
            summary = run_summary(data, judge_id, resamples, seed)
            _emit(summary.model_dump_json(indent=2) + "\n", None)
        else:
            console.print(*run_overview(data, judge_id, resamples, seed), sep="\n")
        return
    views = [sample_view(data, key, judge_id) for key in keys]
    if fmt == "json":
        selection = "sample" if sample else "worst" if worst else "failed" if failed else "flagged"
        listed = SampleList(run=data.name, judge=judge_id, selection=selection, matched=matched, samples=views)
        _emit(listed.model_dump_json(indent=2) + "\n", None)
        return
    for view in views:
        console.print(*sample_renderables(view, diff, max_chars), sep="\n")


def _print_lines(lines: list[SampleLine]) -> None:
    """Samples one per line, in columns: key, status, reason (never wrapped: a reason is already one line)."""
    keys = max((len(line.key) for line in lines), default=0)
    statuses = max((len(line.status) for line in lines), default=0)
    for line in lines:
        console.print(f"{line.key:<{keys}}  {line.status:<{statuses}}  {line.reason}".rstrip(), soft_wrap=True)


def report(
    runs: RunsArg = None,
    output: OutputOption = Path("results"),
    out: HtmlOutOpt = Path("report.html"),
    png: Annotated[
        Path | None, typer.Option("--png", help="Also write the charts as PNG files into this directory.")
    ] = None,
    worst: Annotated[int, typer.Option("--worst", min=0, help="Worst-scored samples shown per domain and run.")] = 3,
    judge: JudgeOpt = None,
    reference: Annotated[
        bool, typer.Option("--reference", help="Add the published leaderboard to the table, and its own chart.")
    ] = False,
    ci: Annotated[bool, typer.Option("--ci/--no-ci", help="95% bootstrap intervals in the leaderboard.")] = True,
    resamples: ResamplesOpt = DEFAULT_RESAMPLES,
    seed: SeedOpt = DEFAULT_SEED,
) -> None:
    """One self-contained HTML file: leaderboard, a chart per comparable group of runs, each run's scores along
    trajectories (by turn index and context length), the worst samples with diffs and judge reasons.

    Example: awbench report results/ -o report.html --png charts/
    """
    from awbench.analysis.charts import write_line_pngs, write_pngs
    from awbench.analysis.listing import locate_runs
    from awbench.analysis.report import build_report
    from awbench.analysis.runs import discover_runs

    refuse_run_outputs({"--out": out, "--png": png})
    roots = locate_runs(runs or [], output)
    stores, notes = discover_runs(roots)
    if not stores:
        _print_notes(notes)
        fail(f"no scored runs under {', '.join(str(d) for d in roots)}", key="no_scored_runs")
    result = build_report(
        stores, judge=judge, worst_n=worst, reference=reference, ci=ci, resamples=resamples, seed=seed, notes=notes
    )
    if not result.charts:
        _print_notes(result.notes)
        fail(_nothing_to_show(judge), EXIT_FAILURES, key="nothing_to_show")
    _write(out, result.html)
    charts = f"{plural(len(result.charts), 'leaderboard chart')}, {len(result.growth_charts)} along trajectories"
    console.print(f"wrote {out} ({plural(len(stores), 'run')}; {charts})", highlight=False)
    if png is not None:
        try:
            paths = write_pngs(result.charts, png) + write_line_pngs(result.growth_charts, png)
        except ImportError:
            fail("--png needs matplotlib: pip install matplotlib")
        console.print("wrote " + ", ".join(str(p) for p in paths), highlight=False, soft_wrap=True)
    _print_notes(result.notes)
