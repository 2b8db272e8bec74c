"""Durable files: JSON and every other output replaced atomically, JSONL tables of pydantic records appended, flushed per record and
fsynced at least every second, with a torn last line (a crash mid-write) cut off before appending.

awbench's own files (a run's, its evaluations', the pairwise answers') are opened without following a link and
without blocking on a FIFO, and must be regular files (`open_own`): a link, FIFO, device or folder planted where
awbench keeps a file is refused (StoreError naming it), never written through or read from; its own folders
likewise (`own_dir`); a file it writes must have no other name (a hard link), which the write would change too.
Reads are bounded (`MAX_READ_BYTES` per JSON file or JSONL line). Outputs the user names are written as the user
means them (`write_output`): a file replaced atomically, keeping its permissions; a device or FIFO written in
place; a descriptor (/dev/stdout) written through. Inputs the user names are regular files (`open_input`)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
import sys
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


# The most awbench reads of one of its JSON files or JSONL lines: real ones are a few MB at most, and a file planted
# larger (a sparse file of a terabyte) would otherwise be read into memory whole.
MAX_READ_BYTES = 256 * 2**20

_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
    stat.S_IFREG: "a file",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a file")


def _refused(path: Path, mode: int, expected: str) -> StoreError:
    return StoreError(
        f"{path} is {_kind(mode)}, where awbench keeps {expected} of its own: awbench follows no link and writes "
        "only its own files there; remove it"
    )


def refuse_planted(path: Path, folder: bool = False) -> os.stat_result | None:
    """StoreError unless `path`, where awbench keeps its own file (or `folder`), is missing or is one: a link,
    FIFO, device or the other kind is refused before anything opens it (opening a device may do something).
    What it is (lstat), or None when it is missing."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode):
        return info
    raise _refused(path, info.st_mode, "a folder" if folder else "a file")


def refuse_shared(path: Path, info: os.stat_result) -> None:
    """StoreError when awbench's own file `path` (`info`: what it is), about to be written, has another name (a
    hard link, which no lstat tells from a file of its own): appending to it, or cutting off its torn last line,
    would change the file of that other name too."""
    if info.st_nlink > 1:
        raise StoreError(
            f"{path} has {info.st_nlink - 1} other name(s) (a hard link), where awbench keeps a file of its own: "
            "awbench writes only a file no other name leads to; remove it, or make it a file of its own (copy it, "
            "then move the copy over it)"
        )


def open_own(path: Path, flags: int) -> int:
    """A descriptor of awbench's own file `path` (os.open's `flags`; new files get the usual permissions), which
    is a regular file: opened without following a link (O_NOFOLLOW) or waiting for a FIFO's other end
    (O_NONBLOCK), then checked again on what was opened, so that nothing put in its place meanwhile is used."""
    refuse_planted(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO):  # a link, or a FIFO without a reader, put there since
            refuse_planted(path)
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refused(path, mode, "a file")
    os.set_blocking(fd, True)
    return fd


def read_open(fd: int, path: Path, limit: int) -> bytes:
    """What the open file `fd` (`path`) holds, from its start: StoreError naming it when that is more than `limit`
    bytes, told from its size before anything is read."""
    size = os.fstat(fd).st_size
    data = b"" if size > limit else os.pread(fd, limit + 1, 0)
    if size > limit or len(data) > limit:
        raise StoreError(f"{path} holds more than {limit:,} bytes, more than awbench ever writes there: not read")
    return data


def read_own(path: Path, limit: int | None = None) -> bytes:
    """awbench's own file `path` (`open_own`), at most `limit` bytes (MAX_READ_BYTES) or StoreError; a missing
    file is FileNotFoundError."""
    fd = open_own(path, os.O_RDONLY)
    try:
        return read_open(fd, path, MAX_READ_BYTES if limit is None else limit)
    finally:
        os.close(fd)


class InputError(AwbenchError):
    """A file the user gives awbench to read that is not a regular file."""

    key = "not_a_file"


def open_input(path: Path, buffering: int = -1) -> IO[bytes]:
    """A file the user gives awbench to read (--data, import), open: a regular file, or a link to one; anything
    else is refused (InputError naming it) before it is opened, and again on what was opened, without waiting
    for a FIFO's writer: a FIFO would wait for ever, a device (/dev/zero) never end. A missing or unreadable
    file is an OSError, as open() raises it."""
    leads = "leads to" if os.path.islink(path) else "is"
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb", buffering=buffering)
        os.close(fd)
    raise InputError(f"{path} {leads} {_kind(mode)}, not a regular file: awbench reads its input from files only")


