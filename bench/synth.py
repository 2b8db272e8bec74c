"""A full-size *synthetic* AgentWorldBench, for measuring awbench only: never present it as the benchmark.

    python bench/synth.py --out DIR [--seed 0] [--scale 1.0]

It writes `DIR/{domain}_test.jsonl` in the exact schema and JSON layout of the bundled sample (`data/sample/`,
one `json.dumps(record, ensure_ascii=False)` per line), shaped like the published benchmark:

* samples per domain as published (mcp 286, search 458, terminal 354, swe 472, android 200, web 200, os 200;
  2,170 at scale 1.0; `--scale` multiplies them, at least one per domain and two for android);
* trajectories whose `total_turns` average the published turns per trajectory, with 3 to 7 evaluated turns
  each, drawn uniformly from the trajectory's turns, so consecutive samples of a trajectory share the system
  prompt and every earlier turn (`awbench data info` shows the mean `turn_idx` as "avg turns": about half
  the trajectory length here);
* contexts (system prompt + earlier turns + current action) averaging CONTEXT_TOKENS per domain (13K to 59K
  tokens of ~4 chars), about 400 MB of JSONL in all at scale 1.0 (the scale changes the number of samples,
  not their size);
* exactly one repeated sample key, in android (the real Android file has one), whose second row's last
  observation is the same screen "captured a little later" (one digit changed).

The text is the bundled sample's own (read by splitting files on "\\n" only; the Search observations keep
their U+2028, U+2029 and U+0085): each synthetic observation is one or more sample observations of the same
domain, joined and cut to a length drawn around the domain's per-turn size, with its digits permuted by a
per-turn permutation drawn from the seed, so observations differ between trajectories. Actions likewise.

Output is written streaming (one trajectory in memory at a time) and is byte-identical for the same seed and
scale. A `synth.json` beside the files records the seed, scale, generator version and per-domain summary;
`README.txt` says what the directory is. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"
VERSION = 1  # bump when the output for a given seed and scale changes

# Published AgentWorldBench shape: evaluated samples and average turns per trajectory (awbench.domains holds
# the same numbers; this script reads none of awbench so that it runs against any version of the package).
PUBLISHED: dict[str, tuple[int, float]] = {
    "mcp": (286, 23.1),
    "search": (458, 15.5),
    "terminal": (354, 26.7),
    "swe": (472, 28.1),
    "android": (200, 37.8),
    "web": (200, 14.2),
    "os": (200, 12.7),
}
# Average context per sample, in tokens of ~4 characters: chosen for the spread of the real data (terminal
# output is short, Android UI dumps long) and for ~400 MB of JSONL in total.
CONTEXT_TOKENS: dict[str, int] = {
    "mcp": 36_000,
    "search": 40_000,
    "terminal": 12_600,
    "swe": 42_000,
    "android": 59_000,
    "web": 50_000,
    "os": 45_000,
}
CHARS_PER_TOKEN = 4
EVALUATED_PER_TRAJECTORY = (3, 7)  # inclusive range of evaluated turns per trajectory
OBSERVATION_SIGMA = 0.7  # log-normal spread of observation lengths around the domain's mean
DUPLICATE_DOMAIN = "android"
MARKER = "**Environment Observation:**\n"
_ACTION_HEADER = re.compile(r"\A### Turn \d+\n\*\*Action:\*\*\n")
_DIGIT = re.compile(r"\d")
DIGITS = "0123456789"


@dataclass
class Pool:
    """A domain's text in the bundled sample: system prompts, action bodies and observation bodies."""

    systems: list[str]
    actions: list[str]
    observations: list[str]


def read_pool(domain: str, sample_dir: Path = SAMPLE_DIR) -> Pool:
    lines = (sample_dir / f"{domain}_test.jsonl").read_bytes().split(b"\n")  # "\n" only: records hold U+2028
    records = [json.loads(line) for line in lines if line.strip()]
    systems: dict[str, None] = {}
    turns: dict[tuple[object, int], tuple[str, str]] = {}
    for record in records:
        systems[record["system_str"]] = None
        # Earlier turns are the same in every record of a trajectory; the last one of a duplicated key is not.
        for i, (action, observation) in enumerate(zip(record["prompt"], record["response"])):
            turns.setdefault((record["id"], i), (action, observation))
    actions = [_ACTION_HEADER.sub("", action, count=1) for action, _ in turns.values()]
    observations = [obs[len(MARKER) :] if obs.startswith(MARKER) else obs for _, obs in turns.values()]
    return Pool(list(systems), actions, observations)


@dataclass
class Trajectory:
    id: int
    total_turns: int
    evaluated: list[int]  # turn_idx of each row, in file order (the duplicate repeats one)


