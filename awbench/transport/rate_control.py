"""Pacing requests to a provider's rate limits: tokens and requests per minute, as OpenAI counts them.

A provider counts a request's prompt tokens plus its `max_tokens` against the token limit when it admits the
request, and answers with `x-ratelimit-limit-*`, `x-ratelimit-remaining-*` and `x-ratelimit-reset-*` (the time
until the allowance is full again: `6m0s`, `1s`, `120ms`). Over the limit it refuses with 429
`rate_limit_exceeded`, with or without `Retry-After`.

`RateControl` (one per endpoint URL) keeps a local copy of each allowance as a bucket that refills at the
limit's rate: a request waits until its estimated cost is in the bucket, so sends follow the limit instead of
running into it. Each answer's headers reset the bucket to what the server counted (less what was sent since),
so an estimate that is off, or another client on the same key, is corrected within one answer. Limits come from
the headers, or from `--tpm/--rpm` up front. A refusal empties the bucket and holds every send until the server
says (`Retry-After`, the reset headers); the window of requests in flight is halved on a refusal and grows by
one per window of answers (AIMD). An endpoint that sends no headers and whose limits are not given is paced at
the rate it admitted between two refusals (`LearntRate`). Whether a refused request is sent again is the retry
policy's (`awbench.transport.retry_policy`).
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4
BURST_GUESS = 600  # per minute / this = the burst assumed until the server tells it (a tenth of a second)
PROBE_S = 2.0  # the first request goes alone, until its answer (which tells the limits) or for this long
MAX_HOLD_S = 120.0  # the longest one refusal holds the endpoint (a Retry-After beyond is cut to this)
# An endpoint that tells nothing but refusals (no headers, no limits given): see `LearntRate`.
RAMP_START = 1.0  # of what the concurrency allows at the probe's latency: where the send rate starts from
RAMP_DOUBLING_S = 0.05  # it doubles this often until the first refusal (a refusal comes back at once)
RAMP_END = 8.0  # times what the concurrency allows at the probe's latency: past it, a ramp never refused ends
RAMP_AGAIN_SHARE = 0.125  # after the first refusal it ramps again from this share of the rate admitted so far
RAMP_AGAIN_DOUBLING_S = 0.2  # more slowly: the next refusal then pins the rate over a longer span
LEARN_SPAN_S = 0.5  # a rate is learnt from two refusals at least this far apart
LEARNT_SHARE = 0.95  # of the learnt rate paced at, right after a refusal
LEARNT_GROWTH_PER_S = 0.1  # the paced rate grows by this share of the learnt rate a second (additive increase)
LEARNT_BURST_S = 0.5  # sends may catch up this much of a learnt rate: one unit's pace, not the other's, binds
LEARN_WINDOW_S = 30.0  # refusals older than this no longer anchor the rate (a limit may change)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def tokens_for_chars(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)  # rounded up


def estimate_tokens(text: str) -> int:
    return tokens_for_chars(len(text))


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(_text(message.get("content"))) for message in messages)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only the text ones count here
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def request_tokens(body: Mapping[str, Any]) -> int:
    """What a chat request counts against a token limit: its prompt (estimated) and its completion allowance."""
    allowance = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    return estimate_prompt_tokens(body.get("messages") or []) + int(allowance)


def parse_duration(text: str | None) -> float | None:
    """Seconds from OpenAI's reset format (`6m0s`, `1s`, `120ms`, `1h2m3.5s`) or a plain number of seconds."""
    if not text:
        return None
    text = text.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(number) * scale[unit] for number, unit in parts)


@dataclass(frozen=True)
class Allowance:
    """One limit as an answer reported it: per minute, what is left, and seconds until it is full again."""

    limit: int
    remaining: int | None
    reset_s: float | None


@dataclass(frozen=True)
class RateHeaders:
    tokens: Allowance | None
    requests: Allowance | None


def read_rate_headers(headers: Mapping[str, str]) -> RateHeaders | None:
    """The `x-ratelimit-*` headers of an answer, or None when it has none."""
    found = {kind: _allowance(headers, kind) for kind in ("tokens", "requests")}
    if not any(found.values()):
        return None
    return RateHeaders(tokens=found["tokens"], requests=found["requests"])


def _allowance(headers: Mapping[str, str], kind: str) -> Allowance | None:
    limit = _count(headers.get(f"x-ratelimit-limit-{kind}"))
    if not limit:
        return None
    return Allowance(
        limit,
        _count(headers.get(f"x-ratelimit-remaining-{kind}")),
        parse_duration(headers.get(f"x-ratelimit-reset-{kind}")),
    )