def own_dir(root: Path, path: Path, make: bool = False) -> Path:
    """`path`, a folder awbench keeps below `root` (a run's `judges/<id>`): each of its parts below `root` is a
    directory and no link (StoreError naming the first that is not), checked as far as they exist, or made
    (`make`, `root` too)."""
    if make:
        root.mkdir(parents=True, exist_ok=True)
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if make:
            try:
                os.mkdir(current)
            except FileExistsError:
                pass  # checked below, as whatever already exists
        refuse_planted(current, folder=True)
        if not make and not os.path.lexists(current):
            break
    return path


def write_atomic(path: Path, content: str | bytes) -> None:
    """awbench's own file `path` replaced: a unique temporary file beside it, fsynced, then renamed over it, so that
    readers see the old or the new file, never a part (a full disk leaves the old one as it was), and two writers
    never share a temporary file. Text is written as UTF-8. A link, FIFO, device or folder at `path` is refused
    (`refuse_planted`); an OSError names `path`, not the temporary file (which is removed)."""
    info = refuse_planted(path)
    if info is not None:
        refuse_shared(path, info)
    _replace(path, content.encode("utf-8") if isinstance(content, str) else content, info)


def write_output(path: Path, content: str | bytes, *, exact: bool = True) -> None:
    """An output the user names (`-o`), written as they mean it: a file (or a link to one: the file it leads to,
    the link kept) replaced as `write_atomic` replaces it, keeping its permissions, unless it is not writable
    (`_refuse_unwritable`); a character device (/dev/null, a terminal) or a FIFO written in place, as `cat > PATH`
    would (a FIFO waits for its reader); a descriptor of ours (/dev/stdout, /dev/fd/N, or the very file open on
    stdout or stderr) written through, as it was opened (`>>` appends); anything else refused (StoreError).
    Nothing ever replaces a device, a FIFO or a link. `exact`: the user named this very path, not a folder to
    write it into (`--png DIR`), where only a file is written: a FIFO there would wait for a reader nobody knows
    of. An OSError (a full device, a reader gone) names `path`."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with naming(path):
        descriptor = _descriptor_named(path) if exact else None
        if descriptor is not None:
            _write_descriptor(descriptor, path, data)
            return
        try:
            info: os.stat_result | None = os.stat(path)  # what it leads to
        except FileNotFoundError:
            info = None  # a new file (or one a link leads to, made)
        if info is None or stat.S_ISREG(info.st_mode):
            if info is not None:
                _refuse_unwritable(path, info)
            _replace(Path(os.path.realpath(path)), data, info)
        elif exact and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
            _write_in_place(path, data, info.st_mode)
        elif exact:
            raise StoreError(
                f"{path} is {_kind(info.st_mode)}: awbench writes an output to a file, a FIFO or a character device"
            )
        else:
            raise StoreError(
                f"{path} is {_kind(info.st_mode)}: awbench writes only files into a folder it is given; remove it"
            )


def _refuse_unwritable(path: Path, info: os.stat_result) -> None:
    """A file is replaced only where `>` could write it: never someone else's file the user may not write, nor a
    read-only one, which the superuser could write (`cp` would): its owner made it so to keep it as it is."""
    if not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    if not info.st_mode & stat.S_IWUSR:
        raise StoreError(
            f"cannot write {path}: it is read-only (mode {stat.S_IMODE(info.st_mode):04o}), and awbench never "
            "replaces a read-only file; make it writable (chmod u+w), or give another path",
            key="cannot_write",
        )


_MAX_LINKS = 40  # as the kernel follows at most (ELOOP)


def _descriptor_named(path: Path) -> int | None:
    """The descriptor of this process that `path` names, if any: /dev/stdout, /dev/fd/N, /proc/self/fd/N (or a
    link to one of them), or a path to the very file open on stdout or stderr. Opening such a path would open
    the file the descriptor leads to afresh, as a new file: replaced, or written from its start, where the
    shell opened it to append (`>>`), and what the command writes after would go to the file replaced."""
    folders = {os.path.realpath(folder) for folder in ("/dev/fd", "/proc/self/fd", "/proc/thread-self/fd")}
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        folder, name = os.path.split(current)
        folder = os.path.realpath(folder)
        if name.isdigit() and folder in folders:
            return int(name)
        try:
            current = os.path.join(folder, os.readlink(current))
        except OSError:  # not a link (or nothing there): a path, named as it is
            break
    try:
        named = os.stat(path)
    except OSError:
        return None
    for standard in (1, 2):
        try:
            if os.path.samestat(named, os.fstat(standard)):
                return standard
        except OSError:  # closed
            continue
    return None


def _write_descriptor(fd: int, path: Path, data: bytes) -> None:
    """Through our descriptor `fd`, after what this process printed before (flushed), as it was opened: at its
    offset, or at the end of its file when it was opened to append. Only a descriptor this process was given
    (inherited, as the shell's `3>>FILE` gives it): never one awbench opened for itself (a run's file, a socket)."""
    if fd > 2 and not os.get_inheritable(fd):
        raise StoreError(
            f"{path} is descriptor {fd}, which awbench opened for itself, not one it was given: nothing written"
        )
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not stream.closed:
            stream.flush()
    _write_all(fd, data)


def _replace(path: Path, data: bytes, replaced: os.stat_result | None) -> None:
    """`path` replaced by a new file holding `data`; one that was there (`replaced`: what it is) keeps its
    permissions (and, when the superuser replaces it, its owner and group), not the usual ones a new file gets."""
    with naming(path):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            if replaced is not None and os.geteuid() == 0:
                os.fchown(fd, replaced.st_uid, replaced.st_gid)
            os.fchmod(fd, FILE_MODE if replaced is None else stat.S_IMODE(replaced.st_mode) & 0o777)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    fsync_dir(path.parent)


def _write_in_place(path: Path, data: bytes, mode: int) -> None:
    """Into a device or FIFO, never truncated: a device's open does not wait (a serial line without carrier), a
    FIFO's waits for its reader; what was opened must be what `mode` says (nothing put there meanwhile)."""
    nonblocking = 0 if stat.S_ISFIFO(mode) else os.O_NONBLOCK
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC | nonblocking)
    try:
        opened = os.fstat(fd).st_mode
        if stat.S_IFMT(opened) != stat.S_IFMT(mode):
            raise StoreError(f"{path} became {_kind(opened)} while it was opened: nothing written")
        os.set_blocking(fd, True)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any:
    """awbench's own JSON file (`read_own`), or StoreError naming it."""
    try:
        return json.loads(read_own(path))
    except (OSError, ValueError, RecursionError) as error:
        raise StoreError(f"{path}: cannot read: {getattr(error, 'strerror', None) or error}") from None


