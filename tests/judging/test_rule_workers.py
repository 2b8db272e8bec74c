"""The rule judge in worker processes: the same records as in this process, whatever the order; a worker that
dies or raises fails the judge with a clear error; workers exit with their parent; small runs start none."""

from __future__ import annotations

import ast
import asyncio
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from awbench.cli import app
from awbench.config import DataSettings, JudgeSettings
from awbench.data.dataset import load_samples
from awbench.judging import requests_of
from awbench.judging.rules import judge as rule_judge
from awbench.judging.rules import workers as rule_workers
from awbench.judging.rules.judge import RuleJudge
from awbench.judging.rules.worker_loop import HEADER_BYTES
from awbench.judging.rules.workers import RuleWorkerFailed, RuleWorkers
from awbench.records import JudgeRequest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the worker tests signal processes the POSIX way")


def _requests() -> list[JudgeRequest]:
    """The bundled sample in trajectory order, each prediction the truth with every third line reversed (so
    scores vary), and some exact."""
    requests = []
    for i, sample in enumerate(load_samples(DataSettings(source="sample")).samples):
        lines = sample.record.ground_truth.split("\n")
        prediction = "\n".join(line[::-1] if (j + i) % 3 == 0 else line for j, line in enumerate(lines))
        requests.append(
            JudgeRequest(sample=sample, prediction=sample.record.ground_truth if i % 4 == 0 else prediction)
        )
    return requests


class _Recorded(RuleWorkers):
    """RuleWorkers that keeps the processes it started, to look at and to kill."""

    started: ClassVar[list[_Recorded]] = []

    async def __aenter__(self) -> RuleWorkers:
        await super().__aenter__()
        _Recorded.started.append(self)
        return self


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> type[_Recorded]:
    _Recorded.started = []
    monkeypatch.setattr(rule_judge, "RuleWorkers", _Recorded)
    return _Recorded


async def _judge_all(judge: RuleJudge, requests: list[JudgeRequest]) -> dict[str, dict]:
    records = [record async for record in judge.judge(requests_of(requests))]
    assert len(records) == len(requests)
    return {record.key: record.model_dump() for record in records}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize("order", ["trajectory", "shuffled"])
def test_workers_give_the_records_of_this_process(recorded, monkeypatch: pytest.MonkeyPatch, order: str) -> None:
    requests = _requests()
    if order == "shuffled":  # turns before earlier turns, trajectories interleaved: histories sent in pieces
        random.Random(7).shuffle(requests)
        monkeypatch.setattr(rule_workers, "KEPT_TRAJECTORIES", 2)  # and forgotten, then sent whole again
    here = asyncio.run(_judge_all(RuleJudge(workers=0), requests))
    there = asyncio.run(_judge_all(RuleJudge(workers=2, pool_after=0), requests))
    assert there == here
    assert len(recorded.started) == 1 and len(recorded.started[0].pids) == 2
    assert len({r["score"] for r in here.values()}) > 10  # the comparison is not between constant scores
    assert not any(_alive(pid) for pid in recorded.started[0].pids)  # stopped when the judge finished


def test_awbench_run_with_workers_writes_the_scores_of_one_process(recorded, monkeypatch, tmp_path: Path) -> None:
    """`awbench run --judge rules` with the workers starting at once, against `--rule-workers 0`: the same
    judgments and scores, and a rerun reuses every judgment."""
    monkeypatch.setattr(rule_judge, "POOL_AFTER_SECONDS", 0.0)

    def run(workers: int, output: Path) -> tuple[dict, str]:
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--model",
                "baseline:last-observation",
                "--judge",
                "rules",
                "--data",
                "sample",
                "--output",
                str(output),
                "--rule-workers",
                str(workers),
            ],
            env={"COLUMNS": "200"},
        )
        assert result.exit_code == 1, result.output  # this baseline fails its first turns, as in the README
        run_dir = output / "baseline-last-observation__rules"
        judgments = (next(run_dir.glob("judges/*/judgments.jsonl"))).read_text().splitlines()
        records = {line.split('"key":"', 1)[1].split('"', 1)[0]: line for line in judgments}
        return records, (run_dir / "scores.json").read_text()

    here, here_scores = run(0, tmp_path / "here")
    assert recorded.started == []
    there, there_scores = run(2, tmp_path / "there")
    assert len(recorded.started) == 1
    assert there == here and len(here) == 65 - 13  # the 13 empty first-turn predictions are not judged
    assert there_scores == here_scores
    rerun = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "baseline:last-observation",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--output",
            str(tmp_path / "there"),
            "--rule-workers",
            "2",
        ],
        env={"COLUMNS": "200"},
    )
    assert rerun.exit_code == 1 and len(recorded.started) == 1  # nothing left to judge: no worker started


