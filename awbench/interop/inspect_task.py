"""AgentWorldBench as an inspect_ai task: `inspect eval awbench/agentworldbench --model openai/...`.

The samples are awbench's (its loader, every `--data` form and selection), the model under test gets
exactly awbench's world-model messages, and the scorer is awbench's judge: the LLM judge with its prompts,
parser, re-asks and flags, its calls made through inspect's model API, or the rule judge. Each sample's
Score carries awbench's records (`prediction`, `judgment`) in its metadata, so the metrics are awbench's
own scoring (`score_table`) and `awbench import LOG` rebuilds the run from the log. Registered with
inspect_ai by the `inspect_ai` entry point (the `inspect` extra); the only module of awbench that imports
inspect_ai when it is imported (the log import loads it when it reads a log).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.dataset import Sample as InspectSample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentReasoning,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

import awbench
from awbench.config import DEFAULT_DATA, DEFAULT_JUDGE_MODEL, DataSettings, JudgeSettings
from awbench.data.dataset import LoadedData, load_samples
from awbench.domains import DIMENSIONS
from awbench.interop.inspect_log import METADATA_KEY, TASK_NAME, TaskMetadata
from awbench.judging import llm_judge_id, requests_of
from awbench.judging.llm.direct import LLMJudge, prompt_description, prompt_label
from awbench.judging.llm.prompts import load_prompt_set
from awbench.judging.rules.judge import RuleJudge
from awbench.judging.rules.score import RULES_VERSION
from awbench.records import Generation, JudgeKind, JudgmentRecord, PredictionRecord, Sample, Usage
from awbench.run.scoring import FailurePolicy, generation_points, score_table
from awbench.transport.chat_client import Completion
from awbench.transport.endpoints import Endpoints
from awbench.world_model.messages import world_model_messages
from awbench.world_model.parsing import strip_observation_marker
from awbench.world_model.predictions import prediction_record

DEFAULT_INSPECT_JUDGE = f"openai/{DEFAULT_JUDGE_MODEL}"
# awbench's own sampling defaults (ModelSettings), so that an inspect eval and an awbench run compare
CANDIDATE_CONFIG = GenerateConfig(temperature=0.6, max_tokens=32768)
_ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
# inspect's stop reasons in the words awbench's records use (the OpenAI API's finish_reason); the others match
_FINISH = {"max_tokens": "length"}


def names(value: str | int | list[str] | None) -> list[str] | None:
    """A `-T` list: `domains=mcp,web` (one string), `domains=[mcp, web]` (a list), or `ids=12` (a number)."""
    if value is None:
        return None
    items = [str(v) for v in value] if isinstance(value, list) else str(value).split(",")
    return [item.strip() for item in items if item.strip()] or None


def chat_messages(messages: list[dict[str, str]]) -> list[ChatMessage]:
    return [_ROLES[m["role"]](content=m["content"]) for m in messages]


def inspect_sample(sample: Sample) -> InspectSample:
    """The sample as inspect shows it: the world-model messages as input, the real observation as target."""
    record = sample.record
    return InspectSample(
        id=sample.key,
        input=chat_messages(world_model_messages(record)),
        target=strip_observation_marker(record.ground_truth),
        metadata={
            "key": sample.key,
            "domain": sample.domain,
            "trajectory_id": record.trajectory_id,
            "turn_idx": record.turn_idx,
            "origin": sample.origin,
        },
    )


def completion(output: ModelOutput) -> Completion:
    """inspect's output as awbench reads a chat completion: the text, the reasoning apart, the stop reason in
    the OpenAI API's words, the token counts."""
    if not output.choices:
        return Completion(content=None, reasoning=None, finish_reason=None, usage=Usage())
    content = output.message.content
    # redacted reasoning is the provider's encrypted text, not thinking anyone can read
    readable = [] if isinstance(content, str) else [c for c in content if isinstance(c, ContentReasoning)]
    thoughts = [c.reasoning for c in readable if not c.redacted]
    usage = output.usage
    return Completion(
        content=output.completion,
        reasoning="\n".join(t for t in thoughts if t) or None,
        finish_reason=_FINISH.get(output.stop_reason, output.stop_reason),
        usage=Usage(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            cached_tokens=usage.input_tokens_cache_read,
            reasoning_tokens=usage.reasoning_tokens,
        )
        if usage
        else Usage(),
    )


