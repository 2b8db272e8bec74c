"""Sample -> what a Python world model (`--model python:...`) is given beside the messages: the same turn as a
structured record, for models that rebuild the environment's state rather than read a chat.

It holds exactly what the messages hold: the system prompt, the earlier turns' actions and real observations,
and the current action. Never the observation to predict nor any later turn, which the benchmark record also
carries."""

from __future__ import annotations

from dataclasses import dataclass

from awbench.records import Sample


@dataclass(frozen=True)
class Turn:
    action: str
    observation: str  # the environment's real answer, as the data holds it (with its observation marker)


@dataclass(frozen=True)
class WorldModelSample:
    key: str  # `{domain}/{id}/{turn}`, awbench's sample key
    domain: str
    id: int | str  # the trajectory's id in the benchmark file
    trajectory_id: str  # the same for every turn of one trajectory
    turn: int  # 1-based: the turn whose observation is to be predicted
    total_turns: int
    system: str  # the system prompt ("" when the data has none)
    history: tuple[Turn, ...]  # turns 1 .. turn-1, oldest first
    action: str  # the current turn's action


def world_model_sample(sample: Sample) -> WorldModelSample:
    record = sample.record
    return WorldModelSample(
        key=sample.key,
        domain=record.domain,
        id=record.id,
        trajectory_id=record.trajectory_id,
        turn=record.turn_idx,
        total_turns=record.total_turns,
        system=record.system_str,
        history=tuple(Turn(record.prompt[i], record.response[i]) for i in range(record.turn_idx - 1)),
        action=record.action,
    )
