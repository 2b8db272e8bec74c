"""A minimal OpenAI-compatible chat server for benchmarks: every completion is answered after a fixed delay.

It runs in its own process (asyncio, so thousands of waiting requests cost nothing) so that the client being
measured has its interpreter to itself. Each response is written in one send with TCP_NODELAY: a response split
into header and body writes would wait ~40 ms on the client's delayed ACK, on every request.

    with DelayServer(delay_s=0.2) as server:   # server.url == "http://127.0.0.1:PORT/v1"
        ...
        server.stats()                         # {"requests": n, "in_flight_max": k}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request

COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}


class Counters:
    def __init__(self) -> None:
        self.requests = self.in_flight = self.in_flight_max = 0


def http_response(status: int, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float, counters: Counters) -> None:
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    completion = json.dumps(COMPLETION).encode()
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
            await reader.readexactly(int(headers.get("content-length", 0)))
            path = request_line.split()[1]
            if path.endswith("/chat/completions"):
                counters.requests += 1
                counters.in_flight += 1
                counters.in_flight_max = max(counters.in_flight_max, counters.in_flight)
                await asyncio.sleep(delay_s)
                counters.in_flight -= 1
                writer.write(http_response(200, completion))
            elif path.endswith("/stats"):
                stats = {"requests": counters.requests, "in_flight_max": counters.in_flight_max}
                if request_line.startswith("POST"):  # read and reset
                    counters.requests = counters.in_flight_max = 0
                writer.write(http_response(200, json.dumps(stats).encode()))
            else:
                writer.write(http_response(404, b"{}"))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client closed its connection
    finally:
        writer.close()


async def serve(port: int, delay_s: float) -> None:
    counters = Counters()
    server = await asyncio.start_server(lambda r, w: handle(r, w, delay_s, counters), "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


class DelayServer:
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> DelayServer:
        command = [sys.executable, __file__, "--port", str(self.port), "--delay", str(self.delay_s)]
        self.process = subprocess.Popen(command)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.stats()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the delay server did not start within 30 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def stats(self, reset: bool = False) -> dict[str, int]:
        request = urllib.request.Request(f"{self.url}/stats", method="POST" if reset else "GET")
        with urllib.request.urlopen(request, timeout=2) as response:
            return json.loads(response.read())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.delay))
