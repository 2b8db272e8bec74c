"""`awbench turing RUN` (the double-blind Turing test of a run's predictions) and `awbench judges RUN...` (judges'
Turing results side by side, for choosing one): thin wrappers over `awbench.run.turing` and
`awbench.analysis.turing`."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awbench.cli.analysis_commands import JsonFormat
from awbench.cli.common import OutputOption, console, err_console, fail, plural
from awbench.cli.fitting import FittingTable
from awbench.cli.options import JUDGE, OUTPUT, Options, command
from awbench.cli.progress import RichProgress
from awbench.cli.run_commands import RunArgument, cli_judge_settings
from awbench.cli.summary import MAX_REASONS_SHOWN, judge_cost
from awbench.config import JudgeSettings
from awbench.domains import DOMAIN_LABELS
from awbench.records import SCHEMA_VERSION
from awbench.run.store import RunStore, resolve_run

if TYPE_CHECKING:
    from awbench.analysis.judge_effects import JudgeEffects
    from awbench.analysis.turing import TuringResult
    from awbench.judging.choice.calls import ChoiceQuestion
    from awbench.judging.choice.judge import ChoiceAnswer
    from awbench.run.store import RunStore

DEFAULT_TURING_PROMPTS = "turing"
# The judge options without those that mean nothing to a choice question (the rule judge, a verdict's schema,
# several verdicts per prediction); --judge-prompts takes the Turing test's prompt sets.
TURING_JUDGE = replace(
    JUDGE,
    options=tuple(
        replace(
            o,
            help="'turing' (awbench's), a directory of that layout, or a Qwen-AgentWorld checkout (its TURING_JUDGE_USER_PROMPT).",
            default_text=DEFAULT_TURING_PROMPTS,
        )
        if o.name == "judge_prompts"
        else o
        for o in JUDGE.options
        if o.name not in ("judge", "rule_workers", "judge_structured", "judge_samples")
    ),
)


def turing_settings(options: Options, store: RunStore) -> JudgeSettings:
    """The judge options given, over `awbench run`'s defaults; the prompts default to the Turing test's own.
    Without any, the run's latest Turing test is resumed (a finished one is shown, its endpoint not needed); with
    none to resume, the judge must be named."""
    from awbench.run.turing import latest_turing_test

    given = options.settings(TURING_JUDGE, given_only=True)
    if not given and (latest := latest_turing_test(store)) is not None:
        err_console.print(
            f"the run's latest Turing test, by judge {latest.id} (judge options ask another)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        return latest.settings
    if not given:  # nothing to resume, and no judge asked for
        fail(
            f"no Turing test of {store.name} yet: run `awbench turing {store.name} --judge-model ...`",
            key="no_turing_test",
        )
    if given.get("prompts") == "rubric":
        fail(
            "--judge-prompts rubric is the rubric's prompt set: the Turing test takes 'turing', a directory, "
            "or a Qwen-AgentWorld checkout",
            key="bad_option",
        )
    settings = cli_judge_settings(None, options)
    return settings.model_copy(update={"prompts": given.get("prompts", DEFAULT_TURING_PROMPTS)})


@command(TURING_JUDGE, OUTPUT.only("output"))
def turing(
    run: RunArgument,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Seed of where each prediction's real observation is shown (A or B), with the evaluation's secret. \\[default: the run's --seed, else 0]",
        ),
    ] = None,
    both_orders: Annotated[
        bool, typer.Option("--both-orders", help="Ask each prediction both ways (real as A, then as B).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the calls, tokens and cost still to spend, and spend nothing.")
    ] = False,
    fmt: JsonFormat = "table",
    *,
    options: Options,
) -> None:
    """The double-blind Turing test: for each prediction of RUN, the judge is shown the real observation and the
    prediction as Response A and B (the real one's place drawn per prediction) and asked which is real. Kept
    with the run as its own evaluation (turing/<judge id>/), resumable; reports the judge's accuracy, its
    position bias and the model's fool rate. Without judge options it resumes the run's latest Turing test: a
    finished one is shown again without a call, its endpoint not needed.

    Example: awbench turing my-run --judge-model gpt-5.2-2025-12-11 --max-cost 5
    """
    from awbench.run.turing import turing_test

    store = resolve_run(run, options.values["output"])
    settings = turing_settings(options, store)
    outcome = asyncio.run(turing_test(store, settings, seed, both_orders, RichProgress(), dry_run))
    if outcome.estimate is not None:
        cost = outcome.estimate
        console.print(
            f"dry run: {plural(len(outcome.questions), 'question')}; {cost.calls} judge calls, ~{cost.prompt_tokens:,} prompt "
            f"and ~{cost.completion_tokens:,} completion tokens; estimated judge cost "
            f"{judge_cost(cost)}. Nothing was spent.",
            highlight=False,
            soft_wrap=True,
        )
        return
    result = _result(outcome.judge_id, [store.name], outcome.kept, outcome.predictable)
    _print_result(result, fmt)
    if result.predictable_positions:
        err_console.print(
            f"warning: this Turing test was begun before positions were drawn from a secret: where the real "
            f"observation is shown follows the seed and the sample key, which a world model can know. Remove "
            f"{outcome.path} to ask it afresh.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    raise typer.Exit(_exit_code(outcome.questions, outcome.answers, outcome.max_failure_rate))


def judges(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Runs (names under --output, or directories) the judges took the Turing test on, or scored."
        ),
    ],
    output: OutputOption = Path("results"),
    fmt: JsonFormat = "table",
) -> None:
    """Judges' Turing results on the same runs side by side, ranked by accuracy: position bias, parse
    failures, cost per 1,000 questions, and where two judges also scored the same predictions with the rubric,
    their agreement. With two or more LLM judges of the same runs: how much the judge decides, each judge's
    offset against the others, the rank agreement of their leaderboards and possible self-preference.

    Example: awbench judges my-run other-run
    """
    from awbench.analysis.turing import fmt_rate, turing_result
    from awbench.run.turing import read_answers, turing_evaluations

    stores = [resolve_run(run, output) for run in runs]
    answers: dict[str, list[Any]] = {}
    taken: dict[str, list[str]] = {}
    models: dict[tuple[str, str], str] = {}  # (run, judge id) -> the judge's model
    predictable: set[str] = set()  # judge ids with an evaluation whose positions follow the seed alone
    for store in stores:
        for evaluation in turing_evaluations(store):
            info = evaluation.read_info()
            models[(store.name, evaluation.id)] = info.settings.model
            if info.positions == "seed":
                predictable.add(evaluation.id)
            taken.setdefault(evaluation.id, []).append(store.name)
            answers.setdefault(evaluation.id, []).extend(
                a.model_copy(update={"meta": a.meta | {"run": store.name}}) for a in read_answers(evaluation.path)
            )
    effects = _judge_effects(stores)
    if not answers and effects is None:
        fail(
            f"no Turing test in {', '.join(s.name for s in stores)}, nor two LLM judges of two of them: run "
            "`awbench turing RUN --judge-model ...`, or `awbench judge RUN --judge-model ...` with another judge"
        )
    results = sorted(
        (turing_result(j, taken[j], answers[j], j in predictable) for j in answers),
        key=lambda r: (r.accuracy.value is None, -(r.accuracy.value or 0.0), r.judge),
    )
    agreement = _rubric_agreement(stores, [r.judge for r in results], models)
    if fmt == "json":
        payload = {"judges": [r.model_dump() for r in results], "rubric_agreement": agreement}
        _print_json(payload | {"judge_effects": effects.model_dump() if effects else None})
        return
    if effects is not None:
        from awbench.cli.judge_effects_views import judge_effects_renderables

        accuracy = {models[(run, r.judge)]: fmt_rate(r.accuracy) for r in results for run in r.runs}
        console.print(*judge_effects_renderables(effects, accuracy), sep="\n")
    if not results:
        return
    table = FittingTable(title="Judges on the Turing test, most accurate first (accuracy and rates in %)")
    for name in (
        "judge",
        "accuracy [95% CI]",
        "real A",
        "real B",
        "A chosen",
        "parse failures",
        "questions",
        "$ / 1,000",
    ):
        if name == "judge":
            table.add_column(name, no_wrap=True)  # an id, never cut
        else:
            table.add_column(name, justify="right", no_wrap=True)
    for r in results:
        bias = r.position_bias
        table.add_row(
            r.judge, fmt_rate(r.accuracy), _pct(bias.real_a.value), _pct(bias.real_b.value), _pct(bias.a_share),
            str(r.parse_failures), str(r.questions), "–" if r.cost_per_1000 is None else f"{r.cost_per_1000:.2f}",
        )  # fmt: skip
    console.print(table)
    if agreement:
        agree = FittingTable(title="Rubric agreement where two judges scored the same predictions")
        for name in ("judge A", "judge B", "run"):
            agree.add_column(name, no_wrap=True)
        for name in ("n", "Spearman"):
            agree.add_column(name, justify="right", no_wrap=True)
        for a in agreement:
            rho = "–" if a["spearman"] is None else f"{a['spearman']:.3f}"
            agree.add_row(a["judge_a"], a["judge_b"], a["run"], str(a["n"]), rho)
        console.print(agree)


def _judge_effects(stores: list[RunStore]) -> JudgeEffects | None:
    """How much the judge decides, when two or more LLM judges scored two or more of the runs (only then are the
    runs' data loaded)."""
    from awbench.analysis.judge_effects import run_judge_effects
    from awbench.analysis.runs import load_run_data

    judged = [s for s in stores if any(e.read_info().kind == "llm" for e in s.evaluations())]
    judges = {e.id for s in judged for e in s.evaluations() if e.read_info().kind == "llm"}
    if len(judged) < 2 or len(judges) < 2:
        return None
    return run_judge_effects([load_run_data(s) for s in judged])


def _rubric_agreement(
    stores: list[Any], judge_ids: list[str], models: dict[tuple[str, str], str]
) -> list[dict[str, Any]]:
    """For each pair of Turing judges on a run, the rubric evaluations of that run by the same two models
    (`compare`'s judge-vs-judge statistics), when the run has both."""
    from awbench.analysis.compare import judge_agreement
    from awbench.analysis.runs import load_run_data

    out = []
    for store in stores:
        rubric: dict[str, str] = {}  # model -> the run's first LLM rubric evaluation by it (the primary first)
        for evaluation in store.evaluations():
            info = evaluation.read_info()
            if info.kind == "llm":
                rubric.setdefault(info.settings.model, evaluation.id)
        here = [j for j in judge_ids if (store.name, j) in models]
        pairs = [(a, b) for i, a in enumerate(here) for b in here[i + 1 :]]
        found = [(a, b, rubric.get(models[(store.name, a)]), rubric.get(models[(store.name, b)])) for a, b in pairs]
        found = [f for f in found if f[2] and f[3] and f[2] != f[3]]
        if not found:
            continue
        data = load_run_data(store)
        for a, b, ra, rb in found:
            assert ra is not None and rb is not None
            ag = judge_agreement(data, data, ra, rb)
            out.append({"judge_a": a, "judge_b": b, "run": store.name, "rubric_a": ra, "rubric_b": rb,
                        "n": ag.n, "spearman": ag.spearman})  # fmt: skip
    return out


def _result(judge_id: str, runs: list[str], answers: list[Any], predictable: bool) -> TuringResult:
    from awbench.analysis.turing import turing_result

    return turing_result(judge_id, runs, answers, predictable)


def _print_json(document: dict[str, Any]) -> None:
    """One JSON document, `schema_version` first, as every command's --format json."""
    payload = {"schema_version": SCHEMA_VERSION, **document}
    console.print(json.dumps(payload, indent=2), markup=False, highlight=False, soft_wrap=True)


def _print_result(r: TuringResult, fmt: str) -> None:
    from awbench.analysis.turing import fmt_rate

    if fmt == "json":
        _print_json(r.model_dump())
        return
    cost = "" if r.cost_usd is None else f"; cost ${r.cost_usd:.4f}"
    table = FittingTable(
        title=f"Turing test of {', '.join(r.runs)} by judge {r.judge}: {plural(r.questions, 'question')}, "
        f"{r.parse_failures} without a choice{cost}"
    )
    for name in ("domain", "judge accuracy % [95% CI]", "model fool rate % [95% CI]", "n"):
        if name == "domain":
            table.add_column(name, overflow="fold")
        else:
            table.add_column(name, justify="right", no_wrap=True)
    for domain, d in r.domains.items():
        table.add_row(DOMAIN_LABELS.get(domain, domain), fmt_rate(d.accuracy), fmt_rate(d.fool_rate), str(d.accuracy.n))
    table.add_row("Overall", fmt_rate(r.accuracy), fmt_rate(r.fool_rate), str(r.accuracy.n), style="bold")
    console.print(table)
    bias = r.position_bias
    console.print(
        f"position bias: accuracy {_pct(bias.real_a.value)}% when the real observation is A "
        f"(n {bias.real_a.n}), {_pct(bias.real_b.value)}% when it is B (n {bias.real_b.n}); "
        f"A chosen in {_pct(bias.a_share)}% of answers",
        highlight=False,
        soft_wrap=True,
    )
    if r.steering_suspected:
        err_console.print(
            f"steering suspected in {r.steering_suspected} answers: they quote a choice found in a response "
            "(a prediction that carries its own answer); a quoted choice is never read as the judge's"
        )


def _exit_code(questions: list[ChoiceQuestion], answers: dict[str, ChoiceAnswer], max_failure_rate: float) -> int:
    """`run`'s exit rule over this command's questions: 1 when none got a choice, or more than the run's
    --max-failure-rate got none (each reason is said on stderr)."""
    from awbench.run.pipeline import measurement_exit_code

    unanswered = [a for q in questions if (a := answers.get(q.key)) is None or a.choice is None]
    total, failed = len(questions), len(unanswered)
    code = measurement_exit_code(failed < total, total, failed, max_failure_rate)
    if not total:
        err_console.print("nothing was asked: the run has no successful prediction to show the judge", style="red")
    elif failed:
        err_console.print(
            f"{failed} of {total} questions had no choice after every attempt (tolerated: {max_failure_rate:.0%}); "
            "left out of the rates",
            style="red" if code else "yellow",
            soft_wrap=True,
        )
        errors = Counter(a.error for a in unanswered if a is not None and a.error)
        for error, n in errors.most_common(MAX_REASONS_SHOWN):
            err_console.print(f"  {n} × {error}", soft_wrap=True)
    return code


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def register(app: typer.Typer) -> None:
    app.command()(turing)
    app.command()(judges)
