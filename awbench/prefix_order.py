"""The order in which requests that share a prompt prefix are sent, so that a provider's prompt cache serves them.

OpenAI caches a prompt's prefix once a request with it has been processed, and bills a cached prefix at a tenth
of the input price; requests sent together all miss. A request has a `Place`: its trajectory, its turn and a
variant (a generation, a question's order). A later turn's prompt extends an earlier turn's (the history grows
turn by turn); the variants of one turn share everything but their ends. So:

* the first request of a turn to go (its lead) waits for the lead of the trajectory's nearest earlier turn;
* the turn's other requests wait for its lead;
* waiting ends when the awaited request is done (answered, or failed: nothing better will come), or has been in
  flight PREFIX_WAIT_S; for a candidate world model, only when it is done (`wait_s=None`): a later turn's
  prompt holds the earlier turn's real observation in its history, which the model must not see before it has
  answered that turn.

A request waits only for requests the order was given: one whose predecessor never comes (a failed generation,
a filtered or already judged sample) waits for nothing. Among the requests free to go, those of the trajectory
with the most requests go first (the longest chains begin early, and none is left to run alone at the end), then
of the trajectory given first, a turn before the next, a variant before the next (`prefix_key`): few
trajectories are open at once, each finished soon (the provider keeps a prefix for minutes), while the others
keep the endpoint's concurrency full. `prefix_sorted` is that order for what is sent all at once (the
in-process engines' batches).

Pure logic: the caller passes the time (`awbench.workers.PrefixQueue` hands the items to asyncio workers).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

Item = TypeVar("Item")

# How long a request may be in flight before the requests waiting for it go anyway. A prefix is cached once its
# request has been processed: against bench/prompt_cache.py's endpoint, which processes a request in the time it
# takes to answer it, a request sent before its predecessor's answer found nothing of it cached (the lag sweep in
# docs/performance.md), so waiting for the answer is what pays. The bound is for answers far slower than a
# prompt's processing: a reasoning judge thinks for tens of seconds after reading its prompt (prefill of the
# longest judge prompt, 60K tokens, takes seconds), and a request held by retries or a rate limit should not hold
# its trajectory back for minutes.
PREFIX_WAIT_S = 30.0
# A candidate world model's later turn waits for its earlier turn's answer however long that takes: its prompt
# holds the earlier turn's real observation, which a model holding the earlier turn back could copy.
CANDIDATE_WAIT: float | None = None


class Place(NamedTuple):
    """Where a request's prompt sits among those sharing its prefix."""

    trajectory: str
    turn: int
    variant: int = 0


@dataclass(eq=False)
class Entry(Generic[Item]):
    """An item in the order, with its place and what happened to it."""

    item: Item
    place: Place
    arrival: int
    sent_at: float | None = None
    done: bool = False
    queued: tuple[int, ...] | None = None  # its key in the heap of those free to go (older ones there are stale)


@dataclass
class _Trajectory:
    order: int  # when its first request was given
    turns: dict[int, _Turn] = field(default_factory=dict)
    size: int = 0  # requests given
    open: int = 0  # entries not done


@dataclass
class _Turn:
    lead: Entry | None = None  # the first of the turn's requests to be sent
    waiting: list[Entry] = field(default_factory=list)  # not sent yet


