"""What LLM judging costs: known prices, the cost of reported usage, and estimates before anything is sent.

Estimates count ~4 characters per token (tiktoken would need its encodings downloaded, and judges are
not all OpenAI models anyway) and assume OUTPUT_TOKENS_PER_VERDICT completion tokens per verdict: a
reasoning judge's thinking plus a verdict of a few hundred tokens. Both are rough; `--dry-run` says so.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pydantic import BaseModel

from awbench.records import Usage
from awbench.transport.rate_control import estimate_prompt_tokens, estimate_tokens, tokens_for_chars

__all__ = [
    "estimate_prompt_tokens",
    "estimate_tokens",
    "tokens_for_chars",
]  # the rate control's count

OUTPUT_TOKENS_PER_VERDICT = 1500


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
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when the judge model's price is unknown


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


def unpriced_cap(model: str, max_cost: float) -> str:
    """Why a cap cannot be enforced: said with its value, since `awbench judge RUN` keeps the run's --max-cost
    for a judge it adds, and a user who gave none there would not know where it came from."""
    return (
        f"--max-cost {max_cost:g} (given, or kept from the run's judge settings) needs the price of judge model "
        f"{model!r}: give --judge-price-in and --judge-price-out (USD per million tokens)"
    )


def usage_cost(price: Price, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
    """Reasoning tokens are part of completion tokens, and billed as output."""
    cached = min(cached_tokens, prompt_tokens)
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    return ((prompt_tokens - cached) * price.input + cached * cached_rate + completion_tokens * price.output) / 1e6


def call_cost(price: Price, usage: Usage, estimated_prompt: int, estimated_completion: int) -> float:
    """The cost of one call from its reported usage, falling back to estimates for what the server left out."""
    return usage_cost(
        price,
        usage.prompt_tokens if usage.prompt_tokens is not None else estimated_prompt,
        usage.completion_tokens if usage.completion_tokens is not None else estimated_completion,
        usage.cached_tokens or 0,
    )
