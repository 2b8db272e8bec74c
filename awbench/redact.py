"""Secrets never reach a file, a log or a message: every API key awbench reads, and every key-like variable
of the environment, is replaced by `***` wherever an error becomes text (`redact`)."""

from __future__ import annotations

import os
import re

MASK = "***"
MIN_SECRET_CHARS = 8  # shorter values ("EMPTY", "x") would mask ordinary words
_KEY_LIKE_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.I)
_known: set[str] = set()


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_CHARS:
        _known.add(value)


def _environment_secrets() -> set[str]:
    return {v for name, v in os.environ.items() if _KEY_LIKE_NAME.search(name) and len(v) >= MIN_SECRET_CHARS}


def redact(text: str) -> str:
    for secret in sorted(_known | _environment_secrets(), key=len, reverse=True):  # longest first: no partial masks
        if secret in text:
            text = text.replace(secret, MASK)
    return text
