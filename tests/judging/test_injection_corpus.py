"""The injection check on its corpora (tests/injection_corpus.py): at most 1% of ordinary observations flagged,
exactly the known ones, and every injection attempt of every class flagged, alone and inside an observation."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from injection_corpus import Text, attempts, inserted, ordinary

from awbench.domains import DOMAINS
from awbench.judging.injection import injection_signals

ATTEMPTS = attempts()
CLASSES = sorted({attempt.source for attempt in ATTEMPTS})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Text]:
    return ordinary(Path(tmp_path_factory.mktemp("synth")))


def test_the_ordinary_corpus_covers_every_domain_and_source(corpus: list[Text]) -> None:
    assert len(corpus) >= 500
    assert len({text.text for text in corpus}) == len(corpus)
    assert set(Counter(text.domain for text in corpus)) == set(DOMAINS)
    assert min(Counter(text.domain for text in corpus if text.source == "hand-written").values()) >= 20
    assert Counter(text.source for text in corpus) == {"hand-written": 204, "sample": 95, "synthetic": 354}


def test_at_most_one_percent_of_ordinary_observations_are_flagged_and_exactly_the_known_ones(
    corpus: list[Text],
) -> None:
    flagged = {text.text: tuple(injection_signals(text.text)) for text in corpus}
    assert {t: s for t, s in flagged.items() if s} == {text.text: text.signals for text in corpus if text.signals}
    assert sum(map(bool, flagged.values())) / len(corpus) <= 0.01


def test_the_attempts_cover_many_classes_in_every_domain() -> None:
    assert len(ATTEMPTS) >= 100
    assert len(CLASSES) >= 12
    assert min(Counter(attempt.source for attempt in ATTEMPTS).values()) >= 7
    assert set(Counter(attempt.domain for attempt in ATTEMPTS)) == set(DOMAINS)


@pytest.mark.parametrize("kind", CLASSES)
def test_every_attempt_of_a_class_is_flagged(kind: str) -> None:
    missed = [attempt.text for attempt in ATTEMPTS if attempt.source == kind and not injection_signals(attempt.text)]
    assert missed == []


@pytest.mark.parametrize("kind", CLASSES)
def test_every_attempt_of_a_class_is_flagged_inside_an_ordinary_observation(corpus: list[Text], kind: str) -> None:
    missed = [
        attempt.text
        for attempt in ATTEMPTS
        if attempt.source == kind and not injection_signals(inserted(attempt, corpus))
    ]
    assert missed == []
