"""`awbench run | infer | judge | score`: thin wrappers that build a RunConfig and call the pipeline."""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, get_args

import typer

from awbench.backends import infer_backend_name
from awbench.cli.common import OutputOption, console, err_console, fail, open_run, refuse_run_outputs, user_errors
from awbench.cli.errors import pipeline_errors
from awbench.cli.progress import RichProgress
from awbench.cli.summary import print_estimate, print_summary
from awbench.config import (
    DataSettings,
    JudgeSettings,
    ModelSettings,
    RunConfig,
    ScoringSettings,
    default_run_name,
)
from awbench.run import pipeline
from awbench.run.evaluations import resolve_judge
from awbench.run.reparse import reparse_judgments
from awbench.run.rewards import write_rewards


def _json_object(value: str | None, option: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        fail(f"{option}: not valid JSON ({error.msg} at character {error.pos}): {value}")
    if not isinstance(parsed, dict):
        fail(f"{option}: expected a JSON object, got {type(parsed).__name__}")
    return parsed


def _engine_args(pairs: list[str], option: str = "--engine-arg") -> dict[str, Any]:
    """KEY=VALUE pairs; values that parse as JSON (true, 4, {...}) are passed typed, others as strings."""
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"{option} expects KEY=VALUE, got {pair!r}")
        try:
            args[key.replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            args[key.replace("-", "_")] = value
    return args


def _csv(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


# Options shared by several commands.
DataOpt = Annotated[str, typer.Option("--data", help="'sample' (bundled), a directory of *_test.jsonl, a JSONL file, or a Hugging Face dataset id.")]
DomainsOpt = Annotated[Optional[list[str]], typer.Option("--domains", help="Only these domains (repeat or comma-separate).")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", min=1, help="At most N samples per domain.")]
IdsOpt = Annotated[Optional[list[str]], typer.Option("--ids", help="Only these ids or sample keys (repeat or comma-separate).")]
SampleOpt = Annotated[Optional[int], typer.Option("--sample", min=1, help="A stratified random subset of N samples.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of --sample, and of sampling (each sample gets its own seed).")]
SkipInvalidOpt = Annotated[bool, typer.Option("--skip-invalid", help="Leave invalid records out instead of refusing the data.")]
ModelOpt = Annotated[str, typer.Option("--model", help="A model path or id, or baseline:oracle|last-observation|empty.")]
BackendOpt = Annotated[Optional[Literal["baseline", "openai", "vllm"]], typer.Option("--backend", help="Default: from --model and --base-url.")]
BaseUrlOpt = Annotated[Optional[list[str]], typer.Option("--base-url", help="OpenAI-compatible endpoint; repeat to spread requests over several.")]
ApiKeyEnvOpt = Annotated[Optional[str], typer.Option("--api-key-env", help="Environment variable that holds the endpoint's API key.")]
RunNameOpt = Annotated[Optional[str], typer.Option("--run-name", help="Run directory name (default: from model and judge).")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an existing run of that name.")]
RetryFailedOpt = Annotated[bool, typer.Option("--retry-failed", help="Also redo permanent failures (overlength, refusals, unusable verdicts); transient ones are always redone.")]


# Candidate sampling and engine options.
TemperatureOpt = Annotated[float, typer.Option("--temperature", min=0.0)]
TopPOpt = Annotated[Optional[float], typer.Option("--top-p", min=0.0, max=1.0)]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Generation budget per sample, thinking included.")]
GenerationsOpt = Annotated[int, typer.Option("--generations", min=1, help="Independent generations per sample (distinct seeds), each judged; a sample scores their mean.")]
ExtraBodyOpt = Annotated[Optional[str], typer.Option("--extra-body", help='JSON merged into each request, e.g. \'{"chat_template_kwargs": {"enable_thinking": false}}\'.')]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight (openai backend).")]
TimeoutOpt = Annotated[float, typer.Option("--request-timeout", min=0.001, help="Seconds per request before it is retried.")]
MaxRetriesOpt = Annotated[int, typer.Option("--max-retries", min=0, help="At most 1 + N calls per generation (transient errors only are retried).")]
MaxModelLenOpt = Annotated[Optional[int], typer.Option("--max-model-len", min=1, help="Context window (vllm backend).")]
DtypeOpt = Annotated[str, typer.Option("--dtype")]
EngineArgOpt = Annotated[Optional[list[str]], typer.Option("--engine-arg", help="KEY=VALUE passed to vllm.LLM, repeatable.")]
OverlengthOpt = Annotated[Literal["skip", "truncate-history"], typer.Option("--overlength", help="For prompts over the context window.")]
TPOpt = Annotated[int, typer.Option("--tensor-parallel-size", min=1)]
DPOpt = Annotated[int, typer.Option("--data-parallel-size", min=1)]
GpuMemOpt = Annotated[float, typer.Option("--gpu-memory-utilization", min=0.01, max=1.0, help="On CPU: the share of RAM for the KV cache.")]
TrustOpt = Annotated[bool, typer.Option("--trust-remote-code")]
PrefixOpt = Annotated[bool, typer.Option("--prefix-caching/--no-prefix-caching")]
ExecutorOpt = Annotated[Optional[str], typer.Option("--distributed-executor-backend", help="e.g. ray, for multi-node models.")]
BatchOpt = Annotated[int, typer.Option("--batch-size", min=1, help="Samples per offline vLLM batch (results are saved after each).")]

# Judge options. None means: `awbench run`, the default shown (JudgeSettings' own); `awbench judge RUN`, what the
# run's primary judge has (its help says so: `_defaults_to`).
_JUDGE = JudgeSettings()
_SCORING = ScoringSettings()


def _default(text: object) -> str:
    """A help text's default, escaped: rich would take `[default: ...]` for markup and drop it."""
    return f" \\[default: {text}]"


JudgeKindOpt = Annotated[Optional[Literal["llm", "rules", "both"]], typer.Option("--judge", help="llm, rules (offline, free) or both." + _default(_JUDGE.kind))]
JudgeModelOpt = Annotated[Optional[str], typer.Option("--judge-model", help="The judge model." + _default(f"{_JUDGE.model}, the published setting"))]
JudgeUrlOpt = Annotated[Optional[str], typer.Option("--judge-base-url", help="OpenAI-compatible judge endpoint." + _default("OPENAI_BASE_URL, else OpenAI"))]
JudgeKeyOpt = Annotated[Optional[str], typer.Option("--judge-api-key-env", help="Variable holding the judge's API key; when given, it must be set." + _default("OPENAI_API_KEY"))]
JudgeTempOpt = Annotated[Optional[float], typer.Option("--judge-temperature", min=0.0, help="Judge sampling temperature." + _default(_JUDGE.temperature))]
JudgeMaxTokOpt = Annotated[Optional[int], typer.Option("--judge-max-tokens", min=1, help="Completion budget per verdict." + _default(_JUDGE.max_tokens))]
JudgeEffortOpt = Annotated[Optional[str], typer.Option("--judge-reasoning-effort", help="e.g. low, medium, high." + _default("the model's"))]
JudgeExtraOpt = Annotated[Optional[str], typer.Option("--judge-extra-body", help="JSON merged into each judge request." + _default("none"))]
JudgeConcOpt = Annotated[Optional[int], typer.Option("--judge-concurrency", min=1, help="Judge requests in flight." + _default(_JUDGE.concurrency))]
RuleWorkersOpt = Annotated[Optional[int], typer.Option("--rule-workers", min=0, help="Worker processes for a large run's rule scoring (--judge rules or both); 0: all in this process, which holds less memory." + _default("one per CPU, at most 4"))]
JudgeRetriesOpt = Annotated[Optional[int], typer.Option("--judge-max-retries", min=0, help="At most 1 + N calls per verdict, shared by transport retries and re-asks of unusable verdicts." + _default(_JUDGE.max_retries))]
JudgeTimeoutOpt = Annotated[Optional[float], typer.Option("--judge-request-timeout", min=0.001, help="Seconds per judge request before it is retried." + _default(f"{_JUDGE.request_timeout:g}"))]
JudgeStructOpt = Annotated[Optional[bool], typer.Option("--judge-structured/--no-judge-structured", help="Ask for a JSON-schema verdict." + _default("no-judge-structured" if not _JUDGE.structured else "judge-structured"))]
JudgeSamplesOpt = Annotated[Optional[int], typer.Option("--judge-samples", min=1, help="Independent verdicts per prediction." + _default(_JUDGE.samples))]
JudgePriceInOpt = Annotated[Optional[float], typer.Option("--judge-price-in", min=0.0, help="USD per million prompt tokens." + _default("known models' list price"))]
JudgePriceOutOpt = Annotated[Optional[float], typer.Option("--judge-price-out", min=0.0, help="USD per million completion tokens." + _default("known models' list price"))]
JudgePromptsOpt = Annotated[Optional[str], typer.Option("--judge-prompts", help="'rubric', a directory of our layout, or a Qwen-AgentWorld checkout (the published protocol, byte for byte)." + _default(_JUDGE.prompts))]
JudgeTemplateOpt = Annotated[Optional[str], typer.Option("--judge-template", help="User-prompt template file (our layout only)." + _default("the prompt set's"))]
JudgeBackendOpt = Annotated[Optional[Literal["openai", "vllm"]], typer.Option("--judge-backend", help="openai: an OpenAI-compatible endpoint; vllm: --judge-model (a path or id) in this process, with vLLM's offline engine." + _default(_JUDGE.backend))]
# The in-process judge's engine (--judge-backend vllm), as the candidate's options.
JudgeMaxModelLenOpt = Annotated[Optional[int], typer.Option("--judge-max-model-len", min=1, help="The judge's context window (vllm judge)." + _default("the model's"))]
JudgeDtypeOpt = Annotated[Optional[str], typer.Option("--judge-dtype", help="vllm judge." + _default(_JUDGE.engine.dtype))]
JudgeEngineArgOpt = Annotated[Optional[list[str]], typer.Option("--judge-engine-arg", help="KEY=VALUE passed to the judge's vllm.LLM, repeatable." + _default("none"))]
JudgeTPOpt = Annotated[Optional[int], typer.Option("--judge-tensor-parallel-size", min=1, help="vllm judge." + _default(_JUDGE.engine.tensor_parallel_size))]
JudgeGpuMemOpt = Annotated[Optional[float], typer.Option("--judge-gpu-memory-utilization", min=0.0, max=1.0, help="vllm judge; on CPU the share of RAM." + _default(_JUDGE.engine.gpu_memory_utilization))]
JudgeBatchOpt = Annotated[Optional[int], typer.Option("--judge-batch-size", min=1, help="Verdict prompts per offline vLLM batch." + _default(_JUDGE.engine.batch_size))]
# The OpenAI Batch API (awbench.judging.batch): how the judge calls travel; the judge id stays the same.
JudgeBatchApiOpt = Annotated[Optional[bool], typer.Option("--judge-batch/--no-judge-batch", help="Send the judge calls through the OpenAI Batch API: half the price, results within 24 h. Same judge id and verdicts as direct calls; interrupting is safe, the same command resumes the batches." + _default("no-judge-batch"))]
JudgeBatchFallbackOpt = Annotated[Optional[Literal["batch", "direct"]], typer.Option("--judge-batch-fallback", help="How verdicts a batch left unanswered or unusable are asked again (within --judge-max-retries): in a new batch, or by direct calls at the full price." + _default(_JUDGE.batch_fallback))]
JudgeBatchPollOpt = Annotated[Optional[float], typer.Option("--judge-batch-poll-interval", min=0.001, help="Seconds between looks at the batches in flight." + _default(f"{_JUDGE.batch_poll_interval:g}"))]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", min=0.0, help="Stop (resumably) before judge spend would pass this many USD." + _default("no limit"))]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the calls, tokens and cost still to spend, and spend nothing.")]

# Scoring options (`awbench score RUN`: the run's, `_defaults_to`).
FailurePolicyOpt = Annotated[Optional[Literal["minimum", "exclude"]], typer.Option("--failure-policy", help="minimum: failed generations score 0; exclude: left out, as the reference script." + _default(_SCORING.failure_policy))]
MaxFailureRateOpt = Annotated[Optional[float], typer.Option("--max-failure-rate", min=0.0, max=1.0, help="Exit 1 when failures exceed this share." + _default(_SCORING.max_failure_rate))]
_DEFAULT_IN_HELP = re.compile(r" \\\[default: [^\]]*\]$")


def _defaults_to(parameter: inspect.Parameter, text: str) -> inspect.Parameter:
    """The same option, its help saying that its default is `text` (the run's own setting, for commands on a run)."""
    base, info = get_args(parameter.annotation)
    info = copy.copy(info)
    info.help = _DEFAULT_IN_HELP.sub("", info.help or "") + _default(text)
    return parameter.replace(annotation=Annotated[base, info])



def _judge_settings(base: JudgeSettings | None, options: dict[str, Any]) -> JudgeSettings:
    """The judge settings a command asks for: the given `--judge-*` options over `base` (the run's, or the defaults)."""
    given = {JUDGE_FIELDS[name]: value for name, value in options.items() if name in JUDGE_FIELDS and value is not None}
    if "extra_body" in given:
        given["extra_body"] = _json_object(given["extra_body"], "--judge-extra-body")
    if "base_url" in given:  # an endpoint means the HTTP judge, as --base-url means the openai backend
        if given.setdefault("backend", "openai") == "vllm":
            fail("--judge-base-url is for --judge-backend openai: the vllm judge runs in this process")
    engine = {JUDGE_ENGINE_FIELDS[name]: value for name, value in options.items() if name in JUDGE_ENGINE_FIELDS and value is not None}
    if "engine_args" in engine:
        engine["engine_args"] = _engine_args(engine["engine_args"], "--judge-engine-arg")
    base = base or JudgeSettings()
    llm_options = ["--" + name.replace("_", "-") for name, value in options.items() if value is not None
                   and (name in JUDGE_ENGINE_FIELDS or JUDGE_FIELDS.get(name) not in (None, *RULE_JUDGE_FIELDS))]
    if llm_options and given.get("kind", base.kind) == "rules":
        if "kind" in given:
            fail(f"{', '.join(llm_options)} set an LLM judge, which --judge rules does not use: use --judge llm or both")
        given["kind"] = "llm"  # a rule-judged run's judge options ask for an LLM judge beside the rule judge
    values = base.model_dump()
    with user_errors(ValueError, names=OPTION_NAMES):
        return JudgeSettings.model_validate({**values, **given, "engine": {**values["engine"], **engine}})


# CLI parameter -> JudgeSettings field.
JUDGE_FIELDS = {
    "judge": "kind", "judge_model": "model", "judge_base_url": "base_url", "judge_api_key_env": "api_key_env",
    "judge_temperature": "temperature", "judge_max_tokens": "max_tokens", "judge_reasoning_effort": "reasoning_effort",
    "judge_extra_body": "extra_body", "judge_concurrency": "concurrency", "judge_max_retries": "max_retries",
    "judge_request_timeout": "request_timeout",
    "judge_structured": "structured", "judge_samples": "samples", "judge_price_in": "price_in",
    "judge_price_out": "price_out", "judge_prompts": "prompts", "judge_template": "template", "max_cost": "max_cost",
    "judge_backend": "backend",
    "judge_batch": "batch", "judge_batch_fallback": "batch_fallback", "judge_batch_poll_interval": "batch_poll_interval",
    "rule_workers": "rule_workers",
}
# JudgeSettings fields that mean something to the rule judge too (the others set an LLM judge).
RULE_JUDGE_FIELDS = ("kind", "rule_workers", "max_cost")
# CLI parameter -> JudgeEngineSettings field (JudgeSettings.engine).
JUDGE_ENGINE_FIELDS = {
    "judge_max_model_len": "max_model_len", "judge_dtype": "dtype", "judge_engine_arg": "engine_args",
    "judge_tensor_parallel_size": "tensor_parallel_size", "judge_gpu_memory_utilization": "gpu_memory_utilization",
    "judge_batch_size": "batch_size",
}
# CLI parameter -> ModelSettings field, where the names differ.
MODEL_RENAMES = {"engine_arg": "engine_args", "prefix_caching": "enable_prefix_caching"}
# Settings field -> its option, for messages about values that fail validation (other fields: --field-name).
OPTION_NAMES = {
    **{f"JudgeSettings.{field}": "--" + name.replace("_", "-") for name, field in JUDGE_FIELDS.items()},
    **{f"ModelSettings.{field}": "--" + name.replace("_", "-") for name, field in MODEL_RENAMES.items()},
    "ModelSettings.base_urls": "--base-url", "DataSettings.source": "--data",
}


def _scoring_settings(base: ScoringSettings, options: dict[str, Any]) -> ScoringSettings:
    given = {k: options[k] for k in ("failure_policy", "max_failure_rate") if options.get(k) is not None}
    with user_errors(ValueError, names=OPTION_NAMES):
        return ScoringSettings.model_validate({**base.model_dump(), **given})


def _config(options: dict[str, Any], judged: bool) -> RunConfig:
    """One RunConfig from a command's options."""
    model_fields = set(ModelSettings.model_fields)
    values = {MODEL_RENAMES.get(k, k): v for k, v in options.items() if MODEL_RENAMES.get(k, k) in model_fields}
    values["extra_body"] = _json_object(options["extra_body"], "--extra-body")
    values["engine_args"] = _engine_args(options["engine_arg"] or [])
    values["base_urls"] = options["base_url"] or []
    values["backend"] = options["backend"] or infer_backend_name(options["model"], values["base_urls"])
    judge_settings = _judge_settings(None, options) if judged else None
    with user_errors(ValueError, names=OPTION_NAMES):
        return RunConfig(
            run_name=options["run_name"] or default_run_name(options["model"], judge_settings),
            output=options["output"],
            data=DataSettings(
                source=options["data"], domains=_csv(options["domains"]), limit=options["limit"],
                ids=_csv(options["ids"]), sample=options["sample"], seed=options["seed"],
                skip_invalid=options["skip_invalid"],
            ),
            model=ModelSettings(**values),
            judge=judge_settings,
            scoring=_scoring_settings(ScoringSettings(), options) if judged else ScoringSettings(),
            retry_failed=options["retry_failed"],
        )


def run(
    model: ModelOpt,
    data: DataOpt = "Qwen/AgentWorldBench",
    domains: DomainsOpt = None, limit: LimitOpt = None, ids: IdsOpt = None, sample: SampleOpt = None,
    seed: SeedOpt = 0, skip_invalid: SkipInvalidOpt = False,
    backend: BackendOpt = None, base_url: BaseUrlOpt = None, api_key_env: ApiKeyEnvOpt = None,
    temperature: TemperatureOpt = 0.6, top_p: TopPOpt = None, max_tokens: MaxTokensOpt = 32768,
    generations: GenerationsOpt = 1,
    extra_body: ExtraBodyOpt = None, concurrency: ConcurrencyOpt = 64, request_timeout: TimeoutOpt = 600.0,
    max_retries: MaxRetriesOpt = 6,
    max_model_len: MaxModelLenOpt = None, dtype: DtypeOpt = "auto", engine_arg: EngineArgOpt = None,
    overlength: OverlengthOpt = "skip", tensor_parallel_size: TPOpt = 1, data_parallel_size: DPOpt = 1,
    gpu_memory_utilization: GpuMemOpt = 0.9, trust_remote_code: TrustOpt = False, prefix_caching: PrefixOpt = True,
    distributed_executor_backend: ExecutorOpt = None, batch_size: BatchOpt = 256,
    run_name: RunNameOpt = None, output: OutputOption = Path("results"), overwrite: OverwriteOpt = False,
    retry_failed: RetryFailedOpt = False,
    judge: JudgeKindOpt = None, judge_model: JudgeModelOpt = None, judge_backend: JudgeBackendOpt = None,
    judge_base_url: JudgeUrlOpt = None,
    judge_api_key_env: JudgeKeyOpt = None, judge_temperature: JudgeTempOpt = None, judge_max_tokens: JudgeMaxTokOpt = None,
    judge_reasoning_effort: JudgeEffortOpt = None, judge_extra_body: JudgeExtraOpt = None,
    judge_concurrency: JudgeConcOpt = None, judge_max_retries: JudgeRetriesOpt = None, rule_workers: RuleWorkersOpt = None,
    judge_request_timeout: JudgeTimeoutOpt = None,
    judge_structured: JudgeStructOpt = None, judge_samples: JudgeSamplesOpt = None,
    judge_price_in: JudgePriceInOpt = None, judge_price_out: JudgePriceOutOpt = None,
    judge_prompts: JudgePromptsOpt = None, judge_template: JudgeTemplateOpt = None,
    judge_max_model_len: JudgeMaxModelLenOpt = None, judge_dtype: JudgeDtypeOpt = None,
    judge_engine_arg: JudgeEngineArgOpt = None, judge_tensor_parallel_size: JudgeTPOpt = None,
    judge_gpu_memory_utilization: JudgeGpuMemOpt = None, judge_batch_size: JudgeBatchOpt = None,
    judge_batch: JudgeBatchApiOpt = None, judge_batch_fallback: JudgeBatchFallbackOpt = None,
    judge_batch_poll_interval: JudgeBatchPollOpt = None, max_cost: MaxCostOpt = None,
    failure_policy: FailurePolicyOpt = None, max_failure_rate: MaxFailureRateOpt = None,
    dry_run: DryRunOpt = False,
) -> None:
    """Infer, judge and score in one resumable command; judging starts as soon as each prediction is saved.

    Example: awbench run --model baseline:last-observation --judge rules --data sample
    """
    config = _config(locals(), judged=True)
    with pipeline_errors():
        if dry_run:
            print_estimate(pipeline.estimate(config))
            return
        outcome = asyncio.run(pipeline.run(config, overwrite=overwrite, progress=RichProgress()))
    print_summary(outcome.scores, outcome.exit_code, config.scoring.max_failure_rate, config.run_dir)
    raise typer.Exit(outcome.exit_code)


def infer(**options: Any) -> None:
    """Generate predictions only (judge them later with `awbench judge RUN`).

    Example: awbench infer --model Qwen/Qwen-AgentWorld-35B-A3B --tensor-parallel-size 4 --data sample
    """
    config = _config(options, judged=False)
    with pipeline_errors():
        summary = asyncio.run(pipeline.infer(config, options["overwrite"], RichProgress()))
    console.print(f"infer: {summary.computed} generated ({summary.failed} failed), {summary.reused} reused; run saved in {config.run_dir}")


# `infer` takes exactly `run`'s data, model and run-directory options (those before `judge`).
_run_parameters = list(inspect.signature(run, eval_str=True).parameters.values())
infer.__signature__ = inspect.Signature(_run_parameters[: [p.name for p in _run_parameters].index("judge")])  # type: ignore[attr-defined]


def judge(**options: Any) -> None:
    """Add or resume one judge's evaluation of a run's predictions, beside the others; nothing else of the run
    changes.

    By default (no judge option given) it resumes the run's primary judge, the one the run was made with, and
    judges only what is missing, failed or changed. Each judge option given changes that one setting of the
    primary judge's; a judge that differs so is another evaluation, kept beside the others. On a rule-judged
    run, LLM judge options (--judge-model, --judge-prompts...) add an LLM judge at `awbench run`'s defaults. A
    run made by `awbench infer` has no primary judge yet: the defaults are those of `awbench run`.

    Example: awbench judge my-run --judge-model gpt-5.2-2025-12-11 --max-cost 20
    """
    store = open_run(options["run"], options["output"])
    with pipeline_errors():
        if options["reparse"]:
            changed = reparse_judgments(store, options["judge_id"])
            console.print(f"reparse: {changed} verdicts changed; no API call was made")
            return
        manifest = store.read_manifest()
        settings = _judge_settings(manifest.config.judge, options)
        if options["dry_run"]:
            config = manifest.config.model_copy(update={"judge": settings, "retry_failed": options["retry_failed"]})
            print_estimate(pipeline.estimate(config, existing_only=True))
            return
        summaries, scores = asyncio.run(pipeline.judge(store, settings, RichProgress(), options["retry_failed"]))
    for summary in summaries:
        console.print(f"{summary.stage}: {summary.computed} judged ({summary.failed} failed), {summary.reused} reused")
    judged = scores[summaries[0].stage.removeprefix("judge ")]
    code = pipeline.exit_code(judged, manifest.config.scoring.max_failure_rate)
    print_summary(judged, code, manifest.config.scoring.max_failure_rate, store.path)
    raise typer.Exit(code)


def _judge_only_options(
    run: Annotated[str, typer.Argument(help="Run name under --output, or a run directory.")],
    reparse: Annotated[bool, typer.Option("--reparse", help="Re-parse the saved raw verdicts with the current parser; no API call.")] = False,
    judge_id: Annotated[Optional[str], typer.Option("--judge-id", help="With --reparse: which evaluation (default: the primary).")] = None,
    retry_failed: RetryFailedOpt = False,
    output: OutputOption = Path("results"),
    dry_run: DryRunOpt = False,
) -> None:
    """The parameters of `judge` beyond `run`'s judge options (a signature only, never called)."""


# `judge` takes a run, `run`'s judge options (from `judge` to `max_cost`), and its own options.
_names = [p.name for p in _run_parameters]
_own = list(inspect.signature(_judge_only_options, eval_str=True).parameters.values())
_judge_options = _run_parameters[_names.index("judge") : _names.index("max_cost") + 1]
judge.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [_own[0], *(_defaults_to(p, "the run's primary judge's") for p in _judge_options), *_own[1:]]
)


def score(
    run: Annotated[str, typer.Argument(help="Run name under --output, or a run directory.")],
    failure_policy: FailurePolicyOpt = None, max_failure_rate: MaxFailureRateOpt = None,
    judge: Annotated[Optional[str], typer.Option("--judge", help="Which evaluation to print: a judge id, or llm/rules." + _default("the primary"))] = None,
    reward: Annotated[Optional[Path], typer.Option("--reward", help="Also write per-sample RL rewards (0.9 rubric + 0.1 rule) to this JSONL file.")] = None,
    output: OutputOption = Path("results"),
    fmt: Annotated[Literal["table", "json"], typer.Option("--format", help="table, or json: the evaluation's scores.json (notes go to stderr).")] = "table",
) -> None:
    """Compute scores.json of every evaluation of a run from its predictions and judgments; print one.

    Example: awbench score my-run --failure-policy exclude
    """
    refuse_run_outputs({"--reward": reward})
    store = open_run(run, output)
    with pipeline_errors(), store.locked():
        manifest = store.read_manifest()
        scoring = _scoring_settings(manifest.config.scoring, locals())
        if scoring != manifest.config.scoring:
            store.write_manifest(manifest.model_copy(update={"config": manifest.config.model_copy(update={"scoring": scoring})}))
        chosen = resolve_judge(store, judge)
        samples = pipeline.run_samples(store)
        scores = pipeline.score(store, samples)[chosen.id]
        if reward is not None:
            count = write_rewards(store, samples, reward)
            (err_console if fmt == "json" else console).print(f"wrote {count} rewards to {reward}", highlight=False,
                                                              markup=False, soft_wrap=True)
    code = pipeline.exit_code(scores, scoring.max_failure_rate)
    print_summary(scores, code, scoring.max_failure_rate, store.path, as_json=fmt == "json")
    raise typer.Exit(code)


score.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
    _defaults_to(p, "the run's") if p.name in ("failure_policy", "max_failure_rate") else p
    for p in inspect.signature(score, eval_str=True).parameters.values()
])


def register(app: typer.Typer) -> None:
    for command in (run, infer, judge, score):
        app.command()(command)
