"""Judges score predictions against the real observation. Each judge is a module with a
`create(settings, endpoints) -> Judge` (and may have a `preflight(settings)`), imported lazily so the LLM
client loads only when used. The LLM judge's modules are found by `--judge-backend` name in the registry
(`awbench.plugins`, group `awbench.judges`, which installed packages extend); the rule judge is awbench's own.

A judge configuration is one evaluation of a run's predictions, named by its judge id: readable, and with
a short hash of everything that makes its verdicts what they are (`judge_id`). A judge owns its work: what it
is asked (`request`, flagged by `flagged`), what that would cost (`estimate`), its spend under `--max-cost`
(`bind` gives it its evaluation's records); the run only hands it requests and stores what it yields.

The rooms:

    __init__   the Judge protocol and JudgeBase, judge ids, create_judges, the small types every judge shares
    cost       prices, estimates (CostEstimate) and the one --max-cost mechanism (Budget)
    injection  signs that a prediction addresses the judge; every judge's requests are flagged by it
    llm/       the rubric LLM judge: direct HTTP, through the Batch API, in-process vLLM; its prompts and parsing
    batch/     the OpenAI Batch API: one runner any judge hands its requests to, its state and limits
    choice/    two-choice questions ("Response A" or "B"): the Turing test's and the pairwise judge's
    rules/     the rule judge: deterministic scorers in worker processes
"""

from __future__ import annotations

import importlib
import re
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from awbench import plugins
from awbench.errors import EXIT_FAILURES, AwbenchError
from awbench.redact import MASK, holds_mask, secrets_masked

# Nothing here imports pydantic when the package is imported: rule judge workers import awbench.judging.rules,
# and each would hold its own pydantic (see awbench.judging.rules.worker_loop).
if TYPE_CHECKING:
    from awbench.config import JudgeSettings
    from awbench.judging.cost import CostEstimate
    from awbench.prefix_order import Place
    from awbench.records import JudgeKind, JudgeRequest, JudgmentRecord, PredictionRecord, Sample
    from awbench.transport.endpoints import Endpoints

# Every judge id awbench makes (`llm_judge_id`, the rule judge's `rules-v{version}`) is of these characters, and
# is a folder's name of its own (never `.` or `..`, nor hidden): an id read back from a run's `judges/` folder, or
# from a file to import, that is not was not made by awbench, and is refused (`awbench.run.store`) rather than
# shown, in a report, to whoever reads it, or written to.
JUDGE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
JUDGE_ID_CHARS = "letters, digits, '.', '_' and '-' only, not starting with '.'"

RULE_JUDGE_MODULE = "awbench.judging.rules.judge"


class PromptError(AwbenchError):
    """A prompt set, template or reference checkout that cannot be used; the message names the path."""

    key = "bad_prompts"


class BudgetExhausted(AwbenchError):
    """Raised by a judge that stopped before the spend would pass `--max-cost` (`cost.Budget`); the run is
    resumable."""

    key = "budget_exhausted"
    exit_code = EXIT_FAILURES
    scores: Any = None  # the stopped judge's scores (a ScoresFile), written before the error reached its command
    hint = (
        ". The run is resumable: run the same command again with a higher --max-cost; until then its evaluation is "
        "incomplete, and never ranked nor exported."
    )


