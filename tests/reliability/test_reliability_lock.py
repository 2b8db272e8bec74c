"""One process per run: a second `awbench run` of a run in progress exits 2 naming the holder and sends
nothing; a lock left by a killed process is taken over with a note; and the two races around the lock (its
file removed by the holder while another process opens it; a run made by another process while this one
waited for the lock) leave one writer and the other's records intact."""

from __future__ import annotations

import asyncio
import fcntl
import re
import signal
import socket
import threading
import time
from datetime import datetime, timezone

import pytest
from fake_openai import FakeOpenAIServer, Reply
from refusals import refusal
from reliability_helpers import (
    CANDIDATE_MODEL,
    JUDGE_MODEL,
    awbench,
    awbench_process,
    cli,
    deterministic,
    no_traceback,
)

from awbench.data.dataset import read_source
from awbench.run import pipeline
from awbench.run.store import RunLock, RunLocked

N = 3  # samples: --domains os --limit 3
assert sum(s.domain == "os" for s in read_source("sample")[0]) >= N
HOLDER = re.compile(r"is in use by process (\d+) on (\S+) \(started ([^)]+)\)")


def args_for(candidate: FakeOpenAIServer, judge: FakeOpenAIServer, output) -> list[str]:
    return [
        "run",
        "--model",
        CANDIDATE_MODEL,
        "--base-url",
        candidate.url,
        "--judge-model",
        JUDGE_MODEL,
        "--judge-base-url",
        judge.url,
        "--data",
        "sample",
        "--domains",
        "os",
        "--limit",
        str(N),
        "--concurrency",
        "1",
        "--judge-concurrency",
        "1",
        "--run-name",
        "locked",
        "--output",
        str(output),
    ]


def gated(gate: threading.Event):
    def respond(body: dict) -> Reply:
        reply = deterministic(body)
        reply.gate = gate  # the first process stays mid-run (its lock held) until the test lets it go on
        return reply

    return respond


def wait_for(condition, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_second_identical_run_exits_2_naming_the_holder_and_sends_nothing(tmp_path):
    gate = threading.Event()
    with FakeOpenAIServer(responder=gated(gate)) as candidate, FakeOpenAIServer(responder=gated(gate)) as judge:
        args = args_for(candidate, judge, tmp_path / "results")
        first = awbench_process(*args, log=tmp_path / "first.log")
        try:
            wait_for(lambda: len(candidate.requests) >= 1 or first.poll() is not None)  # it holds the lock, mid-run
            before = (candidate.model_checks, judge.model_checks, len(candidate.requests), len(judge.requests))
            second = awbench(*args, timeout_s=60)
            during = cli("score", "locked", "--output", tmp_path / "results")  # any command that writes the run
            after = (candidate.model_checks, judge.model_checks, len(candidate.requests), len(judge.requests))
            gate.set()
            first.wait(timeout=60)
        finally:
            gate.set()
            first.kill()
        assert first.returncode == 0, (tmp_path / "first.log").read_text()
    assert second.returncode == 2, second.stderr
    no_traceback(second)
    holder = HOLDER.search(second.stderr.replace("\n", ""))
    assert holder, second.stderr
    pid, host, started = holder.groups()
    assert (int(pid), host) == (first.pid, socket.gethostname())
    assert 0 <= (datetime.now(timezone.utc) - datetime.fromisoformat(started)).total_seconds() < 300
    assert refusal(during) == (2, "run_locked") and f"process {first.pid}" in during.stderr
    assert before == after == (1, 1, 1, 0)  # the second process made no check and no call
    # The first finished normally, and the endpoints saw each sample once per role, not twice.
    assert (len(candidate.requests), len(judge.requests)) == (N, N)


def test_a_lock_left_by_a_killed_process_is_taken_over_with_a_note(tmp_path):
    gate = threading.Event()
    with FakeOpenAIServer(responder=gated(gate)) as candidate, FakeOpenAIServer(responder=gated(gate)) as judge:
        args = args_for(candidate, judge, tmp_path / "results")
        first = awbench_process(*args, log=tmp_path / "first.log")
        try:
            wait_for(lambda: len(candidate.requests) >= 1 or first.poll() is not None)
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        finally:
            first.kill()
        assert first.returncode == -signal.SIGKILL
        lock = tmp_path / "results" / "locked" / ".lock"
        assert str(first.pid) in lock.read_text()  # left behind, naming the dead holder
        gate.set()
        calls_before = len(candidate.requests), len(judge.requests)
        second = awbench(*args, timeout_s=60)
    assert second.returncode == 0, second.stderr
    note = second.stderr.replace("\n", "")
    assert (
        f"took over the lock of {tmp_path / 'results' / 'locked'} left by process {first.pid} on {socket.gethostname()}"
        in note
    )
    assert "which is no longer running" in note
    assert (len(candidate.requests) - calls_before[0], len(judge.requests) - calls_before[1]) == (N, N)
    assert not lock.exists()


def test_a_lock_file_removed_by_its_holder_while_another_process_locks_it_leaves_one_holder(tmp_path, monkeypatch):
    """The holder removes .lock and then unlocks; a process that opened the file before the removal and locks it
    after the unlock holds a lock on a file no one else can find: a third process would make a new .lock and
    hold it too. The second process must notice and lock the file that is there."""
    holder = RunLock(tmp_path)
    holder.acquire()
    real_flock = fcntl.flock

    def flock(handle, operation):
        if operation & fcntl.LOCK_EX and holder._fd is not None:
            holder.release()  # between this process's open() and its flock()
        return real_flock(handle, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    second = RunLock(tmp_path)
    second.acquire()
    monkeypatch.undo()
    third = RunLock(tmp_path)
    with pytest.raises(RunLocked, match="is in use by process"):
        third.acquire()
    second.release()
    third.acquire()  # free again
    third.release()
    assert not (tmp_path / ".lock").exists()


def test_a_run_made_by_another_process_while_this_one_waited_for_the_lock_is_resumed_not_wiped(
    make_config, monkeypatch
):
    """Whether the run is new must be decided under the lock: decided before it, a run that another process
    made (and paid for) in the meantime would be cleared as if it were this process's own fresh directory."""
    config = make_config("baseline:oracle", data={"domains": ["os"]})
    real_acquire = RunLock.acquire
    other: list = []

    def acquire(self: RunLock) -> None:
        if not other:  # the first lock taken: this run's, after it looked at the directory
            other.append(None)
            worker = threading.Thread(target=lambda: other.append(asyncio.run(pipeline.run(config))))
            worker.start()
            worker.join()
        real_acquire(self)

    monkeypatch.setattr(RunLock, "acquire", acquire)
    outcome = asyncio.run(pipeline.run(config))
    made = other[1]
    assert [s.computed for s in made.stages] == [8, 8]
    assert [(s.computed, s.reused) for s in outcome.stages] == [(0, 8), (0, 8)]