def generation(key: str, output: ModelOutput) -> Generation:
    """The model under test's answer as an awbench backend returns it; a prompt over the context window is
    overlength, as awbench's backends report it."""
    answer = completion(output)
    return Generation(
        key=key,
        text=answer.content,
        reasoning=answer.reasoning,
        finish_reason=answer.finish_reason,
        error=output.error,
        overlength=answer.finish_reason == "model_length",
        usage=answer.usage,
        latency_s=output.time,
    )


class InspectJudge(LLMJudge):
    """awbench's LLM judge (prompts, verdict parser, re-asks, both protocols) whose calls go through inspect's
    model API instead of awbench's HTTP client: inspect's providers, retries and logs."""

    def __init__(self, settings: JudgeSettings, model: Model) -> None:
        super().__init__(settings, load_prompt_set(settings.prompts, settings.template), None, Endpoints())
        self.model = model

    async def complete(self, messages: list[dict[str, str]], seed: int | None, trajectory: str) -> Completion:
        s = self.settings
        config = GenerateConfig(
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            seed=seed,
            stop_seqs=s.stop or None,
            reasoning_effort=s.reasoning_effort,
            extra_body=s.extra_body or None,
        )
        return completion(await self.model.generate(chat_messages(messages), config=config))


def judge_settings(
    judge: str,
    model: str,
    prompts: str,
    temperature: float | None,
    max_tokens: int | None,
    samples: int,
    max_retries: int,
) -> JudgeSettings:
    """The judge's settings as awbench records them; `model` without inspect's provider prefix, so the judge id
    is the one awbench gives the same judge behind an endpoint."""
    if judge not in ("llm", "rules"):
        raise ValueError(f"judge: {judge!r} is not one of 'llm', 'rules'")
    if judge == "rules":
        return JudgeSettings(kind="rules", rule_workers=0)
    given = {"temperature": temperature, "max_tokens": max_tokens}
    return JudgeSettings(
        kind="llm",
        model=model.split("/", 1)[-1],
        prompts=prompts,
        samples=samples,
        max_retries=max_retries,
        concurrency=1,  # one prediction per call of the scorer: inspect runs the samples concurrently
        **{k: v for k, v in given.items() if v is not None},
    )


def judge_identity(settings: JudgeSettings) -> tuple[str, dict[str, Any]]:
    """The judge's id and description as awbench's own judge of these settings has them (judge.json)."""
    if settings.kind == "rules":
        return RuleJudge.id, {"rules_version": RULES_VERSION}
    prompt_set = load_prompt_set(settings.prompts, settings.template)
    return llm_judge_id(settings, prompt_label(prompt_set), prompt_set.sha256), prompt_description(prompt_set)


def sample_score(
    kind: JudgeKind, prediction: PredictionRecord, judgment: JudgmentRecord | None, policy: FailurePolicy
) -> Score:
    """The Score inspect shows and logs: the sample's 0..100 score as awbench counts it (NaN when it is in no
    mean: unscored, or failed under the `exclude` policy), the verdict as its explanation, the records as
    metadata."""
    key = (prediction.key, prediction.generation)
    [(_, [point])] = generation_points(
        kind, [(prediction.key, prediction.domain)], {key: prediction}, {key: judgment} if judgment else {}, policy
    )[prediction.domain]
    return Score(
        value=math.nan if point is None else point[0],
        answer=prediction.prediction,
        explanation=explanation(prediction, judgment, policy),
        metadata={
            "prediction": prediction.model_dump(mode="json"),
            "judgment": judgment.model_dump(mode="json") if judgment else None,
        },
    )


