"""`awbench export` and `awbench import`: the reference evaluation script's file formats, and inspect_ai logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from awbench.cli.common import OutputOption, console, err_console, fail, refuse_run_outputs
from awbench.cli.summary import overall_line
from awbench.data.problems import DataError, Problem
from awbench.interop.inspect_log import INSPECT_LOG_SUFFIXES, import_inspect_log
from awbench.interop.reference import export_reference, import_reference
from awbench.run import pipeline
from awbench.run.store import resolve_run


def export(
    run: Annotated[str, typer.Argument(help="Run name under --output, or a run directory.")],
    official: Annotated[
        Path | None, typer.Option("--official", help="Directory to write predictions.jsonl and judged.jsonl into.")
    ] = None,
    hf_eval_results: Annotated[
        Path | None,
        typer.Option(
            "--hf-eval-results",
            help="Directory (a model repository's checkout) to write the Hugging Face Hub's "
            "evaluation results into: .eval_results/agentworldbench.yaml, Overall and the seven domains.",
        ),
    ] = None,
    allow_subset: Annotated[
        bool,
        typer.Option(
            "--allow-subset", help="With --hf-eval-results: write a run on part of the benchmark, said in the notes."
        ),
    ] = False,
    hf_source_url: Annotated[
        str | None,
        typer.Option(
            "--hf-source-url", help="With --hf-eval-results: a link to the run's files or logs, shown as the source."
        ),
    ] = None,
    judge: Annotated[
        str | None, typer.Option("--judge", help="Which LLM evaluation to export: a judge id. \\[default: the primary]")
    ] = None,
    output: OutputOption = Path("results"),
) -> None:
    """Write a run in the reference eval.py's formats (predictions.jsonl with `gen`, judged.jsonl with scores),
    or as the Hugging Face Hub's evaluation results of a model (.eval_results/*.yaml), or both.

    Example: awbench export my-run --official ./official/

    Example: awbench export my-run --hf-eval-results ./my-model/ (then open it as a pull request on the model:
    hf upload ORG/MODEL ./my-model/.eval_results/agentworldbench.yaml .eval_results/agentworldbench.yaml --create-pr)
    """
    if official is None and hf_eval_results is None:
        fail(
            "give --official DIR (the reference script's files) or --hf-eval-results DIR (the Hub's evaluation "
            "results), or both",
            key="bad_option",
        )
    if hf_eval_results is None and (allow_subset or hf_source_url is not None):
        fail("--allow-subset and --hf-source-url go with --hf-eval-results", key="bad_option")
    refuse_run_outputs({"--official": official, "--hf-eval-results": hf_eval_results})
    store = resolve_run(run, output)
    if official is not None:
        export = export_reference(store, pipeline.run_samples(store), official, judge)
        written = " and ".join(str(p) for p in export.written)
        console.print(f"wrote {written}", highlight=False, markup=False, soft_wrap=True)
        for note in export.notes:
            err_console.print(note, highlight=False, markup=False, soft_wrap=True)
    if hf_eval_results is not None:
        from awbench.interop.hub_results import (
            export_hub_results,  # the leaderboard's comparability rules: numpy
        )

        results = export_hub_results(store, hf_eval_results, judge, allow_subset=allow_subset, source_url=hf_source_url)
        values = ", ".join(f"{e['dataset']['task_id']} {e['value']:.2f}" for e in results.entries)
        console.print(f"wrote {results.path} ({values})", highlight=False, markup=False, soft_wrap=True)
        for note in results.notes:
            err_console.print(note, highlight=False, markup=False, soft_wrap=True)
        inside = results.path.relative_to(hf_eval_results).as_posix()
        console.print(
            f"to open it as a pull request on the model's repository: hf upload ORG/MODEL {results.path} "
            f"{inside} --create-pr",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _print_problem(problem: Problem) -> None:
    style = "red" if problem.severity == "error" else "yellow"
    err_console.print(f"{problem.severity}: {problem}", style=style, highlight=False, markup=False, soft_wrap=True)


def import_(
    file: Annotated[
        Path, typer.Argument(help="A reference predictions.jsonl or judged.jsonl, or an inspect_ai log (.eval, .json).")
    ],
    run_name: Annotated[str, typer.Option("--run-name", help="Name of the run to create.")],
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model name to record (default: the run name; the rows do not name it)."),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option("--judge-model", help="Judge that produced judged.jsonl (recorded as the evaluation's judge)."),
    ] = None,
    output: OutputOption = Path("results"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a run of that name.")] = False,
) -> None:
    """Make a run from the reference script's files, or from an inspect_ai log of awbench/agentworldbench
    (.eval or .json), to score, compare and rank them.

    Every row is checked first: a file with any error imports nothing, and every problem is listed.

    Example: awbench import results/judged.jsonl --run-name qwen-aw-35b-official --judge-model gpt-5.2-2025-12-11

    Example: awbench import logs/2026-12-03T08-00-00_agentworldbench_abc.eval --run-name my-model-inspect
    """
    if file.suffix in INSPECT_LOG_SUFFIXES:
        _import_inspect_log(file, run_name, model, judge_model, output, overwrite)
        return
    try:
        result = import_reference(file, run_name, output, model, judge_model, overwrite)
    except DataError as error:
        for problem in error.problems:  # all of them: `awbench data validate` would not list the reference fields
            _print_problem(problem)
        fail(str(error), key=error.key)
    for problem in result.warnings:
        _print_problem(problem)
    for note in result.notes:
        err_console.print(note, style="yellow", highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"imported {result.predictions} predictions and {result.judgments} judgments into {result.store.path}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if result.judge_id is None:
        return
    failed = result.without_generation + result.judge_failed
    if failed:
        console.print(
            f"{failed} rows failed (failed 1.0: {result.without_generation} without a generation, "
            f"{result.judge_failed} the judge could not score): left out of the scores, as the reference "
            "leaves them out (failure policy exclude)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    console.print(overall_line(result.scores), highlight=False)


def _import_inspect_log(
    file: Path, run_name: str, model: str | None, judge_model: str | None, output: Path, overwrite: bool
) -> None:
    if judge_model is not None:
        fail(
            "--judge-model is for the reference script's judged.jsonl: an inspect log names its judge", key="bad_option"
        )
    result = import_inspect_log(file, run_name, output, model, overwrite)
    console.print(
        f"imported {result.predictions} predictions and {result.judgments} judgments into {result.run}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if result.failed_in_inspect:
        console.print(
            f"{result.failed_in_inspect} samples inspect could not run (an error in the log): failed generations",
            highlight=False,
            markup=False,
        )
    for note in result.notes:
        err_console.print(note, style="yellow", highlight=False, markup=False, soft_wrap=True)
    console.print(overall_line(result.scores), highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