def _count(value: str | None) -> int | None:
    try:
        return max(int(float(value)), 0) if value is not None else None
    except ValueError:
        return None


class Bucket:
    """A local copy of one allowance: `level` units, refilled at `per_minute / 60` a second up to `capacity`.
    Without a known limit it never holds anything back."""

    def __init__(self, per_minute: int | None, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.per_minute = per_minute
        # Until the server tells its burst allowance, assume a tenth of a second's worth: a cautious start costs
        # that tenth, a guess above the server's allowance a burst of refusals.
        self.capacity = per_minute / BURST_GUESS if per_minute else 0.0
        self.level = self.capacity
        self.updated = clock()
        self.sent = 0.0  # every unit taken so far: what was sent after a given answer's request

    @property
    def rate(self) -> float:
        return (self.per_minute or 0) / 60

    def refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, cost: float) -> float:
        """Seconds until `cost` fits (a cost above the capacity waits for a full bucket, and overdraws it)."""
        if not self.per_minute:
            return 0.0
        self.refill()
        return max(0.0, (min(cost, self.capacity) - self.level) / self.rate)

    def take(self, cost: float) -> float:
        self.level -= cost if self.per_minute else 0.0
        self.sent += cost
        return self.sent

    def learn(self, per_minute: int) -> None:
        """A limit the server reported or the user gave: the smaller of what is known holds."""
        if self.per_minute is None or per_minute < self.per_minute:
            self.refill()
            self.per_minute = per_minute
            self.capacity = max(self.capacity, per_minute / BURST_GUESS)

    def pace(self, per_second: float | None, burst_s: float = 60 / BURST_GUESS) -> None:
        """A rate learnt from refusals (or None: no pacing), with `burst_s` of it at once, replacing the last."""
        self.refill()
        self.per_minute = max(1, round(per_second * 60)) if per_second else None
        self.capacity = per_second * burst_s if per_second else 0.0
        self.level = min(self.level, self.capacity)

    def sync(self, reported: Allowance, sent_then: float) -> None:
        """The server's count at the request's admission, less what this client sent after that request."""
        self.learn(reported.limit)
        self.refill()
        if reported.remaining is None:
            return
        # full again in reset_s at the limit's rate: remaining + that is the burst the server allows
        burst = reported.remaining + (reported.reset_s or 0.0) * self.rate
        self.capacity = max(self.capacity, min(float(reported.limit), burst))
        self.level = min(self.capacity, reported.remaining - (self.sent - sent_then))

    def empty(self) -> None:
        self.refill()
        self.level = min(self.level, 0.0)


