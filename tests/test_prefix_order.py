"""The prefix order (awbench.prefix_order): which request may go, on a clock the tests move, and the same order
handed to asyncio workers (awbench.workers.PrefixQueue)."""

from __future__ import annotations

import asyncio
import random

import pytest

from awbench.prefix_order import Entry, Place, PrefixOrder, prefix_sorted
from awbench.workers import PrefixQueue, in_prefix_order


def take_all(order: PrefixOrder[str], now: float = 0.0) -> list[Entry[str]]:
    taken = []
    while (entry := order.take(now)) is not None:
        taken.append(entry)
    return taken


def names(entries: list[Entry[str]]) -> list[str]:
    return [e.item for e in entries]


def filled(*places: tuple[str, Place]) -> PrefixOrder[str]:
    order: PrefixOrder[str] = PrefixOrder()
    for name, place in places:
        order.add(name, place, 0.0)
    return order


def test_a_trajectorys_turns_go_one_after_another_while_other_trajectories_go_at_once() -> None:
    order = filled(
        ("a1", Place("a", 1)),
        ("a2", Place("a", 2)),
        ("a3", Place("a", 3)),
        ("b1", Place("b", 1)),
        ("b4", Place("b", 4)),
    )
    first = take_all(order)
    assert names(first) == ["a1", "b1"]  # one turn of each trajectory; the later turns wait
    order.done(first[0], 0.5)
    assert names(take_all(order, 0.5)) == ["a2"]  # a1 answered: a2, and still not a3 nor b4
    order.done(first[1], 0.6)
    assert names(take_all(order, 0.6)) == ["b4"]
    assert order.unsent == 1  # a3, behind a2


def test_a_turns_variants_go_after_its_first_together_with_the_next_turn() -> None:
    order = filled(
        ("t1g0", Place("a", 1, 0)), ("t1g1", Place("a", 1, 1)), ("t1g2", Place("a", 1, 2)), ("t2g0", Place("a", 2, 0))
    )
    (lead,) = take_all(order)
    assert lead.item == "t1g0"
    order.done(lead, 1.0)
    assert names(take_all(order, 1.0)) == ["t1g1", "t1g2", "t2g0"]


def test_a_variant_that_comes_after_its_turn_began_waits_for_the_turns_first() -> None:
    order = filled(("g1", Place("a", 1, 1)))
    (lead,) = take_all(order)
    order.add("g0", Place("a", 1, 0), 0.1)  # a smaller variant, later: the turn's first request is g1 already
    assert take_all(order, 0.1) == []
    order.done(lead, 0.5)
    assert names(take_all(order, 0.5)) == ["g0"]


def test_a_request_whose_predecessor_never_comes_waits_for_nothing() -> None:
    order = filled(("a3", Place("a", 3)), ("b1", Place("b", 1)))  # a1, a2 failed or were reused: never given
    assert names(take_all(order)) == ["a3", "b1"]


def test_a_later_turn_waits_for_the_nearest_earlier_turn_given() -> None:
    order = filled(("a1", Place("a", 1)), ("a5", Place("a", 5)))  # a2..a4 never come
    (a1,) = take_all(order)
    order.done(a1, 1.0)
    assert names(take_all(order, 1.0)) == ["a5"]


def test_a_failed_request_releases_what_waits_for_it() -> None:
    order = filled(("a1", Place("a", 1)), ("a2", Place("a", 2)))
    (a1,) = take_all(order)
    order.done(a1, 0.2)  # failed: done all the same, nothing better will come
    assert names(take_all(order, 0.2)) == ["a2"]


def test_a_request_in_flight_past_the_wait_releases_what_waits_for_it() -> None:
    order: PrefixOrder[str] = PrefixOrder(wait_s=10.0)
    order.add("a1", Place("a", 1), 0.0)
    order.add("a2", Place("a", 2), 0.0)
    (a1,) = take_all(order, 100.0)
    assert order.next_deadline() == 110.0
    assert take_all(order, 109.9) == []
    assert names(take_all(order, 110.0)) == ["a2"]
    order.done(a1, 111.0)  # answered after all: nothing more to release
    assert order.next_deadline() == 120.0 and order.unsent == 0  # a2's own, in flight since 110


def test_the_trajectory_given_first_goes_first() -> None:
    order = filled(("a1", Place("a", 1)), ("b1", Place("b", 1)), ("a2", Place("a", 2)))
    a1 = order.take(0.0)
    assert a1 is not None and a1.item == "a1"
    order.done(a1, 0.5)
    assert names(take_all(order, 0.5)) == ["a2", "b1"]  # a's next turn before b opens: few trajectories open


def test_the_trajectory_with_the_most_requests_goes_first() -> None:
    """Its chain is the longest: begun early, it does not run alone at the end."""
    order = filled(("a1", Place("a", 1)), ("b1", Place("b", 1)), ("b2", Place("b", 2)), ("c1", Place("c", 1)))
    first = order.take(0.0)
    assert first is not None and first.item == "b1"
    order.add("a2", Place("a", 2), 0.1)
    order.add("a3", Place("a", 3), 0.1)  # a has grown past b: its waiting first turn goes next
    assert names(take_all(order, 0.1)) == ["a1", "c1"]