def test_the_rule_workers_setting_reaches_the_judge() -> None:
    assert rule_judge.create(JudgeSettings(kind="rules", rule_workers=0)).workers == 0
    assert rule_judge.create(JudgeSettings(kind="rules", rule_workers=3)).workers == 3
    assert rule_judge.create(JudgeSettings(kind="rules")).workers == rule_workers.available_workers()


def test_a_run_judged_in_under_pool_after_seconds_starts_no_worker(recorded) -> None:
    requests = _requests()
    records = asyncio.run(_judge_all(RuleJudge(workers=2, pool_after=60.0), requests))
    assert len(records) == len(requests) and recorded.started == []


def test_a_worker_that_dies_fails_the_judge_naming_it(recorded) -> None:
    async def judge_and_kill() -> list[str]:
        keys = []
        with pytest.raises(
            RuleWorkerFailed, match=r"a rule judge worker \(pid (\d+)\) stopped with exit code -9"
        ) as failed:
            async for record in RuleJudge(workers=1, pool_after=0).judge(requests_of(_requests())):
                keys.append(record.key)
                if len(keys) == 1:
                    os.kill(recorded.started[0].pids[0], signal.SIGKILL)
        assert failed.value.args[0].startswith(f"a rule judge worker (pid {recorded.started[0].pids[0]})")
        return keys

    keys = asyncio.run(judge_and_kill())
    assert 1 <= len(keys) < len(_requests())


def test_workers_that_cannot_start_fail_the_judge_with_a_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))

    async def start() -> None:
        async with RuleWorkers(2):
            pass

    with pytest.raises(RuleWorkerFailed, match=r"cannot start a rule judge worker \(.*no-python\): .*--rule-workers 0"):
        asyncio.run(start())