@dataclass
class DomainSummary:
    domain: str
    samples: int
    trajectories: int
    avg_turns: float  # mean total_turns over trajectories
    avg_context_chars: float
    bytes: int

    def line(self) -> str:
        return (
            f"{self.domain:<9} {self.samples:>5} samples  {self.trajectories:>4} trajectories  "
            f"avg turns {self.avg_turns:5.1f}  avg context {self.avg_context_chars:>9,.0f} chars "
            f"(~{self.avg_context_chars / CHARS_PER_TOKEN / 1000:4.1f}K tokens)  {self.bytes / 1e6:7.1f} MB"
        )


def sample_count(domain: str, scale: float) -> int:
    minimum = 2 if domain == DUPLICATE_DOMAIN else 1
    return max(minimum, round(PUBLISHED[domain][0] * scale))


def plan(domain: str, n: int, rng: random.Random) -> list[Trajectory]:
    """Trajectories and their evaluated turns: n rows in all, total_turns averaging the published value."""
    low, high = EVALUATED_PER_TRAJECTORY
    sizes: list[int] = []
    while sum(sizes) < n:
        sizes.append(min(rng.randint(low, high), n - sum(sizes)))
    average = PUBLISHED[domain][1]
    totals = [max(k, 2, round(average * rng.uniform(0.45, 1.55))) for k in sizes]
    # Nudge the turn counts so that their mean is the published one (as far as the rounding allows).
    target = round(average * len(totals))
    step = 1 if target > sum(totals) else -1
    i = 0
    while sum(totals) != target and i < 100 * len(totals):
        j = i % len(totals)
        if step > 0 or totals[j] > max(sizes[j], 2):
            totals[j] += step
        i += 1
    ids = sorted(rng.sample(range(1, 20 * len(sizes) + 1), len(sizes)))
    trajectories = [
        Trajectory(id_, total, sorted(rng.sample(range(1, total + 1), k))) for id_, total, k in zip(ids, totals, sizes)
    ]
    if domain == DUPLICATE_DOMAIN:
        # One repeated (id, turn_idx): the trajectory keeps its row count, one of its turns appears twice.
        # The first trajectory has min(3, n) >= 2 rows (android always has n >= 2), so there is always one.
        dup = next(t for t in trajectories[len(trajectories) // 2 :] + trajectories if len(t.evaluated) >= 2)
        dup.evaluated[-1] = dup.evaluated[-2]
    return trajectories


def _permutation(rng: random.Random) -> dict[int, int]:
    shuffled = list(DIGITS)
    rng.shuffle(shuffled)
    return str.maketrans(DIGITS, "".join(shuffled))


def _observation(pool: Pool, length: int, rng: random.Random) -> str:
    """Sample observations of the domain, joined with "\\n" until `length`, cut at a line end near it."""
    parts: list[str] = []
    size = 0
    while size < length:
        part = pool.observations[rng.randrange(len(pool.observations))]
        parts.append(part)
        size += len(part) + 1
    text = "\n".join(parts)
    if len(text) > length:
        cut = text.rfind("\n", length // 2, length)
        text = text[: cut if cut > 0 else length]
    return text


def _recaptured(observation: str) -> str:
    """The same screen a little later: its first digit moved on by one."""
    match = _DIGIT.search(observation)
    if match is None:
        return observation + " "
    i = match.start()
    return observation[:i] + str((int(observation[i]) + 1) % 10) + observation[i + 1 :]


def _dumps(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def write_domain(domain: str, out: Path, seed: int, scale: float, pool: Pool | None = None) -> DomainSummary:
    rng = random.Random(f"awbench-synth/{VERSION}/{seed}/{domain}")
    pool = pool or read_pool(domain)
    trajectories = plan(domain, sample_count(domain, scale), rng)
    rows = [(t, turn) for t in trajectories for turn in t.evaluated]
    # Size the observations so that the mean context over the rows is the domain's target.
    mean_system = sum(map(len, pool.systems)) / len(pool.systems) + 40
    mean_action = sum(map(len, pool.actions)) / len(pool.actions) + len("### Turn 10\n**Action:**\n")
    mean_earlier = sum(turn - 1 for _, turn in rows) / len(rows)
    target = CONTEXT_TOKENS[domain] * CHARS_PER_TOKEN
    per_turn = (target - mean_system - mean_action * (mean_earlier + 1)) / max(mean_earlier, 1.0)
    per_observation = max(200.0, per_turn - len(MARKER))

    task = _dumps(f"agentworld/{domain}")
    contexts = 0
    path = out / f"{domain}_test.jsonl"
    with path.open("wb") as file:
        for trajectory in trajectories:
            table = _permutation(rng)
            base = pool.systems[rng.randrange(len(pool.systems))]
            system = f"Environment instance {rng.getrandbits(48):012x}.\n\n" + base.translate(table)
            needed = max(trajectory.evaluated)
            actions: list[str] = []
            observations: list[str] = []
            for turn in range(1, needed + 1):
                table = _permutation(rng)
                action = pool.actions[rng.randrange(len(pool.actions))].translate(table)
                length = max(
                    40, round(per_observation * math.exp(rng.gauss(0, OBSERVATION_SIGMA) - OBSERVATION_SIGMA**2 / 2))
                )
                observation = _observation(pool, length, rng).translate(table)
                actions.append(f"### Turn {turn}\n**Action:**\n{action}")
                observations.append(MARKER + observation)
            encoded_actions = [_dumps(a) for a in actions]
            encoded_observations = [_dumps(o) for o in observations]
            encoded_system = _dumps(system)
            # Prefix sums of the context length: system, then every earlier turn, then the current action.
            earlier = [0]
            for action, observation in zip(actions, observations):
                earlier.append(earlier[-1] + len(action) + len(observation))
            previous = None
            for turn in trajectory.evaluated:
                last = encoded_observations[turn - 1]
                if turn == previous:  # the repeated key: the same history, the screen captured later
                    last = _dumps(_recaptured(observations[turn - 1]))
                previous = turn
                response = encoded_observations[: turn - 1] + [last]
                line = (
                    f'{{"task": {task}, "id": {trajectory.id}, "prompt": [{", ".join(encoded_actions[:turn])}], '
                    f'"response": [{", ".join(response)}], "current_prompt": {encoded_actions[turn - 1]}, '
                    f'"system_str": {encoded_system}, "turn_idx": {turn}, "total_turns": {trajectory.total_turns}}}\n'
                )
                file.write(line.encode("utf-8"))
                contexts += len(system) + earlier[turn - 1] + len(actions[turn - 1])
    return DomainSummary(
        domain=domain,
        samples=len(rows),
        trajectories=len(trajectories),
        avg_turns=sum(t.total_turns for t in trajectories) / len(trajectories),
        avg_context_chars=contexts / len(rows),
        bytes=path.stat().st_size,
    )


def generate(out: Path, seed: int = 0, scale: float = 1.0, echo: bool = False) -> list[DomainSummary]:
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    for domain in PUBLISHED:
        summary = write_domain(domain, out, seed, scale)
        summaries.append(summary)
        if echo:
            print(summary.line(), flush=True)
    meta = {
        "generator": "bench/synth.py",
        "version": VERSION,
        "seed": seed,
        "scale": scale,
        "synthetic": True,
        "domains": {s.domain: {k: v for k, v in vars(s).items() if k != "domain"} for s in summaries},
    }
    (out / "synth.json").write_text(json.dumps(meta, indent=2) + "\n")
    (out / "README.txt").write_text(
        "SYNTHETIC data made by bench/synth.py from the bundled sample's text, shaped like AgentWorldBench\n"
        "(sample counts, turns, context sizes) for measuring awbench. It is NOT the benchmark; scores on it\n"
        "mean nothing.\n"
    )
    return summaries


def matches(out: Path, seed: int, scale: float) -> bool:
    """Whether `out` already holds this generator's output for this seed and scale (to reuse it)."""
    try:
        meta = json.loads((out / "synth.json").read_text())
    except (OSError, ValueError):
        return False
    if (meta.get("version"), meta.get("seed"), meta.get("scale")) != (VERSION, seed, scale):
        return False
    return all(
        (out / f"{d}_test.jsonl").is_file() and (out / f"{d}_test.jsonl").stat().st_size == meta["domains"][d]["bytes"]
        for d in PUBLISHED
    )


def default_dir(seed: int = 0, scale: float = 1.0) -> Path:
    return Path(tempfile.gettempdir()) / "awbench-synth" / f"seed{seed}-scale{scale:g}"


def ensure(out: Path | None, seed: int = 0, scale: float = 1.0) -> Path:
    """`out` (default: `default_dir`) holding this seed and scale: reused when it already does, else generated."""
    out = out or default_dir(seed, scale)
    if matches(out, seed, scale):
        print(f"synthetic data: reusing {out}", flush=True)
    else:
        print(f"synthetic data: generating {out} (seed {seed}, scale {scale:g})", flush=True)
        generate(out, seed, scale, echo=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies the number of samples (0.02: a CI-sized set)"
    )
    args = parser.parse_args()
    if args.scale <= 0:
        parser.error("--scale must be positive")
    started = time.perf_counter()
    summaries = generate(args.out, args.seed, args.scale, echo=True)
    samples = sum(s.samples for s in summaries)
    contexts = sum(s.avg_context_chars * s.samples for s in summaries) / samples
    size = sum(s.bytes for s in summaries)
    print(
        f"{'total':<9} {samples:>5} samples  {sum(s.trajectories for s in summaries):>4} trajectories  "
        f"avg context {contexts:,.0f} chars  {size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s -> {args.out}",
        file=sys.stdout,
    )


if __name__ == "__main__":
    main()
