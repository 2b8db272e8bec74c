"""The rule judge's cost per sample at the real benchmark's size: `rule_score` from cold caches for every
sample (nothing reused from one sample to the next), `rule_score` in trajectory order (its process-wide
caches warm), and `RuleScorer` in trajectory order (each trajectory's history indexed once and extended);
then all domains at once through the worker processes a large run uses (`RuleWorkers`, one per CPU).

The inputs are one long trajectory per domain built from the bundled sample (tests/rule_trajectories.py:
12-38 turns, mean histories of 50K-250K characters), every turn scored against an imperfect prediction.
Wall-clock and CPU time (of this process: what other processes take of a shared machine is not counted)
are the best of --rounds runs; the three ways must give identical results, which is checked.

    python bench/rules_speed.py [--rounds 3] [--domains terminal,web]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean

import _common
from rule_trajectories import FULL_SIZE, Turn, full_size_trajectory

from awbench.domains import DOMAINS
from awbench.judging.rules import RuleResult, RuleScorer, rule_score
from awbench.judging.rules.score import clear_caches
from awbench.judging.rules.workers import RuleWorkers, available_workers


def cold(turn: Turn) -> RuleResult:
    clear_caches()
    return rule_score(
        domain=turn.domain, ground_truth=turn.ground_truth, prediction=turn.prediction, history=turn.history
    )


def warm(turn: Turn) -> RuleResult:
    return rule_score(
        domain=turn.domain, ground_truth=turn.ground_truth, prediction=turn.prediction, history=turn.history
    )


def run(
    trajectories: dict[str, list[Turn]], score: Callable[[Turn], RuleResult]
) -> tuple[dict[str, tuple[float, float]], list[RuleResult]]:
    """(wall, CPU) ms/sample per domain, and the results in order."""
    clear_caches()
    gc.collect()
    per_domain, results = {}, []
    for domain, turns in trajectories.items():
        wall, cpu = time.perf_counter(), time.process_time()
        results.extend(score(turn) for turn in turns)
        per_domain[domain] = (
            (time.perf_counter() - wall) * 1000 / len(turns),
            (time.process_time() - cpu) * 1000 / len(turns),
        )
    return per_domain, results


def in_workers(turns: list[Turn], count: int) -> tuple[float, float, list[RuleResult]]:
    """(wall s, CPU s of this process and the workers, results in order) scoring `turns` in `count` workers,
    timed once the workers are up (each has scored a one-line task: a worker answers first after 0.25-0.35 s, which
    a run of thousands of samples spreads thin and these few would not)."""

    async def tasks(items: list[Turn], start: int = 0):
        for i, t in enumerate(items, start):
            yield i, (t.domain, t.trajectory, t.ground_truth, t.prediction, t.history)

    def cpu(workers: RuleWorkers) -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        ticks = sum(sum(map(int, Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13]))
                    for pid in workers.pids)  # fmt: skip
        return own.ru_utime + own.ru_stime + ticks / os.sysconf("SC_CLK_TCK")

    async def score() -> tuple[float, float, list[RuleResult]]:
        warm_up = [Turn(turns[0].domain, f"warm-up-{i}", [], "x", "x") for i in range(count)]
        async with RuleWorkers(count) as workers:
            _ = [pair async for pair in workers.score(tasks(warm_up, -count))]
            wall, before = time.perf_counter(), cpu(workers)
            results = dict([pair async for pair in workers.score(tasks(turns))])
            measured = time.perf_counter() - wall, cpu(workers) - before
        return *measured, [results[i] for i in range(len(turns))]

    return asyncio.run(score())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--domains", default=",".join(DOMAINS))
    parser.add_argument(
        "--workers", type=int, default=available_workers(), help="for the last way (default: one per CPU)"
    )
    args = parser.parse_args()
    domains = [d for d in args.domains.split(",") if d]

    trajectories = {domain: full_size_trajectory(domain) for domain in domains}
    samples = sum(len(turns) for turns in trajectories.values())
    print(_common.machine())
    print(f"{samples} samples, one trajectory per domain, every turn scored:")
    print(f"{'domain':9s} {'turns':>5s} {'mean history':>13s} {'mean truth':>11s}")
    for domain, turns in trajectories.items():
        history = mean(sum(map(len, turn.history)) for turn in turns)
        truth = mean(len(turn.ground_truth) for turn in turns)
        print(f"{domain:9s} {len(turns):5d} {history:>11,.0f} c {truth:>9,.0f} c")
    print()

    ways: dict[str, Callable[[], Callable[[Turn], RuleResult]]] = {
        "rule_score, cold caches per sample": lambda: cold,
        "rule_score, trajectory order": lambda: warm,
        "RuleScorer, trajectory order": lambda: (
            lambda scorer: (
                lambda turn: scorer.score(
                    domain=turn.domain,
                    trajectory=turn.trajectory,
                    ground_truth=turn.ground_truth,
                    prediction=turn.prediction,
                    history=turn.history,
                )
            )
        )(RuleScorer()),
    }
    best: dict[str, dict[str, tuple[float, float]]] = {}
    reference: list[RuleResult] | None = None
    for _ in range(args.rounds):
        for name, make in ways.items():
            per_domain, results = run(trajectories, make())
            if reference is None:
                reference = results
            elif results != reference:
                raise SystemExit(f"{name} gave other results than rule_score")
            kept = best.setdefault(name, per_domain)
            for domain, (wall, cpu) in per_domain.items():
                kept[domain] = (min(kept[domain][0], wall), min(kept[domain][1], cpu))

    workers_best: tuple[float, float] | None = None
    all_turns = [turn for turns in trajectories.values() for turn in turns]
    for _ in range(args.rounds if args.workers else 0):
        wall, cpu, results = in_workers(all_turns, args.workers)
        if results != reference:
            raise SystemExit("RuleWorkers gave other results than rule_score")
        workers_best = (min(wall, workers_best[0]), min(cpu, workers_best[1])) if workers_best else (wall, cpu)

    print(f"ms per sample, best of {args.rounds} rounds (every way gives identical results)")
    for column, label in ((0, "wall clock"), (1, "CPU time")):
        print(f"{label:36s}" + "".join(f"{d:>9s}" for d in domains) + f"{'all':>9s}")
        for name, per_domain in best.items():
            overall = sum(per_domain[d][column] * len(trajectories[d]) for d in domains) / samples
            print(f"  {name:34s}" + "".join(f"{per_domain[d][column]:9.1f}" for d in domains) + f"{overall:9.2f}")
    if workers_best:
        wall, cpu = (value * 1000 / samples for value in workers_best)
        print(
            f"RuleWorkers, {args.workers} workers, all domains at once (each trajectory on one worker, once the workers "
            f"are up): wall clock {wall:.2f}, CPU time (this process and the workers) {cpu:.2f}"
        )


if __name__ == "__main__":
    assert set(FULL_SIZE) == set(DOMAINS)
    main()
