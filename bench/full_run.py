"""End to end: `awbench run` over a full-size synthetic benchmark against fixed-delay candidate and judge
servers, measured from outside (wall, CPU, peak memory, calls made), then the same command again (a rerun of
a finished run, which should make no call), beside a plain `json.loads` loop over the data files.

    python bench/full_run.py [--delay 0.5] [--scale 1.0] [--concurrency 64] [--judge llm|rules] [--candidate server|oracle]

Steps:
  1. the synthetic data (bench/synth.py): reused when the directory already holds this seed and scale;
  2. a candidate and (with --judge llm) a judge server (bench/delay_server.py), each in its own process;
  3. `awbench run --model synth-model --base-url CANDIDATE --data DIR --judge-base-url JUDGE --judge-model
     synth-judge --concurrency C --judge-concurrency C --judge-price-in 1 --judge-price-out 1 --output TMP
     --run-name bench` (with --judge rules: `--judge rules` and no judge server) as a subprocess with
     OPENAI_API_KEY=bench-key, running the awbench of this checkout (PYTHONPATH = the repository root; `--code DIR`: another one);
     wall time, user+sys CPU and peak RSS come from os.wait4 on that process (its CPU includes the rule
     judge's worker processes, which it waits for), the workers' own peak RSS from /proc while they run
     (reported beside the process's: the sum bounds what the two held at once), what they held at once
     (the largest sum of their current RSS, polled every 0.1 s, so a shorter peak may be missed), the calls from each
     server's /stats;
     With --candidate oracle, `--model baseline:oracle` (every prediction the ground truth, made in the
     process) instead of a candidate server: with --judge rules, no call at all, so the run measures what
     awbench itself costs;
  4. the same command once more;
  5. `json.loads` over every line of the data files (best of two), the floor for anything that reads them.

Ratios: wall / ideal, where ideal = n x delay / concurrency is ONE stage's worth (a fully pipelined run, the
candidate and judge stages overlapping, could come close to it; stages run one after the other need about
twice that); CPU ms per request (the awbench process's user+sys, its workers' included, over the calls both
servers received); peak RSS (the process's plus its workers', and what they held at once) over the data size; rerun wall over the json.loads loop. A non-zero exit of awbench (1: too many failures)
does not stop the measurement; its stderr tail is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import synth
from delay_server import DelayServer

REPO = Path(__file__).resolve().parent.parent
BOOTSTRAP = "import sys; from awbench.cli import main; sys.argv[0] = 'awbench'; sys.exit(main())"


@dataclass
class Measured:
    label: str
    exit_code: int | None  # None: killed at the timeout
    wall_s: float
    cpu_s: float  # user + sys of the awbench process
    user_s: float
    sys_s: float
    peak_rss_bytes: int  # of the awbench process
    workers_peak_rss_bytes: int  # the sum of its child processes' peaks (the rule judge's workers)
    # The most the process and its children held at one time: the largest sum of their current RSS over the
    # polls (every 0.1 s), never more than the sum of the peaks, which may come at different times.
    together_peak_rss_bytes: int
    candidate_calls: int
    judge_calls: int
    server_stats: dict = field(default_factory=dict)
    stderr_tail: str = ""
    stdout_tail: str = ""
    stage_lines: list[str] = field(default_factory=list)  # awbench's progress lines for its stages

    @property
    def calls(self) -> int:
        return self.candidate_calls + self.judge_calls

    @property
    def total_peak_rss_bytes(self) -> int:
        return self.peak_rss_bytes + self.workers_peak_rss_bytes


def tail(path: Path, lines: int = 15) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def awbench_command(
    args: argparse.Namespace, data: Path, output: Path, candidate: str | None, judge: str | None
) -> list[str]:
    model = (
        ["--model", "synth-model", "--base-url", candidate or ""]
        if args.candidate == "server"
        else ["--model", "baseline:oracle"]
    )
    command = [
        sys.executable, "-c", BOOTSTRAP, "run", *model, "--data", str(data),
        "--concurrency", str(args.concurrency), "--output", str(output), "--run-name", "bench",
    ]  # fmt: skip
    if args.judge == "llm":
        command += [
            "--judge", "llm", "--judge-base-url", judge or "", "--judge-model", "synth-judge",
            "--judge-concurrency", str(args.judge_concurrency), "--judge-price-in", "1", "--judge-price-out", "1",
        ]  # fmt: skip
    else:
        command += ["--judge", "rules"]
    return command + list(args.extra_arg or [])


def run_measured(label: str, command: list[str], env: dict[str, str], logs: Path, timeout: float,
                 servers: dict[str, DelayServer], cwd: Path = REPO) -> Measured:  # fmt: skip
    """`cwd`: where the command runs, which `python -c` puts first on sys.path (the awbench it imports)."""
    for server in servers.values():
        server.stats(reset=True)
    out, err = logs / f"{label}.stdout", logs / f"{label}.stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
        # os.wait4 on the pid reports this run's CPU (with its waited-for workers') and its own peak RSS
        # (RUSAGE_CHILDREN would mix in the runs before it); Popen is told the outcome so it does not wait again.
        status, usage, killed, child_peaks, together = _wait(process.pid, started + timeout)
        wall = time.perf_counter() - started
        process.returncode = -signal.SIGKILL if killed else os.waitstatus_to_exitcode(status)
    stats = {name: server.stats(reset=True) for name, server in servers.items()}
    exit_code = None if killed else os.waitstatus_to_exitcode(status)
    return Measured(
        label=label,
        exit_code=exit_code,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        user_s=usage.ru_utime,
        sys_s=usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * 1024,  # Linux reports KiB
        workers_peak_rss_bytes=sum(child_peaks.values()),
        together_peak_rss_bytes=together,
        candidate_calls=stats.get("candidate", {}).get("requests", 0),
        judge_calls=stats.get("judge", {}).get("requests", 0),
        server_stats=stats,
        stderr_tail=tail(err) if exit_code != 0 else "",
        stdout_tail=tail(out, 25),
        stage_lines=[
            line for line in out.read_text(errors="replace").split("\n") if line.startswith(("infer", "judge"))
        ],
    )


def _wait(pid: int, deadline: float) -> tuple[int, object, bool, dict[int, int], int]:
    """(status, rusage, killed, peak RSS bytes of each child process seen, the largest polled sum of the
    process's and its children's RSS)."""
    killed, polls, together = False, 0, 0
    child_peaks: dict[int, int] = {}
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, killed, child_peaks, together
        if not killed and time.perf_counter() > deadline:
            os.kill(pid, signal.SIGKILL)
            killed = True
        if polls % 20 == 0:  # every 0.1 s
            now = _rss_of(pid, "VmRSS:")
            for child in _children(pid):
                child_peaks[child] = max(child_peaks.get(child, 0), _rss_of(child, "VmHWM:"))
                now += _rss_of(child, "VmRSS:")
            together = max(together, now)
        polls += 1
        time.sleep(0.005)


def _children(pid: int) -> list[int]:
    """The processes `pid` started, except those forked and not yet running a program of their own (about
    to run `git`, say): until then they show the parent's memory as theirs."""
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []  # not Linux, or the process is gone
    return [child for child in children if _cmdline(child) not in (own, b"")]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _rss_of(pid: int, field: str) -> int:
    """A memory field of /proc/PID/status in bytes (VmRSS: now, VmHWM: the peak); 0 once the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith(field)), 0)


def json_loads_loop(data: Path) -> float:
    """Best of two: read each file and json.loads every line (split on "\\n" only)."""
    files = sorted(data.glob("*_test.jsonl"))
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        for file in files:
            for line in file.read_bytes().split(b"\n"):
                if line.strip():
                    json.loads(line)
        best = min(best, time.perf_counter() - started)
    return best


def count_lines(path: Path) -> int:
    if not path.is_file():
        return 0
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def _rss(m: Measured) -> str:
    own = fmt(m.peak_rss_bytes / 1e6, ",.0f")
    return f"{own} + {m.workers_peak_rss_bytes / 1e6:,.0f}" if m.workers_peak_rss_bytes else own


def fmt(value: float | None, spec: str = ",.2f") -> str:
    return "n/a" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.5, help="server delay per request, seconds")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="of the synthetic benchmark (1.0: 2,170 samples, ~400 MB)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--judge-concurrency", type=int, help="default: --concurrency")
    parser.add_argument("--judge", choices=("llm", "rules"), default="llm")
    parser.add_argument(
        "--candidate",
        choices=("server", "oracle"),
        default="server",
        help="server: the delay server's model; oracle: --model baseline:oracle, no candidate server",
    )
    parser.add_argument("--data", type=Path, help="synthetic data directory (default: a temporary one, reused)")
    parser.add_argument(
        "--keep", type=Path, help="write the run under this directory and keep it (default: a temporary one, removed)"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="kill an awbench run after this many seconds")
    parser.add_argument("--extra-arg", action="append", help="one more argument for `awbench run` (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the measurements to this JSON file")
    parser.add_argument("--code", type=Path, default=REPO, help="the awbench checkout to run (default: this one)")
    args = parser.parse_args()
    args.code = args.code.resolve()
    args.judge_concurrency = args.judge_concurrency or args.concurrency

    data = synth.ensure(args.data, args.seed, args.scale)
    data_bytes = sum(p.stat().st_size for p in data.glob("*_test.jsonl"))
    samples = sum(count_lines(p) for p in data.glob("*_test.jsonl"))
    output = args.keep or Path(tempfile.mkdtemp(prefix="awbench-fullrun-"))
    output.mkdir(parents=True, exist_ok=True)
    logs = output / "logs"
    logs.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env |= {
        "OPENAI_API_KEY": "bench-key",
        "PYTHONPATH": os.pathsep.join([str(args.code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    env.setdefault("COLUMNS", "120")

    load_before = os.getloadavg()[0]
    servers: dict[str, DelayServer] = {}
    try:
        if args.candidate == "server":
            servers["candidate"] = DelayServer(args.delay, role="candidate", models=["synth-model"])
        if args.judge == "llm":
            servers["judge"] = DelayServer(args.delay, role="judge", models=["synth-judge"])
        for server in servers.values():
            server.__enter__()  # exited in the finally below, started or not
        command = awbench_command(
            args, data, output, *(servers[n].url if n in servers else None for n in ("candidate", "judge"))
        )
        print(f"awbench: {args.code} (python {sys.executable})")
        print("command: awbench " + " ".join(command[3:]), flush=True)
        first = run_measured("run", command, env, logs, args.timeout, servers, cwd=args.code)
        print(f"run: exit {first.exit_code}, {first.wall_s:.1f} s", flush=True)
        rerun = run_measured("rerun", command, env, logs, args.timeout, servers, cwd=args.code)
        print(f"rerun: exit {rerun.exit_code}, {rerun.wall_s:.1f} s", flush=True)
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    predictions = count_lines(output / "bench" / "predictions.jsonl")
    judgments = sum(count_lines(path) for path in (output / "bench" / "judges").glob("*/judgments.jsonl"))
    baseline = json_loads_loop(data)

    # One stage's worth of delays; none when no stage waits for a server.
    ideal = (
        samples
        * args.delay
        / min(args.concurrency, args.judge_concurrency if args.judge == "llm" else args.concurrency)
    )
    ideal = ideal if servers else None
    stages = len(servers)
    print()
    print(
        f"host load average (1 min) before the runs {load_before:.2f}, after {os.getloadavg()[0]:.2f}: other work on the host slows every number"
    )
    print(f"machine: {os.cpu_count()} cores; data: {data} ({samples:,} samples, {data_bytes / 1e6:,.1f} MB, synthetic)")
    print(
        f"candidate {args.candidate}, delay {args.delay * 1000:.0f} ms, concurrency {args.concurrency}, judge {args.judge}"
        + (f" (concurrency {args.judge_concurrency})" if args.judge == "llm" else "")
    )
    if ideal is not None:
        print(
            f"ideal (one stage) = {samples:,} x {args.delay} s / {args.concurrency} = {ideal:.2f} s"
            + (f"; stages one after the other: {stages * ideal:.2f} s" if stages > 1 else "")
        )
    print(f"run directory: {output / 'bench'}: {predictions:,} predictions, {judgments:,} judgments")
    print()
    header = [
        "",
        "exit",
        "wall s",
        "wall / ideal",
        "calls (cand + judge)",
        "max in flight",
        "CPU s",
        "CPU ms / request",
        "peak RSS MB (+ workers)",
        "peak RSS / data",
        "at once MB (polled)",
        "at once / data",
    ]
    rows = []
    for m in (first, rerun):
        in_flight = " + ".join(str(s.get("in_flight_max", 0)) for s in m.server_stats.values())
        per_request = m.cpu_s / m.calls * 1000 if m.calls else None
        rows.append(
            [
                m.label,
                str(m.exit_code),
                fmt(m.wall_s),
                fmt(m.wall_s / ideal if ideal else None),
                f"{m.candidate_calls} + {m.judge_calls}",
                in_flight,
                fmt(m.cpu_s),
                fmt(per_request),
                _rss(m),
                fmt(m.total_peak_rss_bytes / data_bytes),
                fmt(m.together_peak_rss_bytes / 1e6, ",.0f"),
                fmt(m.together_peak_rss_bytes / data_bytes),
            ]
        )
    rows.append(["json.loads loop", "", fmt(baseline), *[""] * (len(header) - 3)])
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    print(f"run / json.loads loop: {first.wall_s / baseline:.2f}x ({first.wall_s:.2f} s against {baseline:.2f} s)")
    print(f"rerun / json.loads loop: {rerun.wall_s / baseline:.2f}x ({rerun.wall_s:.2f} s against {baseline:.2f} s)")
    if first.calls:
        # What a call costs beyond what any run of this data costs (starting, loading, validating): the rerun
        # does all of that and makes no call.
        marginal = [
            (a - b) / first.calls * 1000
            for a, b in ((first.cpu_s, rerun.cpu_s), (first.user_s, rerun.user_s), (first.sys_s, rerun.sys_s))
        ]
        print(
            f"marginal CPU per request, (run - rerun) / {first.calls:,} calls: {marginal[0]:.2f} ms "
            f"(user {marginal[1]:.2f}, sys {marginal[2]:.2f})"
        )
    for name, stats in first.server_stats.items():
        share = stats["cached_tokens"] / stats["prompt_tokens"] if stats.get("prompt_tokens") else 0.0
        print(
            f"{name} server (run): {stats['requests']} requests, {stats['bytes_received'] / 1e6:,.0f} MB received, "
            f"simulated prompt cache {share:.1%} of {stats['prompt_tokens']:,} prompt tokens, server CPU {stats['cpu_s']:.1f} s since start"
        )
    if first.stage_lines:
        print("awbench's own stage lines (run):\n  " + "\n  ".join(first.stage_lines))
    for m in (first, rerun):
        if m.exit_code != 0:
            print(
                f"\n{m.label}: awbench exited {m.exit_code}; stderr tail:\n{m.stderr_tail}\nstdout tail:\n{m.stdout_tail}"
            )
    if args.json:
        result = {
            "samples": samples, "data_bytes": data_bytes, "delay_s": args.delay, "concurrency": args.concurrency,
            "candidate": args.candidate, "judge": args.judge, "judge_concurrency": args.judge_concurrency, "ideal_one_stage_s": ideal,
            "json_loads_loop_s": baseline, "runs": [asdict(first), asdict(rerun)],
        }  # fmt: skip
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.keep is None:
        shutil.rmtree(output, ignore_errors=True)
    else:
        print(f"\nkept {output} (awbench output in {output / 'bench'}, logs in {logs})")


if __name__ == "__main__":
    main()
