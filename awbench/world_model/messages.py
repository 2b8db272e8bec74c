"""Sample -> the chat messages sent to the candidate world model, and the history its judges read."""

from __future__ import annotations

from functools import lru_cache

from awbench.records import BenchmarkRecord
from awbench.world_model.parsing import strip_observation_marker


def world_model_messages(record: BenchmarkRecord, drop_oldest_turns: int = 0) -> list[dict[str, str]]:
    """The full history, as the reference evaluation sends it: system prompt (when non-empty), then each
    earlier turn's action and real observation, then the current action.

    `drop_oldest_turns` removes that many of the oldest history turns, for prompts that overflow the
    context window; the system prompt and the current action are always kept.
    """
    messages = [{"role": "system", "content": record.system_str}] if record.system_str else []
    for i in range(drop_oldest_turns, record.turn_idx - 1):
        messages.append({"role": "user", "content": record.prompt[i]})
        messages.append({"role": "assistant", "content": record.response[i]})
    messages.append({"role": "user", "content": record.action})
    return messages


def earlier_turns(record: BenchmarkRecord) -> list[str]:
    """Earlier actions and their real observations, alternating, oldest first, as the data holds them."""
    turns = record.turn_idx - 1
    items = [""] * (2 * turns)
    items[0::2] = record.prompt[:turns]
    items[1::2] = record.response[:turns]
    return items


def judge_history(record: BenchmarkRecord) -> list[str]:
    """earlier_turns without observation markers: the history as awbench's LLM judges read it."""
    items = earlier_turns(record)
    items[1::2] = map(_observation, items[1::2])
    return items


# A trajectory's samples share their turns' strings (awbench.data.dataset); stripping each once gives its later
# samples the same objects too, so the judges' caches find them by identity instead of hashing and comparing
# a fresh copy of every observation for every sample.
_observation = lru_cache(maxsize=1024)(strip_observation_marker)
