"""`--judge-backend vllm`: the LLM judge in this process, through vLLM's offline `LLM` engine, in batches.

It asks what the HTTP judge (`awbench.judging.llm.direct`) asks and records what it records: the same rendered
messages (either protocol), one seed per verdict and re-ask (`verdict_seed`), the same JSON schema with
`--judge-structured` (as `StructuredOutputsParams`, which is what vLLM's server makes of `response_format`),
the same parse (`verdict_record`), the same best-of-attempts rule (`better`) and the same judgment
(`combine`). Its id and cache keys are the HTTP judge's for the same settings, so an evaluation begun against
a server can be finished here and the other way round. Usage is the engine's token counts; cost is None.

Batches. Requests are taken from the feed as they come; a batch goes to `LLM.chat` (in a worker thread) when
`engine.batch_size` verdict prompts are waiting or the feed has closed, and each batch is sorted in the
prefix order every sender follows (`awbench.prefix_order`: a trajectory's turns together and in turn order, a
sample's generations after one another, a prediction's K verdicts side by side), so that prefix caching serves
the long prompt prefixes those share. A verdict's budget is 1 + max_retries
engine calls: an unusable answer (unparsed, partial, cut off by the token limit) is asked again, with the
next seed, in a later batch, and the record is yielded once each of its verdicts is complete or out of
budget.

Context window. Each prompt is counted with the engine's tokenizer and chat template before it is
submitted, under the candidate backend's rule: it fits when `prompt_tokens < max_model_len`, and its
`max_tokens` is clipped to the room left. A prompt that does not fit is never submitted (one such prompt
makes `LLM.chat` fail its whole batch): its prediction fails with the reason, as a context overflow fails
it with the HTTP judge, and the others go on.

Engine. Started on first use (`check`, or the first batch) through `vllm_offline.open_engine`: when the
candidate runs in-process on the same model with the same engine arguments, the judge uses its engine
(one copy of the weights) and the two take turns, a batch each.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awbench.backends import vllm_offline
from awbench.backends.vllm_offline import VLLM_MISSING, BackendUnavailable, count_chat_tokens, engine_lock
from awbench.config import JudgeSettings, ModelSettings
from awbench.judging import JudgeBase, llm_identity, llm_judge_id, request_place
from awbench.judging.cost import OUTPUT_TOKENS_PER_VERDICT, CostEstimate, estimate_prompt_tokens, paced
from awbench.judging.llm.direct import prompt_description, prompt_label, verdict_cache_key, verdict_schema
from awbench.judging.llm.prompts import (
    PromptSet,
    load_prompt_set,
    protocol_request,
    reference_reader,
    render_messages,
    shown_prediction,
)
from awbench.judging.llm.verdict_records import add_usage, better, combine, settled, verdict_record, verdict_seed
from awbench.prefix_order import prefix_key
from awbench.records import JudgeRequest, JudgmentRecord, PredictionRecord, Sample, Usage, VerdictRecord
from awbench.transport.chat_client import Completion

if TYPE_CHECKING:
    from vllm import LLM, RequestOutput, SamplingParams

Messages = list[dict[str, str]]


def create(settings: JudgeSettings, endpoints: Any = None) -> VLLMJudge:
    """Checks what can be checked without an engine: vLLM installed, the prompts, the extra body's keys.
    The engine starts on first use. `max_cost` and prices are moot: nothing is spent."""
    return engine_judge(settings, load_prompt_set(settings.prompts, settings.template))


def engine_judge(settings: JudgeSettings, prompt_set: PromptSet) -> VLLMJudge:
    """The judge of these prompts (`create`'s, or the choice judge's); a bad --judge-extra-body fails now."""
    if importlib.util.find_spec("vllm") is None:
        raise BackendUnavailable(VLLM_MISSING)
    judge = VLLMJudge(settings, prompt_set)
    judge_sampling(settings, vllm_offline.sampling_fields())
    return judge


def judge_sampling(settings: JudgeSettings, allowed: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(sampling fields for every verdict, chat-template kwargs), as vLLM's server builds them from the HTTP
    judge's request: `extra_body` holds `chat_template_kwargs` and sampling fields (which win), and
    `reasoning_effort` goes to the chat template, turning thinking on unless the template kwargs say."""
    extra = dict(settings.extra_body)
    template_kwargs = dict(extra.pop("chat_template_kwargs", None) or {})
    unknown = sorted(set(extra) - allowed)
    if unknown:
        raise BackendUnavailable(
            f"--judge-extra-body keys {unknown} are neither vLLM sampling parameters nor chat_template_kwargs"
        )
    if settings.reasoning_effort is not None:
        template_kwargs.setdefault("enable_thinking", settings.reasoning_effort != "none")
        template_kwargs["reasoning_effort"] = settings.reasoning_effort
    stop = {"stop": settings.stop} if settings.stop else {}
    return {"temperature": settings.temperature} | stop | extra, template_kwargs


