"""Judging at the prompt cache's price: `awbench run` over the synthetic benchmark against candidate and judge servers
that bill prompt caching by OpenAI's documented rules (bench/delay_server.py: 1,024-token minimum, 128-token steps,
a prefix cached once a request with it has been processed, eviction after idle minutes), measured from outside.

    python bench/prompt_cache.py [--scale 0.25] [--delay 0.5] [--judge-concurrency 16] [--code DIR] [--data DIR]
    python bench/prompt_cache.py --lag-sweep [--delay 0.5]

What it reports, for each server: the prompt tokens it was sent, those it billed as cached, and the ideal (what it
would have billed had every request been sent after the shorter requests sharing its prefix were answered, the
server's `ideal_cached_tokens`); for the judge, the bill at the judge model's list price (GPT-5.2's, with its
cached-input price) computed from the server's own counts, against the cost the run recorded from the usage it was
sent, and the bill without any cache; the wall time against 1.5 x n x delay / judge concurrency + 10 s (n: judge
calls). `--code DIR` runs the awbench of another checkout (e.g. an export of main, for "before").

`--lag-sweep` measures how long after a request its successor must be sent to find its prefix cached: pairs of
requests (a prompt, then a longer one extending it) sent `lag` seconds apart.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import _common
import synth
from delay_server import DelayServer
from full_run import BOOTSTRAP, Measured, run_measured

from awbench.judging.cost import KNOWN_PRICES, usage_cost

REPO = Path(__file__).resolve().parent.parent


def command(args: argparse.Namespace, data: Path, output: Path, candidate: str, judge: str) -> list[str]:
    return [
        sys.executable, "-c", BOOTSTRAP, "run", "--model", "synth-model", "--base-url", candidate, "--data", str(data),
        "--concurrency", str(args.concurrency), "--judge", "llm", "--judge-model", args.judge_model,
        "--judge-base-url", judge, "--judge-concurrency", str(args.judge_concurrency),
        "--output", str(output), "--run-name", "bench",
    ]  # fmt: skip


def recorded_cost(run_dir: Path) -> float:
    """What the run recorded as its judge's cost: the sum over its judgments."""
    total = 0.0
    for path in (run_dir / "judges").glob("*/judgments.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                total += json.loads(line).get("cost_usd") or 0.0
    return total


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def report(args: argparse.Namespace, run: Measured, run_dir: Path) -> dict[str, object]:
    price = KNOWN_PRICES[args.judge_model]
    judge, candidate = run.server_stats["judge"], run.server_stats["candidate"]
    n = judge["requests"]
    bound = 1.5 * n * args.delay / args.judge_concurrency + 10
    bill = usage_cost(price, judge["prompt_tokens"], judge["completion_tokens"], judge["cached_tokens"])
    uncached = usage_cost(price, judge["prompt_tokens"], judge["completion_tokens"])
    ideal_bill = usage_cost(price, judge["prompt_tokens"], judge["completion_tokens"], judge["ideal_cached_tokens"])
    cost = recorded_cost(run_dir)
    rows = []
    for name, stats in (("candidate", candidate), ("judge", judge)):
        rows.append([
            name, stats["requests"], stats["prompt_tokens"], stats["cached_tokens"], stats["ideal_cached_tokens"],
            share(stats["cached_tokens"], stats["prompt_tokens"]), share(stats["ideal_cached_tokens"], stats["prompt_tokens"]),
            share(stats["cached_tokens"], stats["ideal_cached_tokens"]),
        ])  # fmt: skip
    print(
        _common.table(
            ["server", "requests", "prompt tokens", "cached", "ideal cached", "cached share", "ideal share", "of ideal"],
            rows,
        )
    )
    print(
        f"\njudge bill at {args.judge_model}'s list price (${price.input}/${price.cached_input}/${price.output} per M "
        f"input/cached/output), from the server's counts: ${bill:,.2f} (input ${bill - judge['completion_tokens'] * price.output / 1e6:,.2f}); "
        f"without the cache ${uncached:,.2f}; at the ideal ${ideal_bill:,.2f}"
    )
    print(f"the run's recorded judge cost: ${cost:,.6f} (the server's bill ${bill:,.6f}; difference {cost - bill:+.2e})")
    print(f"wall {run.wall_s:.2f} s against the bound 1.5 x {n} x {args.delay} / {args.judge_concurrency} + 10 = {bound:.2f} s")
    of_ideal = judge["cached_tokens"] / judge["ideal_cached_tokens"] if judge["ideal_cached_tokens"] else 0.0
    print(
        f"targets: cached >= 90% of ideal: {'met' if of_ideal >= 0.9 else 'MISSED'} ({of_ideal:.1%}); wall within the "
        f"bound: {'met' if run.wall_s <= bound else 'MISSED'}; cost = bill: {'met' if abs(cost - bill) <= 1e-6 * max(1.0, bill) else 'MISSED'}"
    )
    return {"bill": bill, "uncached_bill": uncached, "ideal_bill": ideal_bill, "recorded_cost": cost, "bound_s": bound}


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def lag_sweep(delay: float) -> None:
    """A prompt, then one extending it `lag` seconds later: what of the first the second finds cached."""
    lags = [0.0, delay * 0.25, delay * 0.5, delay * 0.9, delay * 1.1, delay * 1.5, delay * 3]
    rows = []
    with DelayServer(delay, role="judge") as server:
        for i, lag in enumerate(lags):
            first = [{"role": "system", "content": f"pair {i} " + "history " * 3000}]
            second = [*first, {"role": "user", "content": "the next turn " * 500}]
            answer: dict = {}
            sent = threading.Thread(target=lambda m=first: answer.update(post(server.url, {"model": "m", "messages": m})))
            sent.start()
            time.sleep(lag)
            later = post(server.url, {"model": "m", "messages": second})
            sent.join()
            cached = later["usage"]["prompt_tokens_details"]["cached_tokens"]
            rows.append([f"{lag:.3f}", answer["usage"]["prompt_tokens"], cached, share(cached, answer["usage"]["prompt_tokens"])])
    print(f"machine: {_common.machine()}; the server answers (and processes) each request in {delay} s")
    print(_common.table(["lag s", "first's prompt tokens", "second's cached tokens", "of the first"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, help="synthetic data directory (default: a temporary one, reused)")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per answer, both servers")
    parser.add_argument("--concurrency", type=int, default=16, help="the candidate's")
    parser.add_argument("--judge-concurrency", type=int, default=16)
    parser.add_argument("--judge-model", default="gpt-5.2", choices=sorted(KNOWN_PRICES))
    parser.add_argument("--code", type=Path, default=REPO, help="the awbench checkout to run (default: this one)")
    parser.add_argument("--keep", type=Path, help="write the run here and keep it")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--json", type=Path, help="also write the measurements to this JSON file")
    parser.add_argument("--lag-sweep", action="store_true", help="only measure how long a successor must wait")
    args = parser.parse_args()
    if args.lag_sweep:
        lag_sweep(args.delay)
        return

    data = synth.ensure(args.data, args.seed, args.scale)
    output = args.keep or Path(tempfile.mkdtemp(prefix="awbench-cache-"))
    logs = output / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env |= {"OPENAI_API_KEY": "bench-key", "PYTHONPATH": str(args.code.resolve()), "COLUMNS": "120"}
    load_before = os.getloadavg()[0]
    with (
        DelayServer(args.delay, role="candidate", models=["synth-model"]) as candidate,
        DelayServer(args.delay, role="judge", models=[args.judge_model]) as judge,
    ):
        run_command = command(args, data, output, candidate.url, judge.url)
        print(f"awbench: {args.code} ; command: awbench {' '.join(run_command[3:])}", flush=True)
        servers = {"candidate": candidate, "judge": judge}
        measured = run_measured("run", run_command, env, logs, args.timeout, servers, cwd=args.code.resolve())
    print(f"\nmachine: {_common.machine()}; load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")
    print(f"data: {data}; exit {measured.exit_code}; wall {measured.wall_s:.2f} s; CPU {measured.cpu_s:.2f} s\n")
    if measured.exit_code != 0:
        print(f"stderr tail:\n{measured.stderr_tail}\nstdout tail:\n{measured.stdout_tail}")
    found = report(args, measured, output / "bench")
    if args.json:
        args.json.write_text(json.dumps({"run": measured.__dict__, **found, "delay_s": args.delay}, indent=2) + "\n")
    if args.keep is None:
        shutil.rmtree(output, ignore_errors=True)


if __name__ == "__main__":
    main()
