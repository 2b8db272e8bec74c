"""The reference evaluation's style, as a baseline: one request at a time with the synchronous openai SDK
(`client.chat.completions.create(...)` in a loop), first inference over every sample, then judging.

It runs that loop on N samples of the synthetic benchmark (bench/synth.py) against the delay servers
(bench/delay_server.py: a candidate and a judge, each in its own process) and extrapolates linearly to the
whole data set: every sample costs one candidate and one judge round trip, one after the other, and nothing
overlaps, so the full run takes (wall for N) / N x (samples in the data). The N samples are spread evenly
over the data files in the published domain order, so the domain mix (and the context sizes) follow the
whole set's.

Messages are in the reference layout. Candidate: the system prompt (if non-empty), then user(prompt[i]) /
assistant(response[i]) for each earlier turn, then user(current action). Judge: a system prompt (the domain's
rubric from judges/rubric/, for a realistic length) and one user prompt with the context (earlier turns), the
current turn, the prediction and the ground truth.

    python bench/reference_loop.py [--n 40] [--delay 0.5] [--scale 1.0] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import openai

import synth
from delay_server import DelayServer

REPO = Path(__file__).resolve().parent.parent
PREDICTION = re.compile(r"<predicted_observation>(.*?)(?:</predicted_observation>|\Z)", re.S)
VERDICT = re.compile(r"<final_evaluation>.*?```json\s*(\{.*?\})\s*```", re.S)


def evenly_spaced(data: Path, n: int) -> tuple[list[dict], int]:
    """n records spread evenly over all the data files (published domain order), and the number of records."""
    files = [data / f"{domain}_test.jsonl" for domain in synth.PUBLISHED if (data / f"{domain}_test.jsonl").is_file()]
    counts = []
    for file in files:
        with file.open("rb") as handle:
            counts.append(sum(1 for line in handle if line.strip()))
    total = sum(counts)
    wanted = sorted({min(total - 1, int((i + 0.5) * total / n)) for i in range(min(n, total))})
    records, index, pick = [], 0, iter(wanted)
    target = next(pick, None)
    for file in files:
        with file.open("rb") as handle:  # lines end with "\n" only; records hold U+2028
            for line in handle:
                if not line.strip():
                    continue
                if index == target:
                    records.append(json.loads(line))
                    target = next(pick, None)
                index += 1
    return records, total


def candidate_messages(record: dict) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": record["system_str"]}] if record["system_str"] else []
    for i in range(record["turn_idx"] - 1):
        messages.append({"role": "user", "content": record["prompt"][i]})
        messages.append({"role": "assistant", "content": record["response"][i]})
    messages.append({"role": "user", "content": record["prompt"][record["turn_idx"] - 1]})
    return messages


def judge_messages(record: dict, prediction: str) -> list[dict[str, str]]:
    domain = record["task"].rsplit("/", 1)[-1]
    rubric = REPO / "judges" / "rubric" / f"{domain}.md"
    system = rubric.read_text() if rubric.is_file() else "You judge simulated environment observations."
    turn = record["turn_idx"]
    context = "\n\n".join(f"{record['prompt'][i]}\n{record['response'][i]}" for i in range(turn - 1)) or "(none)"
    user = (
        f"## Context\n\n{context}\n\n## Current turn\n\n{record['prompt'][turn - 1]}\n\n"
        f"## Prediction\n\n{prediction}\n\n## Ground truth\n\n{record['response'][turn - 1]}\n\n"
        "Score format, factuality, consistency, realism and quality from 1 to 5, and end with "
        "<final_evaluation>```json {...}```</final_evaluation>."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40, help="samples to run (spread over the whole set)")
    parser.add_argument("--delay", type=float, default=0.5, help="server delay per request, seconds")
    parser.add_argument("--scale", type=float, default=1.0, help="of the synthetic benchmark (generated if missing)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data", type=Path, help="a synthetic data directory (default: bench/synth.py's temporary one)"
    )
    args = parser.parse_args()

    data = synth.ensure(args.data, args.seed, args.scale) if args.data is None or not args.data.is_dir() else args.data
    records, total = evenly_spaced(data, args.n)
    n = len(records)
    with DelayServer(args.delay, role="candidate", models=["synth-model"]) as candidate, \
         DelayServer(args.delay, role="judge", models=["synth-judge"]) as judge:  # fmt: skip
        client = openai.OpenAI(base_url=candidate.url, api_key="bench-key", timeout=600)
        judge_client = openai.OpenAI(base_url=judge.url, api_key="bench-key", timeout=600)

        started = time.perf_counter()
        predictions = []
        for record in records:
            response = client.chat.completions.create(
                model="synth-model", messages=candidate_messages(record), temperature=0.6, max_tokens=32768
            )
            match = PREDICTION.search(response.choices[0].message.content or "")
            predictions.append(match.group(1).strip() if match else "")
        inferred = time.perf_counter()
        scores = []
        for record, prediction in zip(records, predictions):
            response = judge_client.chat.completions.create(
                model="synth-judge", messages=judge_messages(record, prediction), temperature=0.6, max_tokens=32768
            )
            match = VERDICT.search(response.choices[0].message.content or "")
            scores.append(json.loads(match.group(1))["scores"] if match else None)
        finished = time.perf_counter()
        calls = (candidate.stats()["requests"], judge.stats()["requests"])

    infer_s, judge_s, wall = inferred - started, finished - inferred, finished - started
    per_sample = wall / n
    print(
        f"data: {data} ({total} samples); ran {n} samples spread evenly over it; server delay {args.delay * 1000:.0f} ms"
    )
    print(f"calls: candidate {calls[0]}, judge {calls[1]}; verdicts parsed {sum(s is not None for s in scores)} of {n}")
    print(f"measured wall for {n}: {wall:.2f} s (inference {infer_s:.2f} s, judging {judge_s:.2f} s)")
    print(
        f"per sample: {per_sample:.3f} s (candidate {infer_s / n:.3f} s + judge {judge_s / n:.3f} s; "
        f"the two delays alone are {2 * args.delay:.3f} s, so {(per_sample - 2 * args.delay) * 1000:.1f} ms of client and transfer overhead)"
    )
    print(f"host load average (1 min): {os.getloadavg()[0]:.2f}")
    print(
        f"extrapolated wall for {total}: {per_sample * total:,.0f} s ({per_sample * total / 60:.1f} min) "
        f"= {wall:.2f} s / {n} x {total} (linear: sequential requests, nothing overlaps; the sample mirrors the domain mix)"
    )


if __name__ == "__main__":
    main()