class JsonlTable(Generic[R, K]):
    """An append-only JSONL file of pydantic records, indexed by a key function."""

    def __init__(self, path: Path, model: type[R], key: Callable[[R], K]):
        self.path, self.model, self.key = path, model, key

    def load(self, keep: Callable[[R], R] | None = None) -> dict[K, R]:
        """The records by key (the last of a key wins); `keep` makes what is kept of each record (say, without
        the texts a caller does not read), so that the whole records are never held at once."""
        records: dict[K, R] = {}
        for record in self.records():
            records[self.key(record)] = record if keep is None else keep(record)
        return records

    def records(self) -> Iterator[R]:
        """Every record in file order, read line by line (none when the file is missing): a run's records are as
        large as its predictions, and a copy of the whole file beside them made scoring a run the peak of its
        memory. A line is at most MAX_READ_BYTES; a torn last line (a crash mid-write) is left out."""
        try:
            fd = open_own(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        except OSError as error:
            raise StoreError(f"{self.path}: cannot read: {error.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            number = 0
            while True:
                number += 1
                try:
                    line = handle.readline(MAX_READ_BYTES + 1)
                except OSError as error:
                    raise StoreError(f"{self.path}: cannot read: {error.strerror}") from None
                if len(line) > MAX_READ_BYTES:
                    raise StoreError(
                        f"{self.path}:{number}: a line of more than {MAX_READ_BYTES:,} bytes, more than awbench "
                        "ever writes: not read"
                    )
                if not line.endswith(b"\n"):
                    return  # the end of the file, or the last piece after the last newline: a torn write
                if line.isspace():
                    continue
                try:
                    yield self.model.model_validate_json(line)
                except ValidationError as error:
                    first = error.errors()[0]
                    where = ".".join(str(part) for part in first["loc"]) or "record"
                    raise StoreError(f"{self.path}:{number}: {where}: {first['msg']}") from None

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
        # Read and written through one descriptor (the torn line is found with pread), never opened again by name.
        fd = open_own(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            refuse_shared(self.path, os.fstat(fd))  # before its torn line is cut off
        except StoreError:
            os.close(fd)
            raise
        handle = os.fdopen(fd, "ab")
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
    position = end
    while position > 0:
        start = max(0, position - 65536)
        block = os.pread(handle.fileno(), position - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
            break
        position = start
    else:
        keep = 0
    if keep != end:
        handle.truncate(keep)