class LearntRate:
    """The rate an endpoint admits, learnt from its refusals alone. A server refuses when its bucket is empty, so
    between two refusals it admitted what it refilled: the tokens and requests sent and not refused between
    them, over the time between them, are its rates (to one request's cost over the span). Until a refusal the
    send rate ramps up from the probe's (doubling every RAMP_DOUBLING_S); after the first it ramps again, more
    slowly, from a share of what was admitted, so that the second comes a while later and pins the rate. Then
    sends are paced at LEARNT_SHARE of the rate learnt from the oldest refusal within LEARN_WINDOW_S, growing by
    LEARNT_GROWTH_PER_S a second until the next refusal learns it again. Pure: times come from `clock`."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.first_send: float | None = None
        self.ramp: tuple[float, float, float] | None = None  # (since, requests a second then, doubling seconds)
        self.refused = [0.0, 0.0]  # tokens and requests refused so far
        self.anchors: list[tuple[float, float, float]] = []  # (time, tokens, requests admitted by then) at refusals
        self.learnt: tuple[float, float, float] | None = None  # (since, tokens a second, requests a second)
        self.ramp_done = False  # the ramp reached the endpoint's concurrency: nothing to pace until a refusal
        self.ceiling = float("inf")  # requests a second the concurrency allows at the probe's latency
        self.reacted_at = 0.0  # requests sent when the ramp last changed
        self.sent_requests = 0.0  # requests sent so far (kept by the caller)

    def start(self, ceiling: float) -> None:
        """The probe's answer came: ramp from RAMP_START of `ceiling` requests a second (what the concurrency
        allows at the probe's latency) to RAMP_END times it, past which nothing is paced."""
        self.ramp = (self.clock(), ceiling * RAMP_START, RAMP_DOUBLING_S)
        self.ceiling = ceiling

    def rates(self) -> tuple[float | None, float | None]:
        """(tokens, requests) a second to pace at now; None: not paced."""
        now = self.clock()
        if self.learnt is not None:
            since, tokens, requests = self.learnt
            scale = LEARNT_SHARE + LEARNT_GROWTH_PER_S * (now - since)
            return tokens * scale, requests * scale
        if self.ramp is None or self.ramp_done:
            return None, None
        since, rate, doubling = self.ramp
        rate *= 2 ** ((now - since) / doubling)
        if not self.anchors and rate >= RAMP_END * self.ceiling:
            # Never refused, and sends are spread out by now: an endpoint without a rate limit is not held back.
            self.ramp_done = True
            return None, None
        return None, rate

    def recheck_s(self) -> float | None:
        """While the rate ramps it doubles this often: a send held by it waits no longer before looking again
        (a ramp starting from a slow probe's rate, 3 requests a minute after a 20 s answer, would otherwise hold
        the next send 20 s though it doubles every RAMP_DOUBLING_S)."""
        if self.learnt is not None or self.ramp is None or self.ramp_done:
            return None
        return self.ramp[2]

    def refusal(self, sent_tokens: float, sent_requests: float, cost: float) -> None:
        """A refusal of the request after which `sent_*` had been sent, costing `cost` tokens."""
        now = self.clock()
        admitted = (sent_tokens - cost - self.refused[0], sent_requests - 1 - self.refused[1])
        self.refused[0] += cost
        self.refused[1] += 1
        if self.learnt is None and sent_requests <= self.reacted_at:
            return  # sent before the ramp last changed: that change already answered it
        self.reacted_at = self.sent_requests
        self.anchors = [a for a in self.anchors if now - a[0] <= LEARN_WINDOW_S]
        oldest = self.anchors[0] if self.anchors else None
        if oldest is not None and now - oldest[0] >= LEARN_SPAN_S:
            span = now - oldest[0]
            self.learnt = (now, (admitted[0] - oldest[1]) / span, (admitted[1] - oldest[2]) / span)
        elif self.learnt is None:
            if oldest is None:  # the first: from a share of the rate admitted so far (its burst included)
                start = self.first_send if self.first_send is not None else now
                rate = admitted[1] / max(now - start, 1e-3) * RAMP_AGAIN_SHARE
            else:  # too soon after it to learn from: from half the rate ramped to
                rate = (self.rates()[1] or 0.0) / 2
            self.ramp, self.ramp_done = (now, max(rate, 1.0), RAMP_AGAIN_DOUBLING_S), False
        self.anchors.append((now, *admitted))


