"""Secrets never reach a file, a log or a message: every API key awbench reads, and every key-like variable
of the environment, is replaced by `***` wherever an error becomes text (`redact`); so are the secrets a URL
can carry, a password (or a user name) before its host and the values of key-like query parameters, in any
text (`redact`, `url_secrets_masked`)."""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
MIN_SECRET_CHARS = 8  # shorter values ("EMPTY", "x") would mask ordinary words
_KEY_LIKE_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.I)
# A query parameter whose value is a secret: `key`, `api_key`, `x-api-key`, `access_token`, `sig`, `password`...
# (`api-version`, `model`, `limit` are not). The last word of the name decides.
_SECRET_PARAMETER = r"(?:[A-Za-z0-9]+[_.-])*(?:api_?key|apikey|key|token|secret|password|passwd|pwd|sig|signature|auth|authorization|credentials?|code)"
_SECRET_QUERY_VALUE = re.compile(rf"(?i)([?&;]{_SECRET_PARAMETER}=)[^&;#\s\"'<>]+")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s\"'<>]+@")
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
    return url_secrets_masked(text)


def url_secrets_masked(text: str) -> str:
    """Every URL in `text` with `***@` for its user name and password, and `***` for the values of its
    key-like query parameters."""
    return _SECRET_QUERY_VALUE.sub(rf"\1{MASK}", _URL_USERINFO.sub(rf"\1{MASK}@", text))


def url_has_credentials(url: str) -> bool:
    """A user name or password before the host (`http://user:key@host`)."""
    return "@" in urlsplit(url).netloc


def _secret_parameters(url: str) -> list[str]:
    return [
        value
        for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True)
        if re.fullmatch(_SECRET_PARAMETER, name, re.I)
    ]


def register_url_secrets(url: str) -> None:
    """The key-like query parameters of a URL awbench sends requests to, so that an endpoint echoing one
    (without its URL around it) is masked too."""
    for value in _secret_parameters(url):
        register_secret(value)


def url_holds_mask(url: str) -> bool:
    """A URL as a run recorded it, its key masked: requests with it would send `***`."""
    return MASK in _secret_parameters(url)