class PrefixOrder(Generic[Item]):
    """The requests of one sender: `add` them as they come, `take` the next one free to go, `done` once it is
    answered (or failed). `next_deadline` is when a request in flight stops holding others back."""

    def __init__(self, wait_s: float | None = PREFIX_WAIT_S) -> None:
        self.wait_s = wait_s  # None: a request waits for the answer however long it takes
        self._trajectories: dict[str, _Trajectory] = {}
        self._free: list[tuple[tuple[int, ...], Entry[Item]]] = []  # heap by `prefix_key`, then arrival
        self._leads: list[tuple[float, int, Entry[Item]]] = []  # leads in flight, by deadline
        self._arrivals = itertools.count()
        self.unsent = 0

    def add(self, item: Item, place: Place, now: float) -> Entry[Item]:
        arrival = next(self._arrivals)
        trajectory = self._trajectories.get(place.trajectory)
        if trajectory is None:
            trajectory = self._trajectories[place.trajectory] = _Trajectory(arrival)
        entry = Entry(item, place, arrival)
        trajectory.turns.setdefault(place.turn, _Turn()).waiting.append(entry)
        trajectory.size += 1
        trajectory.open += 1
        self.unsent += 1
        for turn in trajectory.turns.values():  # those free to go, under their trajectory's new size
            for waiting in turn.waiting:
                if waiting.queued is not None:
                    self._offer(waiting, trajectory, now)
        self._offer(entry, trajectory, now)  # a new request frees no other: it can only hold one back
        return entry

    def take(self, now: float) -> Entry[Item] | None:
        """The next request free to go, marked sent at `now`; None when none is."""
        self._expire(now)
        while self._free:
            key, entry = heapq.heappop(self._free)
            if key != entry.queued:  # offered again since, under its trajectory's newer size
                continue
            entry.queued = None
            trajectory = self._trajectories[entry.place.trajectory]
            if not self._free_to_go(entry, trajectory, now):  # another of its turn went first, or came since
                continue
            turn = trajectory.turns[entry.place.turn]
            turn.waiting.remove(entry)
            entry.sent_at = now
            self.unsent -= 1
            if turn.lead is None:
                turn.lead = entry
                if self.wait_s is not None:
                    heapq.heappush(self._leads, (now + self.wait_s, entry.arrival, entry))
            return entry
        return None

    def done(self, entry: Entry[Item], now: float) -> None:
        """The request was answered, or failed: the requests that waited for it may go."""
        entry.done = True
        trajectory = self._trajectories[entry.place.trajectory]
        trajectory.open -= 1
        if trajectory.open == 0:
            del self._trajectories[entry.place.trajectory]  # a later request of it waits for nothing
        elif trajectory.turns[entry.place.turn].lead is entry:
            self._release(trajectory, now)

    def next_deadline(self) -> float | None:
        """When the earliest lead in flight stops holding others back."""
        while self._leads and self._leads[0][2].done:
            heapq.heappop(self._leads)
        return self._leads[0][0] if self._leads else None

    def _expire(self, now: float) -> None:
        while self._leads and (self._leads[0][2].done or self._leads[0][0] <= now):
            _, _, lead = heapq.heappop(self._leads)
            trajectory = self._trajectories.get(lead.place.trajectory)
            if trajectory is not None and not lead.done:
                self._release(trajectory, now)

    def _release(self, trajectory: _Trajectory, now: float) -> None:
        for turn in trajectory.turns.values():
            for waiting in turn.waiting:
                self._offer(waiting, trajectory, now)

    def _offer(self, entry: Entry[Item], trajectory: _Trajectory, now: float) -> None:
        if self._free_to_go(entry, trajectory, now) and entry.queued != (key := self._key(entry, trajectory)):
            entry.queued = key
            heapq.heappush(self._free, (key, entry))

    @staticmethod
    def _key(entry: Entry[Item], trajectory: _Trajectory) -> tuple[int, ...]:
        return -trajectory.size, trajectory.order, entry.place.turn, entry.place.variant, entry.arrival

    def _free_to_go(self, entry: Entry[Item], trajectory: _Trajectory, now: float) -> bool:
        turn = trajectory.turns[entry.place.turn]
        if turn.lead is not None:
            return self._settled(turn.lead, now)
        if min(turn.waiting, key=lambda e: (e.place.variant, e.arrival)) is not entry:  # the turn's lead-to-be first
            return False
        earlier = [t for t in trajectory.turns if t < entry.place.turn]
        if not earlier:
            return True
        lead = trajectory.turns[max(earlier)].lead
        return lead is not None and self._settled(lead, now)

    def _settled(self, lead: Entry[Item], now: float) -> bool:
        waited = self.wait_s is not None and lead.sent_at is not None and now - lead.sent_at >= self.wait_s
        return lead.done or waited


def prefix_key(place: Place, first_seen: dict[str, int]) -> tuple[int, int, int]:
    """The order of places as they come: trajectories as first seen (`first_seen` fills as it goes), turns,
    variants."""
    return first_seen.setdefault(place.trajectory, len(first_seen)), place.turn, place.variant


def prefix_sorted(items: Iterable[Item], place: Callable[[Item], Place]) -> list[Item]:
    """The items in prefix order: each trajectory's requests together, those with the most first (then as first
    seen), turns in order, then variants; what one sender sends at once in this order finds the prefixes of those
    before it computed."""
    first_seen: dict[str, int] = {}
    keyed = [(prefix_key(place(item), first_seen), i, item) for i, item in enumerate(items)]
    sizes = Counter(key[0] for key, _, _ in keyed)
    return [item for *_, item in sorted(keyed, key=lambda k: (-sizes[k[0][0]], k[0], k[1]))]