def explanation(prediction: PredictionRecord, judgment: JudgmentRecord | None, policy: FailurePolicy) -> str:
    """What `inspect view` shows of a sample's verdict: the score and its parts, the judge's reasons, flags."""
    if prediction.failed:
        counted = "scored 0" if policy == "minimum" else "left out of the scores"
        return f"failed generation ({prediction.status}): {prediction.error}; {counted} (failure policy {policy})"
    if judgment is None:
        return "not judged"
    lines = []
    if judgment.score is None:
        lines.append(f"unscored: {judgment.error}")
    elif judgment.rule is not None:
        parts = ", ".join(f"{name} {value:.2f}" for name, value in judgment.rule.parts.items())
        lines.append(f"rule score {judgment.score:.2f} ({parts})")
    else:
        dims = ", ".join(f"{d} {judgment.dimensions[d]:g}" for d in DIMENSIONS if d in judgment.dimensions)
        lines.append(f"score {judgment.score:.2f} ({dims})")
    for verdict in judgment.verdicts:
        lines += [f"strength: {s}" for s in verdict.strengths] + [f"weakness: {w}" for w in verdict.weaknesses]
    if judgment.flags:
        lines.append("flags: " + ", ".join(judgment.flags))
    return "\n".join(lines)


def records_of(scores: list[SampleScore]) -> tuple[list[PredictionRecord], list[JudgmentRecord]]:
    """awbench's records back from the scores' metadata."""
    predictions, judgments = [], []
    for item in scores:
        metadata = item.score.metadata or {}
        predictions.append(PredictionRecord.model_validate(metadata["prediction"]))
        if metadata.get("judgment") is not None:
            judgments.append(JudgmentRecord.model_validate(metadata["judgment"]))
    return predictions, judgments


@metric(name="agentworldbench")
def domain_scores(kind: JudgeKind = "llm", failure_policy: FailurePolicy = "minimum") -> Metric:
    """Per domain, and Overall as the macro mean of the seven domains (0..100), computed by awbench's scoring; and
    `scored`, the samples in those means, so that an eval with nothing scored still shows a metric line (0)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        predictions, judgments = records_of(scores)
        table = score_table(
            kind,
            [(p.key, p.domain) for p in predictions],
            {(p.key, p.generation): p for p in predictions},
            {(j.key, j.generation): j for j in judgments},
            failure_policy,
        )
        overall = {} if table.overall is None else {"overall": table.overall}  # none without all seven domains
        domains = {domain: row.score for domain, row in table.domains.items()}
        return {**overall, **domains, "scored": float(sum(row.scored for row in table.domains.values()))}

    return compute


@lru_cache(maxsize=4)
def loaded_samples(selection: str) -> LoadedData:
    """The task's samples, loaded once for the task and its scorer (`selection`: DataSettings as JSON, which
    is what inspect logs of the scorer's parameters, instead of the samples themselves)."""
    return load_samples(DataSettings.model_validate_json(selection))


@scorer(metrics=[])  # the metrics are given by the task, with the judge's kind and the failure policy
def awbench_judge(
    data: dict[str, Any],
    judge: dict[str, Any],
    judge_model: str,
    judge_base_url: str | None,
    judge_model_args: dict[str, Any],
    failure_policy: FailurePolicy,
) -> Scorer:
    """awbench's judge of each sample's generation (see the module's docstring)."""
    samples = {s.key: s for s in loaded_samples(DataSettings.model_validate(data).model_dump_json()).samples}
    settings = JudgeSettings.model_validate(judge)
    kind: JudgeKind = "rules" if settings.kind == "rules" else "llm"
    judges: list[RuleJudge | InspectJudge] = []

    def the_judge() -> RuleJudge | InspectJudge:
        if not judges:  # made on first use, inside the eval, where inspect's models are set up
            judges.append(
                RuleJudge(workers=0)
                if settings.kind == "rules"
                else InspectJudge(settings, get_model(judge_model, base_url=judge_base_url, **judge_model_args))
            )
        return judges[0]

    async def score(state: TaskState, target: Target) -> Score:
        sample = samples[str(state.sample_id)]
        prediction = prediction_record(sample, generation(sample.key, state.output))
        judge = the_judge()
        request = judge.request(sample, prediction)
        judgment = None
        if request is not None:
            judgment = await anext(aiter(judge.judge(requests_of([judge.flagged(request)]))))
        return sample_score(kind, prediction, judgment, failure_policy)

    return score