def test_awbench_run_says_when_its_workers_cannot_start(recorded, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(rule_judge, "POOL_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "baseline:oracle",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--output",
            str(tmp_path / "results"),
            "--rule-workers",
            "2",
        ],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 1
    assert (
        "error: cannot start a rule judge worker (" in result.output
        and "--rule-workers 0 scores in this process" in result.output
    )
    assert "error: The run is resumable: run the same command again." in result.output
    assert "Traceback" not in result.output


@pytest.mark.skipif(not hasattr(rule_workers.fcntl, "F_SETPIPE_SZ"), reason="pipe sizes are set on Linux only")
def test_a_worker_gets_a_pipe_that_holds_a_large_task() -> None:
    async def pipe_size() -> int:
        async with RuleWorkers(1) as workers:
            stdin = workers._workers[0].process.stdin
            assert stdin is not None
            return rule_workers.fcntl.fcntl(stdin.get_extra_info("pipe").fileno(), rule_workers.fcntl.F_GETPIPE_SZ)

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    assert asyncio.run(pipe_size()) == min(rule_workers.PIPE_BYTES, limit)


def test_a_worker_imports_neither_pydantic_nor_asyncio() -> None:
    """Each worker holds its own copy of all it imports: the rules and the standard library only (pydantic
    and its models were 14 MB of each worker's memory)."""
    code = "import sys, awbench.judging.rules.worker_loop; print(sorted({m.split('.')[0] for m in sys.modules}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    imported = set(ast.literal_eval(done.stdout))
    assert "awbench" in imported
    assert imported.isdisjoint({"pydantic", "pydantic_core", "asyncio", "aiohttp"})


def test_a_worker_that_raises_fails_the_judge_with_its_traceback() -> None:
    async def score_bad_task() -> None:
        async def tasks():
            yield "bad", ("terminal", "t/1", "truth", "prediction", ["### Turn 1\n**Action:**\nls", 12345])

        async with RuleWorkers(1) as workers:
            async for _ in workers.score(tasks()):
                pass

    with pytest.raises(RuleWorkerFailed, match=r"(?s)a rule judge worker failed:\nTraceback.*Error"):
        asyncio.run(score_bad_task())


@pytest.mark.slow
@pytest.mark.parametrize("busy", [False, True])
def test_workers_exit_quietly_when_their_parent_is_killed(tmp_path: Path, busy: bool) -> None:
    """Idle, or in the middle of a task whose answer nobody will read: each worker exits, without a traceback."""
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent("""
        import asyncio, sys
        from awbench.judging.rules.workers import RuleWorkers

        BUSY = sys.argv[1] == "busy"
        HISTORY = ["### Turn 1\\n**Action:**\\nls", "\\n".join(f"file_{i}.txt {i * 7919}" for i in range(60000))]

        async def tasks():
            for i in range(8 if BUSY else 0):
                yield i, ("terminal", f"t/{i % 2}", "file_1.txt 7919", "x", [*HISTORY, f"### Turn 2\\n**Action:**\\ncat {i}"])

        async def main():
            async with RuleWorkers(2) as workers:
                scoring = asyncio.ensure_future(anext(workers.score(tasks()), None))
                await asyncio.sleep(0.5 if BUSY else 0)  # the tasks sent, the workers at them
                print(*workers.pids, flush=True)
                await asyncio.sleep(60)

        asyncio.run(main())
    """)
    )
    parent = subprocess.Popen(
        [sys.executable, str(script), "busy" if busy else "idle"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None and parent.stderr is not None
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids)
        assert parent.stderr.read() == ""  # the workers wrote to the parent's stderr, if anything
    finally:
        parent.kill()
        parent.stdout.close()
        parent.stderr.close()


def test_a_worker_collects_cycles_itself_every_collect_every_tasks(tmp_path: Path) -> None:
    """The automatic collector is off in a worker; every COLLECT_EVERY tasks it collects and freezes what is
    left, so a cycle made while scoring is freed at the next collection, not never."""
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent("""
        import gc, sys, weakref
        from awbench.judging.rules import RuleScorer, worker_loop

        class Node:
            pass

        made = []
        score = RuleScorer.score

        def score_and_make_a_cycle(self, **task):
            node = Node()
            node.me = node
            made.append(weakref.ref(node))
            return score(self, **task)

        RuleScorer.score = score_and_make_a_cycle
        worker_loop.COLLECT_EVERY = 3
        worker_loop.serve()
        print(gc.isenabled(), [ref() is None for ref in made], gc.get_freeze_count() > 0, file=sys.stderr)
    """)
    )
    frames = b""
    for i in range(5):
        task: tuple[object, ...] = (
            "terminal",
            "t/1",
            f"out {i}",
            f"out {i}",
            0,
            ["### Turn 1\n**Action:**\nls", f"### Turn 2\n**Action:**\necho {i}"],
            [],
        )
        frame = pickle.dumps(task)
        frames += len(frame).to_bytes(HEADER_BYTES, "little") + frame
    done = subprocess.run([sys.executable, str(script)], input=frames, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    # The first three cycles were freed at the third task; the last two wait for the sixth.
    assert done.stderr.decode().strip() == "False [True, True, True, False, False] True"
    assert done.stdout.count(b"ok") == 5  # five answers