def engine_settings(settings: JudgeSettings) -> ModelSettings:
    """The judge's engine as the candidate backend describes one, so both build their `LLM` alike (and
    the same arguments mean the same, shared, engine)."""
    return ModelSettings(model=settings.model, backend="vllm", engine=settings.engine)


@dataclass(eq=False)
class _Pending:
    """A prediction being judged: its K verdicts' best answers and usage so far."""

    request: JudgeRequest
    key: str  # the verdict cache key: the seeds derive from it
    order: tuple[int, int, int]  # its prefix order (`prefix_key`: trajectory as it came, turn, generation)
    best: list[VerdictRecord | None]
    usage: list[Usage]
    open: int  # verdicts not settled yet
    messages: Messages | None = None  # rendered when first submitted
    prompt_tokens: int = 0


@dataclass(frozen=True, eq=False)
class _Call:
    """One engine request: verdict `index` of a prediction, its `attempt`-th ask."""

    pending: _Pending
    index: int
    attempt: int

    @property
    def seed(self) -> int:
        return verdict_seed(self.pending.key, self.index, self.attempt)


@dataclass
class _Answer:
    call: _Call
    verdict: VerdictRecord
    usage: Usage = field(default_factory=Usage)
    submitted: bool = True  # False: the prompt did not fit, the engine never saw it


