"""Describing loaded samples (`awbench data info`): per-domain counts, turns and context sizes, next to the
published benchmark's statistics."""

from __future__ import annotations

import importlib
import os
import statistics
from collections.abc import Callable, Mapping

from pydantic import BaseModel

from awbench.data.hub import hub_offline, hub_unreachable, no_hub
from awbench.data.problems import DataError
from awbench.domains import DOMAINS, PUBLISHED_STATS, PUBLISHED_TOTAL
from awbench.records import BenchmarkRecord, Sample
from awbench.world_model.messages import world_model_messages


class DomainInfo(BaseModel):
    domain: str
    samples: int
    trajectories: int
    avg_turns: float  # mean turn_idx: the turns each evaluated sample contains
    avg_total_turns: float
    avg_context_chars: float
    max_context_chars: int
    avg_context_tokens: float | None
    published_samples: int | None
    published_avg_turns: float | None


class DataInfo(BaseModel):
    source: str
    domains: list[DomainInfo]
    total: DomainInfo
    is_full_benchmark: bool


def data_info(samples: list[Sample], source: str, tokenizer: str | None = None) -> DataInfo:
    """Per-domain statistics of `samples`; token counts too when `tokenizer` names a Hugging Face tokenizer."""
    count = _token_counter(tokenizer) if tokenizer else None
    tokens = {s.key: count(s.record) for s in samples} if count else None
    by_domain = {d: [s for s in samples if s.domain == d] for d in DOMAINS}
    domains = [_domain_info(d, group, tokens, PUBLISHED_STATS[d]) for d, group in by_domain.items() if group]
    full = all(len(by_domain[d]) == PUBLISHED_STATS[d][0] for d in DOMAINS)
    total = _domain_info("total", samples, tokens, PUBLISHED_TOTAL)
    return DataInfo(source=source, domains=domains, total=total, is_full_benchmark=full)


def _domain_info(
    name: str, samples: list[Sample], tokens: dict[str, int] | None, published: tuple[int, float]
) -> DomainInfo:
    records = [s.record for s in samples]
    chars = [context_chars(r) for r in records]
    return DomainInfo(
        domain=name,
        samples=len(records),
        trajectories=len({(r.domain, r.trajectory_id) for r in records}),
        avg_turns=_mean([r.turn_idx for r in records]),
        avg_total_turns=_mean([r.total_turns for r in records]),
        avg_context_chars=_mean(chars),
        max_context_chars=max(chars, default=0),
        avg_context_tokens=_mean([tokens[s.key] for s in samples]) if tokens is not None else None,
        published_samples=published[0],
        published_avg_turns=published[1],
    )


def context_chars(record: BenchmarkRecord) -> int:
    """Characters the candidate model is shown: system prompt, history and the current action."""
    return sum(len(m["content"]) for m in world_model_messages(record))


def _mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


TOKENS_EXTRA = "pip install 'awbench[tokens]'"


def _token_counter(name: str) -> Callable[[BenchmarkRecord], int]:
    local = os.path.exists(name)
    if not local and (name.startswith((".", "/", "~", "\\")) or name.count("/") > 1):
        raise DataError(f"no such tokenizer directory: {name} (a Hub tokenizer is named owner/name)")
    try:
        from transformers import (
            AutoTokenizer,  # heavy, and optional: only needed for token counts
        )
    except ImportError as e:
        raise DataError(
            f"counting tokens (--tokenizer) needs {_missing(e, 'transformers')}: {TOKENS_EXTRA}", key="missing_extra"
        ) from None

    offline = hub_offline()
    unreachable = None if local or offline else hub_unreachable()
    try:
        # Without the Hub, only a cached copy can do; asking for it again and again would take a minute.
        tok = AutoTokenizer.from_pretrained(name, local_files_only=unreachable is not None)
    except ImportError as e:
        raise DataError(f"tokenizer {name!r} needs {_missing(e, 'a package')}: {TOKENS_EXTRA}") from None
    except (OSError, ValueError) as e:
        if not local and (offline or unreachable):
            raise DataError(
                f"cannot load tokenizer {name!r}: {no_hub(offline, unreachable)}, or pass --tokenizer PATH with "
                f"a local tokenizer directory."
            ) from None
        raise DataError(f"cannot load tokenizer {name!r}: {' '.join(str(e).split())}") from None
    if tok.chat_template and not _importable("jinja2"):
        raise DataError(f"tokenizer {name!r} has a chat template, which needs jinja2 to apply: {TOKENS_EXTRA}")

    def count(record: BenchmarkRecord) -> int:
        messages = world_model_messages(record)
        if not tok.chat_template:
            return len(tok.encode("\n".join(m["content"] for m in messages)))
        try:
            out = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        except ImportError as e:  # a jinja2 too old for this transformers
            raise DataError(
                f"applying the chat template of {name!r} needs {_missing(e, 'jinja2')}: {TOKENS_EXTRA}"
            ) from None
        # transformers 5 returns a BatchEncoding by default; older versions a plain list of ids.
        return len(out["input_ids"] if isinstance(out, Mapping) else out)

    return count


def _missing(error: ImportError, default: str) -> str:
    """The package an ImportError is about, for a message: "transformers, which is not installed"."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return f"{error.name.split('.')[0]}, which is not installed"
    return f"{default}, which failed to import ({' '.join(str(error).split())})"


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
