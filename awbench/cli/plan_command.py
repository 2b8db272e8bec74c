"""`awbench plan`: the smallest difference a paired comparison on the full benchmark detects, and the K and J that
detect a given one at the least judge cost. A thin wrapper over `awbench.analysis.planning`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, NamedTuple

import typer
from rich.console import RenderableType
from rich.text import Text

from awbench.analysis.planning import (  # pure: no numpy
    Figures,
    Plan,
    completed,
    given_figures,
    paired_item_var,
    run_figures,
)
from awbench.analysis.planning import plan as make_plan
from awbench.cli.analysis_commands import JsonFormat, JudgeOpt
from awbench.cli.common import OutputOption, console, fail
from awbench.cli.fitting import FittingTable


class Planned(NamedTuple):
    """What a plan starts from: the figures, where they come from, the K and J of the run, what it does not see."""

    figures: dict[str, Figures]
    source: str
    generations: int
    verdicts: int
    unseen: Sequence[str]
    item_correlation: float | None  # None: measured (two runs)


def plan(
    run: Annotated[str | None, typer.Argument(help="A run whose variance components to plan from.")] = None,
    run_b: Annotated[
        str | None, typer.Argument(help="A second run on the same data: the item correlation is then measured.")
    ] = None,
    output: OutputOption = Path("results"),
    judge: JudgeOpt = None,
    generations: Annotated[
        int | None, typer.Option("--generations", min=1, help="K to plan for. \\[default: the run's, else 1]")
    ] = None,
    judge_samples: Annotated[
        int | None, typer.Option("--judge-samples", min=1, help="J to plan for. \\[default: the run's, else 1]")
    ] = None,
    difference: Annotated[
        float | None,
        typer.Option("--difference", min=0.0, help="Also: the K and J that detect this difference (points, > 0)."),
    ] = None,
    item_correlation: Annotated[
        float,
        typer.Option(
            "--item-correlation",
            min=-1.0,
            max=1.0,
            help="Assumed correlation of two models' sample scores (measured when two runs are given).",
        ),
    ] = 0.5,
    judge_sd: Annotated[float | None, typer.Option("--judge-sd", min=0.0, help="Judge SD (0..100), no run.")] = None,
    generation_sd: Annotated[
        float | None, typer.Option("--generation-sd", min=0.0, help="Generation SD (0..100), no run.")
    ] = None,
    item_sd: Annotated[float | None, typer.Option("--item-sd", min=0.0, help="Item SD (0..100), no run.")] = None,
    fmt: JsonFormat = "table",
) -> None:
    """The smallest Overall difference a paired comparison of two models on the full benchmark (2,170 samples)
    detects at 80% power and 5% two-sided, for K generations and J verdicts, from a run's variance components (or
    two runs', or the figures given); and with --difference, the K and J that detect it at the least judge cost
    (K x J verdicts per sample and model). Method: docs/statistics.md.

    Example: awbench plan my-run --difference 0.5; awbench plan run-a run-b; awbench plan --judge-sd 8
    --generation-sd 6 --item-sd 20 --generations 2 --judge-samples 2
    """
    given = (judge_sd, generation_sd, item_sd)
    numbers = {"--difference": difference, "--item-correlation": item_correlation, "--judge-sd": judge_sd}
    for name, value in {**numbers, "--generation-sd": generation_sd, "--item-sd": item_sd}.items():
        if value is not None and not math.isfinite(value):
            fail(f"{name}: must be a finite number, got {value:g}")
    if difference == 0:
        fail("--difference: must be greater than 0, got 0")
    if run is None and None in given:
        fail("give a run, or all of --judge-sd, --generation-sd and --item-sd")
    if run is not None and any(g is not None for g in given):
        fail("--judge-sd, --generation-sd and --item-sd replace a run's figures: give a run or them, not both")
    if run is None:
        start = _given(judge_sd or 0.0, generation_sd or 0.0, item_sd or 0.0, item_correlation)
    else:
        start = _from_runs(run, run_b, output, judge, item_correlation)
    result = make_plan(
        start.figures,
        start.source,
        generations or start.generations,
        judge_samples or start.verdicts,
        difference=difference,
        item_correlation=start.item_correlation,
        unseen=start.unseen,
    )
    if fmt == "json":
        console.print(result.model_dump_json(indent=2), soft_wrap=True)
    else:
        console.print(*plan_renderables(result), sep="\n")


def _given(judge: float, generation: float, item: float, item_correlation: float) -> Planned:
    source = f"the figures given: judge SD {judge:g}, generation SD {generation:g}, item SD {item:g}"
    return Planned(given_figures(judge, generation, item, item_correlation), source, 1, 1, [], item_correlation)


def _from_runs(run: str, run_b: str | None, output: Path, judge: str | None, item_correlation: float) -> Planned:
    from awbench.analysis.compare import paired_differences
    from awbench.analysis.runs import load_run_data
    from awbench.run.store import resolve_run

    a = load_run_data(resolve_run(run, output))
    judge_a = a.evaluation(judge).id
    variance_a = a.variance(judge_a)
    b = variance_b = None
    if run_b is not None:
        b = load_run_data(resolve_run(run_b, output))
        if b.manifest.data_fingerprint != a.manifest.data_fingerprint:
            fail(f"{a.name} and {b.name} were run on different data: their samples do not pair", key="other_data")
        judge_b = b.evaluation(judge if judge is not None else a.evaluation(judge_a).kind).id
        variance_b = b.variance(judge_b)
    if variance_a is None or (b is not None and variance_b is None):
        fail(f"{a.name if variance_a is None else run_b}: no scored samples to plan from")
    paired = None
    if b is not None and variance_b is not None:
        differences = paired_differences(a, b, judge_a, judge_b)
        paired = {
            d: found
            for d, diffs in differences.items()
            if d in variance_a.domains
            and d in variance_b.domains
            and (found := paired_item_var(diffs, variance_a.domains[d], variance_b.domains[d])) is not None
        }
    try:
        figures, filled = completed(run_figures(variance_a, variance_b, item_correlation, paired))
    except ValueError as error:
        fail(f"{a.name}: {error}")
    unseen = sorted(set(variance_a.unseen) | set(variance_b.unseen if variance_b else []))
    source = f"run {a.name} (judge {judge_a})" + (f" against run {b.name}" if b is not None else "")
    if filled:
        source += f"; {', '.join(filled)} without figures of their own take the mean of the others'"
    k = max(variance_a.generations, variance_b.generations if variance_b else 1)
    j = max(variance_a.verdicts, variance_b.verdicts if variance_b else 1)
    return Planned(figures, source, k, j, unseen, None if paired else item_correlation)


def plan_renderables(p: Plan) -> list[RenderableType]:
    samples = sum(p.samples.values())
    head = (
        f"A paired comparison of two models on the full benchmark ({samples:,} samples), {p.power:.0%} power, "
        f"{p.alpha:.0%} two-sided; figures from {p.source}"
        + ("" if p.item_correlation is None else f"; item correlation {p.item_correlation:g} (assumed)")
    )
    current = p.current
    out: list[RenderableType] = [
        Text(head),
        Text(
            f"At K = {current.generations}, J = {current.verdicts}: the smallest detectable Overall difference is "
            f"{current.detectable:.2f} points (standard error {current.se:.2f})",
            style="bold",
        ),
    ]
    table = FittingTable(
        title="Smallest detectable Overall difference (points) by K generations and J verdicts",
        caption="judge cost: K x J verdicts per sample and model (2 K J x the samples for a comparison)",
    )
    table.add_column("K", justify="right")
    verdicts = sorted({d.verdicts for d in p.designs})
    for j in verdicts:
        table.add_column(f"J = {j}", justify="right", no_wrap=True)
    for k in sorted({d.generations for d in p.designs}):
        cells = {d.verdicts: d for d in p.designs if d.generations == k}
        table.add_row(str(k), *(f"{cells[j].detectable:.2f} ({cells[j].judge_calls})" for j in verdicts))
    out.append(table)
    out.append(Text(f"The items alone allow {p.floor:.2f} points, however large K and J"))
    if p.target is not None and p.cheapest is not None:
        best = p.cheapest
        out.append(
            Text(
                f"To detect {p.target:.2f} points: K = {best.generations}, J = {best.verdicts} "
                f"({best.judge_calls} judge calls per sample and model; detects {best.detectable:.2f})",
                style="bold",
            )
        )
    out += [Text(f"note: {note}", style="yellow") for note in p.notes]
    return out


def register(app: typer.Typer) -> None:
    app.command()(plan)