def test_a_finished_trajectory_given_again_waits_for_nothing() -> None:
    order = filled(("a1", Place("a", 1)))
    (a1,) = take_all(order)
    order.done(a1, 0.5)
    order.add("a2", Place("a", 2), 0.6)
    assert names(take_all(order, 0.6)) == ["a2"]


def test_one_worker_takes_the_requests_in_prefix_sorted_order() -> None:
    """What the in-process engines send at once (`prefix_sorted`) is the order one HTTP worker sends them in."""
    rng = random.Random(7)
    for _ in range(200):
        places = [Place(rng.choice("abcd"), rng.randint(1, 5), rng.randint(0, 2)) for _ in range(rng.randint(1, 15))]
        items = [f"{i}" for i in range(len(places))]
        by_item = dict(zip(items, places))
        order: PrefixOrder[str] = PrefixOrder()
        for item in items:
            order.add(item, by_item[item], 0.0)
        sent = []
        while (entry := order.take(0.0)) is not None:
            sent.append(entry.item)
            order.done(entry, 0.0)
        assert sent == prefix_sorted(items, by_item.__getitem__)


def test_prefix_sorted_groups_trajectories_the_longest_first_then_as_first_seen() -> None:
    places = {
        "b2": Place("b", 2),
        "a1": Place("a", 1, 1),
        "b1": Place("b", 1),
        "a0": Place("a", 1, 0),
        "c1": Place("c", 1),
    }
    assert prefix_sorted(list(places), places.__getitem__) == ["b1", "b2", "a0", "a1", "c1"]
    places |= {"c2": Place("c", 2), "c3": Place("c", 3)}
    assert prefix_sorted(list(places), places.__getitem__) == ["c1", "c2", "c3", "b1", "b2", "a0", "a1"]


def test_the_queue_hands_workers_what_is_free_and_wakes_them_at_the_wait() -> None:
    async def go() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        queue: PrefixQueue[str] = PrefixQueue({"a1": Place("a", 1), "a2": Place("a", 2)}.__getitem__, wait_s=0.2)
        start = loop.time()
        queue.put("a1")
        queue.put("a2")
        queue.close()
        got = []

        async def worker() -> None:
            while (entry := await queue.get()) is not None:
                got.append((entry.item, loop.time() - start))
                await asyncio.sleep(1.0)  # a slow answer: a2 goes when a1 has been in flight 0.2 s
                queue.done(entry)

        await asyncio.gather(worker(), worker())
        return got

    got = asyncio.run(go())
    assert [name for name, _ in got] == ["a1", "a2"]
    assert 0.18 <= got[1][1] < 0.6


def test_a_stopped_queue_hands_out_nothing_more() -> None:
    async def go() -> list[object]:
        queue: PrefixQueue[str] = PrefixQueue(lambda name: Place(name, 1))
        queue.put("a")
        queue.put("b")
        first = await queue.get()
        queue.stop()
        assert first is not None
        queue.done(first)
        return [await queue.get()]

    assert asyncio.run(go()) == [None]


def test_in_prefix_order_keeps_the_concurrency_full_across_trajectories() -> None:
    in_flight = peak = 0
    sent: list[str] = []

    async def one(item: str, place: Place) -> str:
        nonlocal in_flight, peak
        sent.append(item)
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return item

    async def go() -> list[str]:
        items = [f"{t}{turn}" for t in "abcdefgh" for turn in (1, 2, 3)]
        return [r async for r in in_prefix_order(items, one, lambda i: Place(i[0], int(i[1])), concurrency=4)]

    done = asyncio.run(go())
    assert sorted(done) == sorted(sent) and len(done) == 24
    assert peak == 4
    for t in "abcdefgh":  # each trajectory's turns in turn order
        assert [s for s in sent if s[0] == t] == [f"{t}1", f"{t}2", f"{t}3"]


def test_an_exception_stops_the_rest_and_is_raised() -> None:
    async def one(item: str, place: Place) -> str:
        if item == "b":
            raise RuntimeError("boom")
        await asyncio.sleep(0.01)
        return item

    async def go() -> list[str]:
        return [r async for r in in_prefix_order(["a", "b", "c"], one, lambda i: Place(i, 1), concurrency=2)]

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(go())


def test_a_candidates_later_turn_waits_for_the_answer_however_long() -> None:
    """`wait_s=None` (a candidate world model): the lead in flight never stops holding its later turns back, so
    a model never sees a turn's real observation before it answered that turn."""
    order: PrefixOrder[str] = PrefixOrder(wait_s=None)
    first = order.add("turn 1", Place("t", 1), now=0.0)
    order.add("turn 2", Place("t", 2), now=0.0)
    assert order.take(now=0.0) is first
    assert order.take(now=1e9) is None and order.next_deadline() is None
    order.done(first, now=1e9)
    taken = order.take(now=1e9)
    assert taken is not None and taken.item == "turn 2"