@task(name=TASK_NAME)
def agentworldbench(
    data: str = DEFAULT_DATA,
    domains: str | list[str] | None = None,
    limit: int | None = None,
    ids: str | int | list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    skip_invalid: bool = False,
    judge: Literal["llm", "rules"] = "llm",
    judge_model: str = DEFAULT_INSPECT_JUDGE,
    judge_base_url: str | None = None,
    judge_model_args: dict[str, Any] | None = None,
    judge_prompts: str = "rubric",
    judge_temperature: float | None = None,
    judge_max_tokens: int | None = None,
    judge_samples: int = 1,
    judge_max_retries: int = 5,
    failure_policy: Literal["minimum", "exclude"] = "minimum",
) -> Task:
    """AgentWorldBench: predict the environment's next observation; scored by awbench's judge.

    Args:
        data: `sample` (the bundled sample), a directory of `{domain}_test.jsonl`, a JSONL file or a Hub id.
        domains: domains to evaluate, `mcp,web` or a list.
        limit: samples per domain.
        ids: sample ids or keys, `12,terminal/7/3` or a list.
        sample: a stratified random sample of this many (with `seed`).
        seed: the seed of `sample`.
        skip_invalid: leave invalid records out instead of refusing the data.
        judge: `llm` (awbench's LLM judge through inspect's model API) or `rules` (the offline rule judge).
        judge_model: the judge, as inspect names models (`openai/gpt-5.2-2025-12-11`).
        judge_base_url: the judge's endpoint, when not the provider's default.
        judge_model_args: the judge model's provider options, as `-M` gives the model under test's
            (`{responses_api: false}` for an OpenAI-compatible server); never a key: inspect logs them.
        judge_prompts: `rubric` (awbench's), a prompt directory, or a checkout of the reference repository
            (its judge prompts and protocol).
        judge_temperature: default 0.6, as awbench's judge.
        judge_max_tokens: default 32768, as awbench's judge.
        judge_samples: verdicts per prediction.
        judge_max_retries: re-asks of unusable verdicts, per verdict.
        failure_policy: a failed generation scores 0 (`minimum`) or is left out (`exclude`).
    """
    model_args = dict(judge_model_args or {})
    if secret := next((k for k in model_args if "key" in k.lower() or "token" in k.lower()), None):
        raise ValueError(
            f"judge_model_args: {secret!r} would be written to the eval log; give the judge's key in the "
            "provider's environment variable instead (OPENAI_API_KEY for openai/...)"
        )
    selection = DataSettings(
        source=data,
        domains=names(domains),
        limit=limit,
        ids=names(ids),
        sample=sample,
        seed=seed,
        skip_invalid=skip_invalid,
    )
    loaded = loaded_samples(selection.model_dump_json())
    settings = judge_settings(
        judge, judge_model, judge_prompts, judge_temperature, judge_max_tokens, judge_samples, judge_max_retries
    )
    judge_id, described = judge_identity(settings)
    return Task(
        dataset=MemoryDataset([inspect_sample(s) for s in loaded.samples], name=f"AgentWorldBench ({loaded.source})"),
        solver=generate(),
        scorer=awbench_judge(
            selection.model_dump(mode="json"),
            settings.model_dump(mode="json"),
            judge_model,
            judge_base_url,
            model_args,
            failure_policy,
        ),
        metrics=[domain_scores(judge, failure_policy)],
        config=CANDIDATE_CONFIG,
        metadata={
            METADATA_KEY: TaskMetadata(
                awbench_version=awbench.__version__,
                data=selection,
                data_source=loaded.source,
                data_fingerprint=loaded.fingerprint,
                judge=settings,
                judge_inspect_model=judge_model if settings.kind == "llm" else None,
                judge_id=judge_id,
                judge_described=described,
                failure_policy=failure_policy,
            ).model_dump(mode="json")
        },
    )