class Notes(Protocol):
    """Where a judge reports what the user should know while it works (the run's progress display)."""

    def note(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...


class Judge(Protocol):
    """Every hook the run uses of a judge. `JudgeBase` gives the optional ones (`spent_usd`, `bind`, `flagged`,
    `estimate`, `check`, `aclose`) their defaults."""

    kind: JudgeKind
    id: str  # the evaluation's judge id

    @property
    def spent_usd(self) -> float:
        """What this judge has spent, in USD, its evaluation's earlier records included (`bind`): --max-cost
        covers the whole evaluation, resumes included."""
        ...

    def bind(self, directory: Path, notes: Notes, recorded: Iterable[JudgmentRecord] = ()) -> None:
        """Called once before judging: the evaluation's directory (`judges/<id>/`, perhaps not made yet), for
        state the judge keeps between runs (the batch judge's batches), where to report, and the evaluation's
        records so far (what it has spent)."""
        ...

    def flagged(self, request: JudgeRequest) -> JudgeRequest:
        """The request as it is judged, with what its judgment records about the prediction (`flags`); called
        only for the requests the run hands to `judge`."""
        ...

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """What judging `requests` would take (`--dry-run`): calls, tokens, cost, and how long under the limits
        the judge knows of, without sending anything."""
        ...

    async def check(self) -> None:
        """Raise EndpointDown or FatalAPIError when the service cannot be used (before anything is spent)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What judge.json records about this judge beyond its settings (e.g. the prompt set and its sha256)."""
        ...

    def request(self, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
        """What this judge is asked about a stored generation; None when it judges none (a failed generation
        under awbench's rules; under the reference protocol, one with no text at all)."""
        ...

    def cache_key(self, request: JudgeRequest) -> str:
        """A hash of everything that can change this request's verdict (cheap: no prompt is rendered)."""
        ...

    def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Yield one JudgmentRecord per request, in completion order, taking requests as they come."""
        ...

    async def aclose(self) -> None:
        """Release what the judge holds (clients, engines, worker processes), once the run is done with it."""
        ...


class JudgeBase:
    """The optional hooks' defaults: a judge that keeps no state between runs, calls no paid service, flags
    predictions that address the judge (`awbench.judging.injection`), has nothing to check and nothing to
    release."""

    @property
    def spent_usd(self) -> float:
        return 0.0

    def bind(self, directory: Path, notes: Notes, recorded: Iterable[JudgmentRecord] = ()) -> None:
        return None

    def flagged(self, request: JudgeRequest) -> JudgeRequest:
        from awbench.judging.injection import flagged

        return flagged(request)

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        from awbench.judging.cost import CostEstimate

        return CostEstimate(calls=0, prompt_tokens=0, completion_tokens=0, cost_usd=0.0)

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def create_judges(settings: JudgeSettings, endpoints: Endpoints | None = None) -> list[Judge]:
    """The judges of a configuration: `both` is an LLM judge (first: the primary) and the rule judge."""
    judges = []
    for kind, used in (("llm", settings.uses_llm), ("rules", settings.uses_rules)):
        if used:
            module = (
                plugins.load("awbench.judges", settings.backend)
                if kind == "llm"
                else importlib.import_module(RULE_JUDGE_MODULE)
            )
            judges.append(module.create(settings.model_copy(update={"kind": kind}), endpoints))
    return judges


def check_judges(settings: JudgeSettings) -> None:
    """The LLM judge's own checks that need nothing sent (the HTTP judge's key, no secret masked as run.json
    records it), before any inference."""
    if not settings.uses_llm:
        return
    from awbench.transport.endpoints import MissingAPIKey

    for option, value in (
        ("--judge-extra-body", settings.extra_body),
        ("--judge-engine-arg", settings.engine.engine_args),
    ):
        if holds_mask(value):
            raise MissingAPIKey(
                f"{option} holds a secret masked as the run recorded it ({MASK}): give {option}, with it, again"
            )
    plugins.preflight("awbench.judges", settings.backend, settings)


def llm_identity(settings: JudgeSettings, prompt_sha256: str) -> dict[str, Any]:
    """What makes two LLM judges' verdicts comparable: model, sampling, output form and the prompt texts
    (the prompt set's content hash, not its path)."""
    return {
        "model": settings.model,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "reasoning_effort": settings.reasoning_effort,
        "extra_body": secrets_masked(settings.extra_body),  # as judge.json records it: the same id from either
        "structured": settings.structured,
        "samples": settings.samples,
        "prompt_sha256": prompt_sha256,
        **({"stop": settings.stop} if settings.stop else {}),  # only when given: earlier judges keep their ids
    }


def llm_judge_id(settings: JudgeSettings, prompt_label: str, prompt_sha256: str) -> str:
    """`{model}-{prompt label}-{hash}`, e.g. `gpt-5.2-2025-12-11-rubric-3f2a1c`."""
    from awbench.records import content_hash

    model = re.sub(r"[^A-Za-z0-9._-]+", "-", settings.model.rsplit("/", 1)[-1]).lstrip(".-").rstrip("-") or "judge"
    return f"{model}-{prompt_label}-{content_hash(llm_identity(settings, prompt_sha256))[:6]}"


def prediction_request(sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
    """awbench's rule for what is judged: the parsed prediction of a successful generation. A failed one
    (empty, cut off by the token limit, no answer) scores 0 or is left out without asking."""
    from awbench.records import JudgeRequest

    if prediction.failed:
        return None
    return JudgeRequest(sample=sample, prediction=prediction.prediction, generation=prediction.generation)


def request_place(request: JudgeRequest) -> Place:
    """The generations of a sample are its variants (their prompts differ only from the prediction on)."""
    return request.sample.place(request.generation)


async def requests_of(items: list[JudgeRequest]) -> AsyncIterator[JudgeRequest]:
    """A list as the stream `Judge.judge` takes (the inspect_ai scorer judges one request at a time)."""
    for item in items:
        yield item