class VLLMJudge(JudgeBase):
    kind = "llm"

    def __init__(self, settings: JudgeSettings, prompt_set: PromptSet, llm: LLM | None = None) -> None:
        """`llm`: an engine to use (tests, benchmarks), left running by `aclose`; without one, the judge
        opens its own (or the candidate's, when the arguments match) on first use."""
        self.settings = settings
        self.prompt_set = prompt_set
        self.id = llm_judge_id(settings, prompt_label(prompt_set), prompt_set.sha256)
        self._identity = llm_identity(settings, prompt_set.sha256)
        self._llm = llm
        self._owns_engine = False
        self._starting = threading.Lock()
        self._sampling: dict[str, Any] = {}
        self._template_kwargs: dict[str, Any] = {}
        self._tokenizer: Any = None
        self.max_model_len = 0
        self.calls = 0  # LLM.chat calls made (for tests and benchmarks)
        self._schema = verdict_schema(bounded_strings=True)  # a constrained decoder takes maxLength
        if llm is not None:
            self._adopt(llm)

    # --- the engine --------------------------------------------------------------------------------------

    def _adopt(self, llm: LLM) -> None:
        fixed, self._template_kwargs = judge_sampling(self.settings, vllm_offline.sampling_fields())
        # The model's generation_config.json defaults first, as vLLM's server applies them.
        self._sampling = llm.model_config.get_diff_sampling_param() | fixed
        self._tokenizer = llm.get_tokenizer()
        self.max_model_len = llm.model_config.max_model_len
        self._llm = llm

    def engine(self) -> LLM:
        """The engine, started (or shared) on first use. Blocking."""
        with self._starting:
            if self._llm is None:
                from vllm.platforms import current_platform

                kwargs = vllm_offline.engine_kwargs(engine_settings(self.settings), current_platform.is_cpu())
                llm = vllm_offline.open_engine(kwargs)
                self._owns_engine = True
                self._adopt(llm)
            assert self._llm is not None
            return self._llm

    async def check(self) -> None:
        """Starts the engine, so that a model that cannot load stops the run before anything is judged."""
        await asyncio.to_thread(self.engine)

    async def aclose(self) -> None:
        if self._owns_engine and self._llm is not None:
            llm, self._llm, self._owns_engine = self._llm, None, False
            await asyncio.to_thread(vllm_offline.close_engine, llm)

    # --- what the HTTP judge has too ----------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return prompt_description(self.prompt_set)

    def cache_key(self, request: JudgeRequest) -> str:
        return verdict_cache_key(self._identity, request)

    def request(self, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
        return protocol_request(self.prompt_set, sample, prediction)

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """First asks only; no engine needed (tokens estimated from characters). Nothing is spent: $0."""
        samples = self.settings.samples
        prompt = sum(estimate_prompt_tokens(render_messages(self.prompt_set, r)) for r in requests) * samples
        calls = len(requests) * samples
        estimate = CostEstimate(
            calls=calls, prompt_tokens=prompt, completion_tokens=calls * OUTPUT_TOKENS_PER_VERDICT, cost_usd=0.0
        )
        return paced(estimate, self.settings.max_tokens, self.settings.tpm, self.settings.rpm)

    def count(self, messages: Messages) -> int:
        """Prompt tokens as the engine will see them (its tokenizer and chat template)."""
        self.engine()
        return count_chat_tokens(self._tokenizer, messages, self._template_kwargs)

    # --- judging ------------------------------------------------------------------------------------------

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Yield records in completion order; see the module docstring for when a batch is submitted."""
        batch_size = self.settings.engine.batch_size
        fresh: deque[_Call] = deque()  # first asks, in arrival order
        reasks: deque[_Call] = deque()  # unusable answers to ask again, before any fresh call
        arrived = asyncio.Event()
        closed = False
        trajectories: dict[str, int] = {}

        async def read() -> None:
            nonlocal closed
            try:
                async for request in requests:
                    samples = self.settings.samples
                    pending = _Pending(request, self.cache_key(request), prefix_key(request_place(request), trajectories),
                                       [None] * samples, [Usage()] * samples, samples)  # fmt: skip
                    fresh.extend(_Call(pending, i, 1) for i in range(samples))
                    arrived.set()
            finally:
                closed = True
                arrived.set()

        reader = asyncio.create_task(read())
        try:
            while True:
                while not closed and len(fresh) + len(reasks) < batch_size:
                    arrived.clear()
                    await arrived.wait()
                if reader.done() and not reader.cancelled() and reader.exception() is not None:
                    raise reader.exception()  # type: ignore[misc]
                if not fresh and not reasks:
                    break
                batch: list[_Call] = []
                while len(batch) < batch_size and (reasks or fresh):
                    batch.append((reasks or fresh).popleft())
                answers = await asyncio.to_thread(self.run_batch, batch)
                for record in self._settle(answers, reasks):
                    yield record
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    def _settle(self, answers: list[_Answer], reasks: deque[_Call]) -> list[JudgmentRecord]:
        """Fold a batch's answers into their predictions; queue re-asks; return the finished records."""
        budget = self.settings.max_retries + 1
        done = []
        for answer in answers:
            call, verdict = answer.call, answer.verdict
            pending = call.pending
            pending.usage[call.index] = add_usage(pending.usage[call.index], answer.usage)
            best = pending.best[call.index] = better(pending.best[call.index], verdict)
            final = settled(best, call.attempt) or verdict.status == "error" or call.attempt >= budget
            if not final:
                reasks.append(_Call(pending, call.index, call.attempt + 1))
                continue
            attempts = call.attempt if answer.submitted else call.attempt - 1  # engine calls made
            pending.best[call.index] = best.model_copy(
                update={"attempts": attempts, "usage": pending.usage[call.index]}
            )
            pending.open -= 1
            if pending.open == 0:
                verdicts = [v for v in pending.best if v is not None]
                done.append(combine(pending.request, pending.key, verdicts, None))
                pending.messages = None
        return done

    def run_batch(self, calls: list[_Call]) -> list[_Answer]:
        """Blocking: render and count what is new, fail what does not fit, submit the rest in one call."""
        llm = self.engine()
        answers: list[_Answer] = []
        ready: list[_Call] = []
        for call in calls:
            pending = call.pending
            if pending.messages is None:
                pending.messages = render_messages(self.prompt_set, pending.request)
                pending.prompt_tokens = count_chat_tokens(self._tokenizer, pending.messages, self._template_kwargs)
            if pending.prompt_tokens >= self.max_model_len:
                error = (f"the judge prompt has {pending.prompt_tokens} tokens; the judge's context window is "
                         f"{self.max_model_len} (--judge-engine-arg max_model_len)")  # fmt: skip
                answers.append(
                    _Answer(call, VerdictRecord(status="error", error=error, seed=call.seed), submitted=False)
                )
            else:
                ready.append(call)
        ready.sort(key=lambda c: (c.pending.order, c.index, c.attempt))
        if ready:
            for call, result in zip(ready, self._submit(llm, ready), strict=True):
                answers.append(self._answer(call, result))
        return answers

    def params_for(self, call: _Call) -> SamplingParams:
        return self.sampling_params(call.pending.prompt_tokens, call.seed)

    def sampling_params(self, prompt_tokens: int, seed: int) -> SamplingParams:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        room = self.max_model_len - prompt_tokens
        params = self._sampling | {"max_tokens": min(self.settings.max_tokens, room), "seed": seed}
        if self.settings.structured:
            params["structured_outputs"] = StructuredOutputsParams(json=self._schema)
        return SamplingParams.from_optional(**params)

    def _submit(self, llm: LLM, calls: list[_Call]) -> list[RequestOutput | Exception]:
        return self._chat(llm, [c.pending.messages for c in calls], [self.params_for(c) for c in calls])  # type: ignore[misc]

    def _chat(self, llm: LLM, chats: list[Messages], params: list[SamplingParams]) -> list[RequestOutput | Exception]:
        """One `LLM.chat` call; should the engine refuse the batch anyway, each request alone, so that only
        the one at fault fails."""
        from vllm.exceptions import VLLMClientError

        try:
            with engine_lock(llm):
                self.calls += 1
                return list(llm.chat(
                    chats, params, use_tqdm=False, chat_template_kwargs=self._template_kwargs or None,
                ))  # fmt: skip
        except VLLMClientError as error:
            if len(chats) == 1:
                return [error]
            return [result for chat, p in zip(chats, params) for result in self._chat(llm, [chat], [p])]

    def complete(self, chats: list[Messages], seeds: list[int]) -> list[Completion | str]:
        """Blocking: any chats (the two-choice questions of `awbench.judging.choice.judge`), one seed each, without
        the verdict schema; a str says why one got no answer (too long for the context window, refused)."""
        llm = self.engine()
        out: list[Completion | str] = []
        ready: list[tuple[int, Messages, SamplingParams]] = []
        for chat, seed in zip(chats, seeds, strict=True):
            tokens = count_chat_tokens(self._tokenizer, chat, self._template_kwargs)
            if tokens >= self.max_model_len:
                out.append(f"the judge prompt has {tokens} tokens; the judge's context window is {self.max_model_len}")
                continue
            ready.append((len(out), chat, self.sampling_params(tokens, seed)))
            out.append("")
        results = self._chat(llm, [c for _, c, _ in ready], [p for _, _, p in ready]) if ready else []
        for (index, _, _), result in zip(ready, results, strict=True):
            if isinstance(result, Exception):
                out[index] = f"the engine refused the judge prompt: {type(result).__name__}: {result}"[:500]
                continue
            generated = result.outputs[0]
            usage = Usage(prompt_tokens=len(result.prompt_token_ids or []), completion_tokens=len(generated.token_ids),
                          cached_tokens=result.num_cached_tokens)  # fmt: skip
            out[index] = Completion(generated.text, None, generated.finish_reason, usage)
        return out

    def _answer(self, call: _Call, result: RequestOutput | Exception) -> _Answer:
        if isinstance(result, Exception):
            error = f"the engine refused the judge prompt: {type(result).__name__}: {result}"
            return _Answer(call, VerdictRecord(status="error", error=error[:500], seed=call.seed))
        completion = result.outputs[0]
        usage = Usage(prompt_tokens=len(result.prompt_token_ids or []), completion_tokens=len(completion.token_ids),
                      cached_tokens=result.num_cached_tokens)  # fmt: skip
        # Offline, thinking stays inline in the text; the parser removes it, as from a server without a
        # reasoning parser.
        verdict = verdict_record(
            completion.text,
            None,
            completion.finish_reason,
            call.seed,
            shown_prediction(self.prompt_set, call.pending.request),
            reference_reader(self.prompt_set, call.pending.request),
            call.attempt,
        )
        return _Answer(call, verdict, usage)
