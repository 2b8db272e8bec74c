"""Choosing the samples to evaluate: by domain, by id, a limit per domain, a stratified random sample."""

from __future__ import annotations

import random

from awbench.config import DataSettings
from awbench.data.problems import DataError, Problem
from awbench.domains import DOMAINS
from awbench.records import Sample
from awbench.suggest import did_you_mean


def select(samples: list[Sample], settings: DataSettings) -> list[Sample]:
    """Apply, in order: domains, ids, limit per domain, stratified random sample. Order is kept."""
    chosen = samples
    if settings.domains:
        wanted = {d.strip().lower() for d in settings.domains}
        unknown = sorted(wanted - set(DOMAINS))
        if unknown:
            raise DataError(f"unknown domain {', '.join(unknown)}; valid domains: {', '.join(DOMAINS)}")
        chosen = [s for s in chosen if s.domain in wanted]
    if settings.ids:
        ids = set(settings.ids)
        chosen = [s for s in chosen if ids & _names(s)]
    if settings.limit is not None:
        if settings.limit < 0:
            raise DataError(f"limit must be 0 or more, got {settings.limit}")
        taken: dict[str, int] = {}
        kept = []
        for s in chosen:
            taken[s.domain] = taken.get(s.domain, 0) + 1
            if taken[s.domain] <= settings.limit:
                kept.append(s)
        chosen = kept
    if settings.sample is not None:
        chosen = _stratified(chosen, settings.sample, settings.seed)
    return chosen


def unmatched_ids(samples: list[Sample], ids: list[str], source: str) -> list[Problem]:
    """A warning for each `ids` value that picks none of `samples`, with the closest that would."""
    known = set().union(*(_names(s) for s in samples))
    return [
        Problem(source, None, "ids", f"{i!r} matches no sample{did_you_mean(i, known)}", "warning")
        for i in ids
        if i not in known
    ]


def _names(sample: Sample) -> set[str]:
    """What an `ids` value may say to pick this sample."""
    return {str(sample.record.id), sample.key, f"{sample.domain}/{sample.record.id}"}


def _stratified(samples: list[Sample], n: int, seed: int) -> list[Sample]:
    if n < 0:
        raise DataError(f"sample size must be 0 or more, got {n}")
    if n >= len(samples):
        return samples
    positions: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        positions.setdefault(s.domain, []).append(i)
    quotas = _quotas({d: len(p) for d, p in positions.items()}, n)
    rng = random.Random(seed)
    picked = sorted(i for d, p in positions.items() for i in rng.sample(p, quotas[d]))
    return [samples[i] for i in picked]


def _quotas(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Split `n` over the domains in proportion to their sizes (largest remainder), at least one each when
    `n` covers every domain. Ties go to the domain seen first."""
    total = sum(sizes.values())
    exact = {d: n * size / total for d, size in sizes.items()}
    quotas = {d: int(x) for d, x in exact.items()}
    by_remainder = sorted(sizes, key=lambda d: exact[d] - quotas[d], reverse=True)
    for d in by_remainder[: n - sum(quotas.values())]:
        quotas[d] += 1
    if n >= len(sizes):
        for d in sizes:
            if quotas[d] == 0:
                donor = max(sizes, key=lambda k: quotas[k])
                quotas[donor] -= 1
                quotas[d] = 1
    return quotas
