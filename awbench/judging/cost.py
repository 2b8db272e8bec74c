"""What LLM judging costs: known prices, the cost of reported usage, and estimates before anything is sent.

Estimates count ~4 characters per token (tiktoken would need its encodings downloaded, and judges are
not all OpenAI models anyway) and assume OUTPUT_TOKENS_PER_VERDICT completion tokens per verdict: a
reasoning judge's thinking plus a verdict of a few hundred tokens. Both are rough; `--dry-run` says so.

The prompt cache (`CacheEstimate`): a prompt sent in prefix order (`awbench.prefix_order`) finds the prefix it
shares with the prompt before it in that order cached, as OpenAI bills it (1,024 tokens or more, in steps of 128),
assuming the provider kept it (its minutes of retention, the same machine: `prompt_cache_key`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pydantic import BaseModel

from awbench.prefix_order import Place
from awbench.transport.chat_client import Completion
from awbench.transport.endpoints import is_local
from awbench.transport.rate_control import CHARS_PER_TOKEN, estimate_prompt_tokens, estimate_tokens, tokens_for_chars

__all__ = [
    "estimate_prompt_tokens",
    "estimate_tokens",
    "tokens_for_chars",
]  # the rate control's count

OUTPUT_TOKENS_PER_VERDICT = 1500
# OpenAI's prompt cache (https://developers.openai.com/api/docs/guides/prompt-caching): prompts of 1,024 tokens or
# more, cached prefixes counted in steps of 128 tokens.
MIN_CACHED_TOKENS = 1024
CACHE_STEP_TOKENS = 128
SHARED_CHUNK = 4096  # characters compared at once when finding how much of two prompts is the same

Messages = list[dict[str, str]]


class Price(NamedTuple):
    """USD per million tokens. Cached prompt tokens cost `cached_input` when known, else `input`."""

    input: float
    output: float
    cached_input: float | None = None


# OpenAI list prices for standard (non-batch) processing, USD per million tokens. Source: third-party
# copies of https://openai.com/api/pricing (nicolalazzari.ai "OpenAI API Pricing Explained (2026)" and
# evolink.ai's GPT-5.2 guide, March 2026), not checked against OpenAI's own page: verify before relying on them,
# or pass --judge-price-in/--judge-price-out, which override this table.
KNOWN_PRICES: dict[str, Price] = {
    "gpt-5.2": Price(input=1.75, output=14.00, cached_input=0.175),
    "gpt-5.4": Price(input=2.50, output=15.00, cached_input=0.25),
    "gpt-5-mini": Price(input=0.25, output=2.00, cached_input=0.025),
}

# The Batch API (`--judge-batch`) bills every kind of token at half its list price: input, cached input and
# output. OpenAI's Batch API FAQ (https://help.openai.com/en/articles/9197833-batch-api-faq): "Each model will
# be offered at 50% cost discount vs. the synchronous APIs", and "Developers will be charged for any completed
# work" of a batch that expires. Cached input tokens, which the usage of a batch answer reports like any other,
# are priced at half the cached rate; third-party summaries of https://developers.openai.com/api/docs/pricing
# (leanlm.ai "LLM batch API", 2026; aipromptshub.co) say the two discounts stack for GPT-5 models, the ones in
# KNOWN_PRICES, and not for older ones (where this then undercounts cached input). Without a known cached rate
# (prices given with --judge-price-in), cached tokens cost the halved input rate.
BATCH_DISCOUNT = 0.5


def batch_price(price: Price) -> Price:
    """The Batch API's price of a model whose list price is `price`."""
    cached = price.cached_input * BATCH_DISCOUNT if price.cached_input is not None else None
    return Price(input=price.input * BATCH_DISCOUNT, output=price.output * BATCH_DISCOUNT, cached_input=cached)


_SNAPSHOT_DATE = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class CostEstimate(BaseModel):
    """What judging would take (`Judge.estimate`, `--dry-run`), as the judge itself knows it."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when the judge model's price is unknown; with `cached_tokens` at the cached rate
    cached_tokens: int = 0  # of `prompt_tokens`, what the provider's prompt cache would serve (`CacheEstimate`)
    uncached_cost_usd: float | None = None  # the cost without any cache
    batch_price: bool = False  # priced at the OpenAI Batch API's rate (`--judge-batch`)
    limit_tokens: int = 0  # what the calls count against a tokens-per-minute limit: prompts + max_tokens each
    # Direct calls at --judge-tpm/--judge-rpm; through the Batch API, the batches one after another under the
    # enqueued-token limit at a typical turnaround each. None: no limit known.
    wall_s: float | None = None
    batches: int | None = None  # through the Batch API: batches one after another under the limit
    batch_tokens: int | None = None  # that limit: --judge-batch-tokens, or learnt by the evaluation


def paced(estimate: CostEstimate, max_tokens: int, tpm: int | None, rpm: int | None) -> CostEstimate:
    """`estimate` with what its calls count against rate limits and how long they take under them."""
    limit_tokens = estimate.prompt_tokens + estimate.calls * max_tokens
    wall = wall_seconds(estimate.calls, limit_tokens, tpm, rpm)
    return estimate.model_copy(update={"limit_tokens": limit_tokens, "wall_s": wall})


def wall_seconds(calls: int, limit_tokens: int, tpm: int | None, rpm: int | None) -> float | None:
    """How long `calls` take at the given limits, the one that binds, once they are kept busy (as the rate
    control keeps them: bench/rate_limits.py); None without a limit."""
    minutes = [amount / limit for amount, limit in ((limit_tokens, tpm), (calls, rpm)) if limit]
    return max(minutes) * 60 if minutes else None


class Budget:
    """`--max-cost` as every paid judge keeps it: what was spent (earlier runs included), what the calls on their
    way are estimated to cost (`reserved`), and whether one more fits under the cap. No call starts that would
    pass it; the judge then finishes what is in flight and raises BudgetExhausted (`why`)."""

    def __init__(self, cap: float | None, spent: float = 0.0) -> None:
        self.cap = cap
        self.spent = spent
        self.reserved = 0.0

    def affords(self, amount: float) -> bool:
        """Whether `amount` more fits under the cap, beside what is spent and held."""
        return self.cap is None or self.spent + self.reserved + amount <= self.cap

    def reserve(self, amount: float) -> bool:
        """Hold `amount` for what is about to go out; False, holding nothing, when it would pass the cap."""
        if not self.affords(amount):
            return False
        self.reserved += amount
        return True

    def settle(self, reserved: float, cost: float) -> None:
        """What went out came back: its reservation let go, its cost spent."""
        self.reserved -= reserved
        self.spent += cost

    def why(self) -> str:
        return f"judge spend would pass the cap: spent ${self.spent:.4f} of --max-cost ${self.cap or 0.0:.4f}"


def price_for(model: str, price_in: float | None = None, price_out: float | None = None) -> Price | None:
    """Given prices win over the table; a dated snapshot ("gpt-5.2-2025-12-11") takes its model's price."""
    known = KNOWN_PRICES.get(_SNAPSHOT_DATE.sub("", model.strip().lower()))
    given_any = price_in is not None or price_out is not None
    input_ = price_in if price_in is not None else known.input if known else None
    output = price_out if price_out is not None else known.output if known else None
    if input_ is None or output is None:
        return None
    # The table's cached rate belongs to the table's input rate; a given input price replaces both.
    cached = known.cached_input if known and not given_any else None
    return Price(input=input_, output=output, cached_input=cached)