class RateControl:
    """One endpoint's pacing: the buckets, the refusal hold and the AIMD window of requests in flight."""

    def __init__(
        self,
        tpm: int | None = None,
        rpm: int | None = None,
        concurrency: int = 1,
        clock: Callable[[], float] = time.monotonic,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.clock = clock
        self.tokens = Bucket(tpm, clock)
        self.requests = Bucket(rpm, clock)
        self.concurrency = concurrency
        self.window = float(concurrency)
        self.hold_until = 0.0
        self.refusals_in_a_row = 0
        self.refused = 0
        # No limits known and no headers heard yet: paced at a rate learnt from the refusals (LearntRate).
        self.blind = not (tpm or rpm)
        self.learning = LearntRate(clock)
        self.answers = 0  # answers other than rate-limit refusals
        self.heard = False  # any answer or refusal yet
        self.probe_sent: float | None = None
        self.held_s = 0.0  # seconds sends waited on a limit: past a second, the user is told
        self.note = note
        self._noted_hold = False  # said once per run: the limit does not change
        self._last_decrease = -1.0  # the request counter when the window was last halved
        self._pacing = asyncio.Lock()  # one request at a time waits for its turn: first come, first served

    def allowed_in_flight(self) -> int:
        if not self.heard and (self.probe_sent is None or self.clock() < self.probe_sent + PROBE_S):
            return 1  # a burst of `concurrency` requests before the limits are known would mostly be refused
        return max(1, min(self.concurrency, int(self.window)))

    async def admit(self, body: Mapping[str, Any]) -> tuple[float, float]:
        """Wait until the request fits the limits; returns the buckets' send counters, for `answered`."""
        cost = request_tokens(body) if self.blind or self.tokens.per_minute or self.requests.per_minute else 0
        if self.probe_sent is None:
            self.probe_sent = self.learning.first_send = self.clock()
        async with self._pacing:
            while True:
                if self.blind:
                    tokens, requests = self.learning.rates()
                    if self.learning.learnt:
                        self.tokens.pace(tokens, LEARNT_BURST_S)
                        self.requests.pace(requests, LEARNT_BURST_S)
                    else:  # the ramp: one request at a time, so that a refusal stops it at once
                        self.tokens.pace(None)
                        self.requests.pace(requests, 1 / requests if requests else 0.0)
                wait = max(self.hold_until - self.clock(), self.tokens.wait_for(cost), self.requests.wait_for(1))
                if wait <= 0:
                    break
                if self.blind and (recheck := self.learning.recheck_s()) is not None:
                    wait = min(wait, recheck)
                self._held(wait)
                await asyncio.sleep(wait)
            sent = self.tokens.take(cost), self.requests.take(1)
            self.learning.sent_requests = sent[1]
            return sent

    def answered(self, headers: RateHeaders | None, sent: tuple[float, float]) -> None:
        """An answer (any but a rate-limit refusal): the buckets follow the server's count; the window grows."""
        self.refusals_in_a_row = 0
        self.answers += 1
        if self.blind and headers is not None:
            self._told()
        elif self.blind and not self.heard and self.probe_sent is not None:
            self.learning.start(self.concurrency / max(self.clock() - self.probe_sent, 1e-3))
        self.heard = True
        if headers is not None:
            if headers.tokens is not None:
                self.tokens.sync(headers.tokens, sent[0])
            if headers.requests is not None:
                self.requests.sync(headers.requests, sent[1])
        self.window = min(float(self.concurrency), self.window + 1 / max(self.window, 1.0))

    def know(self, tpm: int | None, rpm: int | None) -> None:
        """Limits given up front by another stage on the same endpoint: the smaller holds."""
        if self.blind and (tpm or rpm):
            self._told()
        for bucket, per_minute in ((self.tokens, tpm), (self.requests, rpm)):
            if per_minute:
                bucket.learn(per_minute)

    def refused_now(
        self, headers: RateHeaders | None, retry_after_s: float | None, sent: tuple[float, float], cost: float = 0.0
    ) -> None:
        """A 429 over a rate limit of a request of `cost` tokens: nothing more is sent until the server says, or
        for a growing backoff. The requests already in flight when the first refusal came count as one refusal
        (as one loss in TCP). Without headers or limits known, the refusal teaches the rate (`LearntRate`)."""
        self.refused += 1
        self.heard = True
        if self.blind and headers is None and retry_after_s is None:
            self.learning.refusal(sent[0], sent[1], cost)
            for bucket in (self.tokens, self.requests):
                bucket.empty()
            return
        if self.blind and headers is not None:
            self._told()
        if sent[1] > self._last_decrease:
            self._last_decrease = self.requests.sent
            self.refusals_in_a_row += 1
            self.window = max(1.0, self.window / 2)
        known = [a for a in (headers.tokens, headers.requests) if a is not None] if headers else []
        for bucket, allowance in zip(
            (self.tokens, self.requests), (headers.tokens, headers.requests) if headers else (None, None)
        ):
            if allowance is not None:
                bucket.learn(allowance.limit)
            bucket.empty()
        if retry_after_s is not None:
            hold = retry_after_s
        elif any(a.remaining == 0 and a.reset_s for a in known):
            hold = min(a.reset_s or 0.0 for a in known if a.remaining == 0 and a.reset_s)
        elif self.tokens.per_minute or self.requests.per_minute:
            hold = 0.0  # the emptied buckets pace the next sends
        else:  # nothing known: full jitter over a ceiling that doubles with each refusal in a row
            hold = random.uniform(0, min(MAX_HOLD_S, 0.05 * 2**self.refusals_in_a_row))
        self.hold_until = max(self.hold_until, self.clock() + min(hold, MAX_HOLD_S))

    def _told(self) -> None:
        """The server's headers or the user's options tell the limits: nothing learnt from refusals holds."""
        self.blind = False
        self.tokens.pace(None)
        self.requests.pace(None)

    def _held(self, wait: float) -> None:
        self.held_s += wait
        limited = self.refused or not self.blind  # a limit refused a request, or is known: not the start's ramp
        if self.note is not None and not self._noted_hold and self.held_s >= 1.0 and limited:
            self._noted_hold = True
            self.note(f"held back by its rate limit, paced at {self.describe()}")

    def describe(self) -> str:
        limits = [
            f"{b.per_minute:,} {name}/min"
            for b, name in ((self.tokens, "tokens"), (self.requests, "requests"))
            if b.per_minute
        ]
        if self.blind:
            return ", ".join(limits) + " (learnt from refusals)" if limits else "limits not reported; learning them"
        return ", ".join(limits) or "limits not reported; waiting on refusals"
