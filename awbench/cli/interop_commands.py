"""`awbench export` and `awbench import`: the reference evaluation script's file formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from awbench import pipeline
from awbench.cli.common import OutputOption, console, err_console, open_run
from awbench.cli.errors import pipeline_errors
from awbench.interop import export_official, import_official


def export(
    run: Annotated[str, typer.Argument(help="Run name under --output, or a run directory.")],
    official: Annotated[Path, typer.Option("--official", help="Directory to write predictions.jsonl and judged.jsonl into.")],
    judge: Annotated[Optional[str], typer.Option("--judge", help="Which LLM evaluation goes into judged.jsonl: a judge id. [default: the primary]")] = None,
    output: OutputOption = Path("results"),
) -> None:
    """Write a run in the reference eval.py's formats (predictions.jsonl with `gen`, judged.jsonl with scores).

    Example: awbench export my-run --official ./official/
    """
    store = open_run(run, output)
    with pipeline_errors():
        export = export_official(store, pipeline.run_samples(store), official, judge)
    console.print("wrote " + " and ".join(str(p) for p in export.written), highlight=False)
    for note in export.notes:
        err_console.print(note, highlight=False, soft_wrap=True)


def import_(
    file: Annotated[Path, typer.Argument(help="A reference predictions.jsonl or judged.jsonl.")],
    run_name: Annotated[str, typer.Option("--run-name", help="Name of the run to create.")],
    model: Annotated[Optional[str], typer.Option("--model", help="Model name to record (default: the file name).")] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model", help="Judge that produced judged.jsonl.")] = None,
    output: OutputOption = Path("results"),
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
) -> None:
    """Make a run from the reference script's files, to score, compare and rank them.

    Example: awbench import results/judged.jsonl --run-name qwen-aw-35b-official --judge-model gpt-5.2-2025-12-11
    """
    with pipeline_errors():
        store, predictions, judgments = import_official(file, run_name, output, model, judge_model, overwrite)
        primary = store.read_manifest().primary_judge
        scores = pipeline.score(store, pipeline.run_samples(store)).get(primary or "") if judgments else None
    console.print(f"imported {predictions} predictions and {judgments} judgments into {store.path}")
    if scores is not None:
        console.print(f"overall {scores.overall:.2f} (macro), {scores.overall_micro:.2f} (micro)" if scores.overall is not None else "nothing scored")


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
