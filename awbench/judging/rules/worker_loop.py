"""A rule judge worker process's loop (the parent side is awbench.judging.rules.workers). It imports only the
rules and the standard library, no pydantic and no asyncio: every worker holds its own copy of what it
imports."""

from __future__ import annotations

import gc
import itertools
import os
import pickle
import signal
import sys
import traceback
from typing import Any

from awbench.judging.rules.score import RuleScorer

HEADER_BYTES = 8  # each frame, either way, is its length in this many bytes (little-endian), then a pickle
KEPT_TRAJECTORIES = 16  # the histories a worker keeps to extend, and its RuleScorer's indexes
# Scoring makes no reference cycles (none found after scoring the synthetic benchmark), so reference counting
# frees what a worker drops, and the cyclic collector would only walk the worker's caches again and again (9%
# of the workers' CPU on the synthetic benchmark). A worker collects every COLLECT_EVERY tasks instead, in
# case something does leave a cycle, and freezes what survives, so that the next collection walks only what
# came after.
COLLECT_EVERY = 1024


def serve() -> None:
    """Read a task, score it, answer ("ok", RuleResult) or ("error", traceback); until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tasks, answers = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # a stray print must not corrupt the answers
    scorer = RuleScorer(max_trajectories=KEPT_TRAJECTORIES)
    histories: dict[str, list[str]] = {}
    gc.disable()
    try:
        for scored in itertools.count(1):
            if len(header := tasks.read(HEADER_BYTES)) < HEADER_BYTES:
                break
            size = int.from_bytes(header, "little")
            if len(frame := tasks.read(size)) < size:
                break
            domain, trajectory, ground_truth, prediction, common, new, forget = pickle.loads(frame)
            for gone in forget:
                del histories[gone]
            history = histories[trajectory] = [*histories.get(trajectory, ())[:common], *new]
            try:
                answer: tuple[str, Any] = (
                    "ok",
                    scorer.score(
                        domain=domain,
                        trajectory=trajectory,
                        ground_truth=ground_truth,
                        prediction=prediction,
                        history=history,
                    ),
                )
            except Exception:
                answer = ("error", traceback.format_exc())
            reply = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            answers.write(len(reply).to_bytes(HEADER_BYTES, "little"))
            answers.write(reply)
            answers.flush()
            if scored % COLLECT_EVERY == 0:
                gc.collect()
                gc.freeze()
    except BrokenPipeError:
        os._exit(0)  # the parent went away mid-task: nobody is left to answer, or to read a traceback
    # A short read is the parent closing the pipe (done, or gone): exit without a word.
