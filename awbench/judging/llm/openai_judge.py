"""What `--judge-backend openai` makes: the LLM judge of an OpenAI-compatible chat endpoint, its calls sent
directly (`awbench.judging.llm.direct`) or, with `batch`, through the OpenAI Batch API (`awbench.judging.llm.batch_judge`)."""

from __future__ import annotations

from awbench.config import JudgeSettings
from awbench.errors import AwbenchError
from awbench.judging.cost import price_for, unpriced_cap
from awbench.judging.llm.batch_judge import BatchJudge
from awbench.judging.llm.direct import LLMJudge, judge_base_url, require_key
from awbench.judging.llm.prompts import load_prompt_set
from awbench.transport.endpoints import Endpoints


class CostUnknown(AwbenchError, ValueError):
    """`max_cost` was given but the judge model's price is not known, so the cap cannot be enforced."""

    key = "cost_unknown"


def create(settings: JudgeSettings, endpoints: Endpoints | None = None) -> LLMJudge | BatchJudge:
    """Raises PromptError for bad prompts, CostUnknown for a cap without a price. The key is read on first use,
    so a dry run (estimate only) needs none; `preflight` checks it before anything is spent."""
    prompt_set = load_prompt_set(settings.prompts, settings.template)
    price = price_for(settings.model, settings.price_in, settings.price_out)
    if settings.max_cost is not None and price is None:
        raise CostUnknown(unpriced_cap(settings.model, settings.max_cost, judge_base_url(settings)))
    direct = LLMJudge(settings, prompt_set, price, endpoints or Endpoints())
    return BatchJudge(direct) if settings.batch else direct


def preflight(settings: JudgeSettings) -> None:
    require_key(settings)
