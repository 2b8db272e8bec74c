"""Full-size rule judge inputs built from the bundled sample, for tests/judging/test_rules_scorer.py and
bench/rules_speed.py.

The real benchmark's contexts average 13K-59K tokens (histories of ~50K-250K characters) over 12-38 turns;
the sample's trajectories are far shorter, so a full-size trajectory follows a domain's sample trajectories
turn by turn, again and again, each observation scaled up by copies of the sample's (see
full_size_trajectory).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass

import pytest

from awbench.domains import OBSERVATION_MARKER
from awbench.resources import sample_dir

# (turns, mean history characters over the turns) per domain, within the real benchmark's ranges.
FULL_SIZE: dict[str, tuple[int, int]] = {
    "mcp": (20, 100_000),
    "search": (12, 60_000),
    "terminal": (38, 50_000),
    "swe": (30, 150_000),
    "android": (20, 250_000),
    "web": (16, 250_000),
    "os": (14, 200_000),
}
ACTION_HEADING = "**Action:**\n"


@dataclass(frozen=True)
class Turn:
    """One evaluated turn, as the judge gets it (markers stripped, actions with their heading)."""

    domain: str
    trajectory: str
    history: list[str]  # earlier actions and observations, then the current action
    ground_truth: str
    prediction: str


def _strip_marker(text: str) -> str:
    return text.split("\n", 1)[1] if text.startswith(OBSERVATION_MARKER) else text


def sample_turns(domain: str) -> list[tuple[str, str]]:
    """(action body, observation) of every turn of the domain's sample trajectories, in order."""
    path = sample_dir() / f"{domain}_test.jsonl"
    if not path.exists():
        pytest.skip(f"sample data not available: {path}")
    longest: dict[int, dict] = {}
    for line in path.read_text(encoding="utf-8").split("\n"):  # "\n" only: strings hold U+2028
        if line.strip():
            record = json.loads(line)
            if record["id"] not in longest or record["turn_idx"] > longest[record["id"]]["turn_idx"]:
                longest[record["id"]] = record
    return [
        (action.split(ACTION_HEADING, 1)[-1], _strip_marker(observation))
        for record in longest.values()
        for action, observation in zip(record["prompt"], record["response"])
    ]


def _rot13(text: str) -> str:
    return text.translate(
        str.maketrans(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
        )
    )


def prediction_for(truth: str, previous: str, seed: int) -> str:
    """A plausible imperfect prediction: most of the truth, a third of its lines rewritten (new text, so
    nothing is found in a cache), now and then the previous observation instead."""
    rng = random.Random(seed)
    if rng.random() < 0.15 and previous:
        return previous
    lines = truth.split("\n")
    return "\n".join(_rot13(line) if rng.random() < 1 / 3 else line for line in lines)


def _vary(text: str, variant: int) -> str:
    """The text with its digits permuted (variant 0 leaves it as it is): formats, JSON and markup stay valid,
    lines with numbers become other lines."""
    if variant == 0:
        return text
    digits = list("0123456789")
    random.Random(variant).shuffle(digits)
    return text.translate(str.maketrans("0123456789", "".join(digits)))


def full_size_trajectory(domain: str, turns: int | None = None, mean_history_chars: int | None = None) -> list[Turn]:
    """Every turn of one long trajectory of `domain`, in order. It follows the sample's trajectories turn by
    turn, so consecutive observations differ as real consecutive observations do (a screen mostly stays, a
    shell prints new output), and passes through them again until it has its turns. Each observation is
    several copies of the sample's, each copy with its digits permuted its own way (the same way from turn to
    turn, another way on each pass), so that the history reaches its size without repeating itself."""
    default_turns, default_chars = FULL_SIZE[domain]
    turns = turns or default_turns
    mean_history_chars = mean_history_chars or default_chars
    pieces = sample_turns(domain)
    mean_observation = sum(len(observation) for _action, observation in pieces) / len(pieces)
    # The history of turn t holds t-1 turns, so its mean over the trajectory holds (turns-1)/2 of them.
    per_turn = 2 * mean_history_chars / max(1, turns - 1)
    copies = max(1, math.ceil(per_turn / mean_observation))
    actions, observations = [], []
    for t in range(turns):
        sample_pass, j = divmod(t, len(pieces))
        action, observation = pieces[j]
        actions.append(f"### Turn {t + 1}\n{ACTION_HEADING}{action}")
        observations.append("\n".join(_vary(observation, sample_pass * copies + c) for c in range(copies)))
    trajectory = f"{domain}/full-size"
    out: list[Turn] = []
    history: list[str] = []
    for t in range(turns):
        truth = observations[t]
        previous = observations[t - 1] if t else ""
        out.append(Turn(domain, trajectory, [*history, actions[t]], truth, prediction_for(truth, previous, t)))
        history += [actions[t], truth]
    return out


# ----------------------------------------------------------------------------- tests