def unpriced_cap(model: str, max_cost: float, base_url: str | None = None) -> str:
    """Why a cap cannot be enforced: said with its value, since `awbench judge RUN` keeps the run's --max-cost
    for a judge it adds, and a user who gave none there would not know where it came from. A judge served on
    this machine or network (`base_url`) has no list price: leaving the cap out is the likelier fix."""
    cap = f"--max-cost {max_cost:g} (given, or kept from the run's judge settings)"
    prices = "--judge-price-in and --judge-price-out (USD per million tokens)"
    if is_local(base_url):
        return (
            f"{cap} caps spend at a price, and judge model {model!r} on {base_url} has none: leave --max-cost out, "
            f"or give what its calls cost with {prices}"
        )
    return f"{cap} needs the price of judge model {model!r}: give {prices}"


def cacheable(tokens: int) -> int:
    """What OpenAI bills as cached of a prefix of `tokens` found in its cache: none under 1,024, else the prefix
    down to a step of 128."""
    return 0 if tokens < MIN_CACHED_TOKENS else tokens - (tokens - MIN_CACHED_TOKENS) % CACHE_STEP_TOKENS


def shared_chars(a: Messages, b: Messages) -> int:
    """The characters of message text two chats share from their start."""
    shared = 0
    for first, second in zip(a, b, strict=False):
        x, y = first["content"], second["content"]
        if first["role"] == second["role"] and x == y:
            shared += len(x)
            continue
        if first["role"] == second["role"]:
            shared += _shared_start(x, y)
        break
    return shared


def _shared_start(x: str, y: str) -> int:
    start, end = 0, min(len(x), len(y))
    while start < end and x[start : start + SHARED_CHUNK] == y[start : start + SHARED_CHUNK]:
        start += SHARED_CHUNK
    low, high = min(start, end), min(start + SHARED_CHUNK, end)  # the first difference is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if x[start:middle] == y[start:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class CacheEstimate:
    """The prompt tokens a provider's cache would serve of prompts `add`ed in prefix order (`prefix_sorted`): a
    turn's first prompt finds what the nearest earlier turn's first prompt of its trajectory left, the turn's other
    prompts what its first left, and each repeat of a prompt (a judge's samples) all of it."""

    def __init__(self) -> None:
        self.cached_tokens = 0
        self._place: Place | None = None
        self._lead: Messages | None = None  # the first prompt of the turn being added

    def add(self, place: Place, messages: Messages, repeats: int = 1) -> None:
        before, found = self._place, self._lead
        if before is None or before.trajectory != place.trajectory:
            found = None
        if before is None or (before.trajectory, before.turn) != (place.trajectory, place.turn):
            self._lead = messages  # this turn's first: it finds the earlier turn's first (`found`)
        self._place = place
        if found is not None:
            self.cached_tokens += cacheable(shared_chars(messages, found) // CHARS_PER_TOKEN)
        self.cached_tokens += (repeats - 1) * cacheable(estimate_prompt_tokens(messages))


def usage_cost(price: Price, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
    """Reasoning tokens are part of completion tokens, and billed as output."""
    cached = min(cached_tokens, prompt_tokens)
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    return ((prompt_tokens - cached) * price.input + cached * cached_rate + completion_tokens * price.output) / 1e6


def completion_cost(price: Price, completion: Completion, prompt_tokens: int) -> float:
    """The cost of one answered call from its reported usage, falling back to estimates for what the server left
    out: `prompt_tokens` (the prompt's estimate), and the answer's characters (its text and reasoning)."""
    usage = completion.usage
    chars = len(completion.content or "") + len(completion.reasoning or "")
    return usage_cost(
        price,
        usage.prompt_tokens if usage.prompt_tokens is not None else prompt_tokens,
        usage.completion_tokens if usage.completion_tokens is not None else tokens_for_chars(chars),
        usage.cached_tokens or 0,
    )
