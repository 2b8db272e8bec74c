"""Durable files: JSON and every other output replaced atomically, JSONL tables of pydantic records appended, flushed per record and
fsynced at least every second, with a torn last line (a crash mid-write) cut off before appending."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from awbench.errors import AwbenchError

R = TypeVar("R", bound=BaseModel)
K = TypeVar("K", bound=Hashable)

FSYNC_INTERVAL_S = 1.0


class StoreError(AwbenchError):
    """A run's file (or a directory of runs) that cannot be read or written as one; the message names the file
    (and line)."""

    key = "bad_run"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()
FILE_MODE = 0o666 & ~_UMASK  # what open() would give; mkstemp makes 0600 files
DIR_MODE = 0o777 & ~_UMASK  # what mkdir would give; mkdtemp makes 0700 directories


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """An OSError raised inside names `path`: those of write(), flush() and fsync() (a full disk, a file size
    limit) name no file, and a temporary file's name would mean nothing to the user."""
    try:
        yield
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None


def write_atomic(path: Path, content: str | bytes) -> None:
    """A unique temporary file beside `path`, fsynced, then renamed over it: readers see the old or the new
    file, never a part (a full disk leaves the old one as it was), and two writers never share a temporary
    file. Text is written as UTF-8. An OSError names `path`, not the temporary file (which is removed)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with naming(path):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, FILE_MODE)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any:
    """A JSON file, or StoreError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise StoreError(f"{path}: cannot read: {getattr(error, 'strerror', None) or error}") from None


class JsonlTable(Generic[R, K]):
    """An append-only JSONL file of pydantic records, indexed by a key function."""

    def __init__(self, path: Path, model: type[R], key: Callable[[R], K]):
        self.path, self.model, self.key = path, model, key

    def load(self, keep: Callable[[R], R] | None = None) -> dict[K, R]:
        """The records by key (the last of a key wins); `keep` makes what is kept of each record (say, without
        the texts a caller does not read), so that the whole records are never held at once."""
        # Line by line: a run's records are as large as its predictions, and a copy of the whole file (or two,
        # with its lines) beside the records made scoring a run the peak of its memory.
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise StoreError(f"{self.path}: cannot read: {error.strerror}") from None
        records: dict[K, R] = {}
        with handle:
            try:
                for number, line in enumerate(handle, start=1):
                    if not line.endswith(b"\n"):
                        break  # the last piece, after the last newline: a torn write
                    if line.isspace():
                        continue
                    try:
                        record = self.model.model_validate_json(line)
                    except ValidationError as error:
                        first = error.errors()[0]
                        where = ".".join(str(part) for part in first["loc"]) or "record"
                        raise StoreError(f"{self.path}:{number}: {where}: {first['msg']}") from None
                    records[self.key(record)] = record if keep is None else keep(record)
            except OSError as error:
                raise StoreError(f"{self.path}: cannot read: {error.strerror}") from None
        return records

    @contextmanager
    def appender(self) -> Iterator[Callable[[R], None]]:
        """`append(record)` for the duration: each record flushed as written, fsynced within FSYNC_INTERVAL_S
        (at once when the last fsync is older; otherwise by a timer of the running event loop, when there is
        one) and on leaving. A torn last line (a crash mid-write) is cut off first."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # used outside async code: a batch of writes, fsynced on leaving
            loop = None
        handle = open(self.path, "ab")  # noqa: SIM115 (held across the yield, closed in the finally below)
        synced = time.monotonic()
        pending: asyncio.TimerHandle | None = None
        failed: list[OSError] = []  # a timer's fsync error, raised by the next append or on leaving

        def sync() -> None:
            nonlocal synced, pending
            if pending is not None:
                pending.cancel()
                pending = None
            os.fsync(handle.fileno())
            synced = time.monotonic()

        def sync_later() -> None:
            nonlocal pending
            pending = None
            try:
                sync()
            except OSError as error:
                failed.append(error)

        def append(record: R) -> None:
            nonlocal pending
            line = record.model_dump_json().encode("utf-8") + b"\n"
            with naming(self.path):
                if failed:
                    raise failed.pop()
                handle.write(line)
                handle.flush()
                if time.monotonic() - synced >= FSYNC_INTERVAL_S:
                    sync()
                elif pending is None and loop is not None:
                    pending = loop.call_later(FSYNC_INTERVAL_S - (time.monotonic() - synced), sync_later)

        try:
            with naming(self.path):
                _cut_torn_line(handle)
            try:
                yield append
            finally:
                with naming(self.path):
                    handle.flush()
                    sync()
                    if failed:
                        raise failed.pop()
        finally:
            if pending is not None:
                pending.cancel()
            with naming(self.path):
                handle.close()  # after a failed flush it tries again, and fails the same way

    def rewrite(self, records: list[R]) -> None:
        write_atomic(self.path, "".join(r.model_dump_json() + "\n" for r in records))


def _cut_torn_line(handle: IO[bytes]) -> None:
    """Truncate after the last newline, reading backwards in blocks (the file may be large)."""
    end = handle.seek(0, os.SEEK_END)
    with open(handle.name, "rb") as reader:
        position = end
        while position > 0:
            start = max(0, position - 65536)
            reader.seek(start)
            block = reader.read(position - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            position = start
        else:
            keep = 0
    if keep != end:
        handle.truncate(keep)
