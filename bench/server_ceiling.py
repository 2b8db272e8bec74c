"""The delay server's own ceiling: how close it comes to the ideal wall time n x delay / concurrency when the
client costs (almost) nothing.

The server (bench/delay_server.py) runs in its own process; this script is the load generator, in another:
`--concurrency` keep-alive connections over raw asyncio streams, each sending pre-encoded HTTP/1.1 requests
one after the other and reading each response (no HTTP library, no JSON on the client side). The request bodies
are full size: chat requests in the reference layout built from a synthetic benchmark (bench/synth.py at a
small scale, in a temporary directory), those whose JSON body is 100-250 KB, sent round-robin.

    python bench/server_ceiling.py [--n 2048] [--delay 0.5] [--concurrency 64] [--role candidate|judge]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import synth
from delay_server import DelayServer

MIN_BODY, MAX_BODY = 100_000, 250_000


def reference_messages(record: dict) -> list[dict[str, str]]:
    """System prompt (if any), then user(action) / assistant(observation) per earlier turn, then user(action)."""
    messages = [{"role": "system", "content": record["system_str"]}] if record["system_str"] else []
    for i in range(record["turn_idx"] - 1):
        messages += [
            {"role": "user", "content": record["prompt"][i]},
            {"role": "assistant", "content": record["response"][i]},
        ]
    messages.append({"role": "user", "content": record["prompt"][record["turn_idx"] - 1]})
    return messages


def request_bodies(scale: float, judge: bool) -> list[bytes]:
    """JSON bodies of 100-250 KB from a small synthetic benchmark, in file order."""
    bodies = []
    with tempfile.TemporaryDirectory(prefix="awbench-ceiling-") as tmp:
        synth.generate(Path(tmp), seed=0, scale=scale)
        for domain in synth.PUBLISHED:
            for line in (Path(tmp) / f"{domain}_test.jsonl").read_bytes().split(b"\n"):
                if not line.strip():
                    continue
                messages = reference_messages(json.loads(line))
                if judge:  # the shape of a judge request: one system prompt, one long user prompt
                    history = "\n\n".join(m["content"] for m in messages[1:])
                    messages = [
                        {"role": "system", "content": "You are a strict judge."},
                        {"role": "user", "content": history + "\n\nFinish with <final_evaluation>."},
                    ]
                body = json.dumps(
                    {"model": "bench", "messages": messages, "temperature": 0.6, "max_tokens": 32768},
                    ensure_ascii=False,
                ).encode()
                if MIN_BODY <= len(body) <= MAX_BODY:
                    bodies.append(body)
    return bodies


def http_request(port: int, body: bytes) -> bytes:
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer bench\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def load(port: int, requests: list[bytes], n: int, concurrency: int) -> tuple[float, list[float], int]:
    """(wall, latencies, failures) of n requests over `concurrency` keep-alive connections."""
    connections = []
    for _ in range(concurrency):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**22)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connections.append((reader, writer))
    next_index = 0
    latencies: list[float] = []
    failures = 0

    async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal next_index, failures
        while next_index < n:
            index = next_index
            next_index += 1
            sent = time.perf_counter()
            writer.write(requests[index % len(requests)])
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - sent)
            failures += not head.startswith(b"HTTP/1.1 200")

    started = time.perf_counter()
    await asyncio.gather(*(worker(r, w) for r, w in connections))
    wall = time.perf_counter() - started
    for _, writer in connections:
        writer.close()
    return wall, latencies, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2048, help="requests in all")
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--role", choices=("candidate", "judge"), default="candidate")
    parser.add_argument("--scale", type=float, default=0.1, help="of the synthetic benchmark the bodies come from")
    args = parser.parse_args()

    bodies = request_bodies(args.scale, judge=args.role == "judge")
    if not bodies:
        raise SystemExit("no request body of 100-250 KB in the synthetic data; raise --scale")
    sizes = [len(b) for b in bodies]
    with DelayServer(delay_s=args.delay, role=args.role) as server:
        requests = [http_request(server.port, b) for b in bodies]
        server_cpu = server.stats(reset=True)["cpu_s"]
        client_cpu = time.process_time()
        wall, latencies, failures = asyncio.run(load(server.port, requests, args.n, args.concurrency))
        client_cpu = time.process_time() - client_cpu
        stats = server.stats()
    ideal = args.n * args.delay / args.concurrency
    sent = sum(sizes[i % len(sizes)] for i in range(args.n))
    print(
        f"{args.n} requests ({args.role}), concurrency {args.concurrency}, delay {args.delay * 1000:.0f} ms; "
        f"{len(bodies)} distinct bodies of {min(sizes) / 1e3:.0f}-{max(sizes) / 1e3:.0f} KB (mean {statistics.fmean(sizes) / 1e3:.0f} KB), "
        f"{sent / 1e6:.0f} MB sent"
    )
    print(
        f"server: {stats['requests']} requests, max in flight {stats['in_flight_max']}, "
        f"{stats['bytes_received'] / 1e6:.0f} MB received, CPU {stats['cpu_s'] - server_cpu:.2f} s "
        f"({(stats['cpu_s'] - server_cpu) / args.n * 1000:.2f} ms/request); load generator CPU {client_cpu:.2f} s; failures {failures}"
    )
    latencies.sort()
    print(
        f"latency: mean {statistics.fmean(latencies) * 1000:.1f} ms, p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
    )
    print(f"host load average (1 min): {os.getloadavg()[0]:.2f}")
    print(f"wall {wall:.2f} s, ideal {ideal:.2f} s, efficiency {ideal / wall:.3f}")


if __name__ == "__main__":
    main()
