"""`--model python:MODULE:NAME`: a Python object in this process is the candidate world model.

NAME is a function `predict(messages, *, sample, seed, max_tokens, temperature) -> str`, plain or `async`, or
a class, instantiated once with `--model-arg KEY=VALUE` (`ModelSettings.model_args`) as keyword arguments, whose
`predict` method has that signature. `messages` are the chat messages every backend sends; `sample` is the same
turn as a structured record (`awbench.world_model.inputs.WorldModelSample`). `python:NAME` is a world model an
installed package names by an entry point in group `awbench.world_models` (value `module:attribute`).

An `async` predict has `--concurrency` calls in flight on the event loop; a plain one runs in a pool of
`--concurrency` threads, daemons: a predict that never returns does not keep the process alive after Ctrl-C, which
stops the run at once (resumable). The class's object is closed when the run ends: its `aclose()` awaited, else
its `close()` called, once, for at most CLOSE_TIMEOUT_S (then the run goes on with a warning). Whatever predict
raises (an exception, `sys.exit`, GeneratorExit, an async predict's own CancelledError; not KeyboardInterrupt,
which stops the run as Ctrl-C does), or an answer that is not a str, fails that generation with its message, for
good (`--retry-failed` asks again), and the run goes on. `os._exit`, which would end awbench's process at once
without a word (exit 0, the run unscored), is guarded while the model's code runs (`_guarded_exit`): called by
it, it fails what the model was doing as `sys.exit` does.

MODULE is imported as `python -c "import MODULE"` would from the current directory, which is put on `sys.path`
for it (as `awbench`, a console script, does not have it there). Everything about the spec is checked before the
data is read (`preflight`): the module, the name, predict's signature, the class's keyword arguments.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import os
import queue
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import metadata
from typing import Any, NoReturn

from awbench.backends import BackendBase, GenerationRequest, generation_place
from awbench.config import ModelSettings
from awbench.errors import AwbenchError
from awbench.prefix_order import CANDIDATE_WAIT
from awbench.records import Generation
from awbench.suggest import did_you_mean
from awbench.workers import in_prefix_order
from awbench.world_model.inputs import world_model_sample

PREFIX = "python:"
ENTRY_POINTS = "awbench.world_models"
SIGNATURE = "predict(messages, *, sample, seed, max_tokens, temperature) -> str"
CLOSE_TIMEOUT_S = 30.0  # how long the run waits for the object's close() or aclose() before going on without it
# What a call of the model's code gave: (its answer, None), or (None, what it raised).
Outcome = tuple[Any, "BaseException | None"]
_PROCESS_EXIT = os._exit  # as Python gives it, before `_guarded_exit` stands in for it
_AWBENCH_PID = os.getpid()
# True while the world model's own code runs: its import, its class's __init__, predict, close and aclose.
_IN_MODEL_CODE: ContextVar[bool] = ContextVar("awbench_in_world_model_code", default=False)


class WorldModelError(AwbenchError, ValueError):
    """A `--model python:...` that cannot be used; the message says why."""

    key = "bad_world_model"


@dataclass(frozen=True)
class WorldModel:
    """What a `python:` spec names, found and checked."""

    target: Any  # the function, or the class
    import_path: str  # module:qualname
    entry_point: metadata.EntryPoint | None  # how an installed package names it (`python:NAME`)

    @property
    def is_class(self) -> bool:
        return inspect.isclass(self.target)

    def describe(self) -> dict[str, Any]:
        """Its import path; the entry point's name; the installed package that provides it and its version."""
        described: dict[str, Any] = {"import_path": self.import_path}
        if self.entry_point is not None:
            described["entry_point"] = self.entry_point.name
            package = self.entry_point.dist
        else:
            package = _package(self.import_path.partition(":")[0])
        if package is not None:
            described |= {"package": package.metadata["Name"], "version": package.version}
        return described


class OsExitCalled(SystemExit):
    """What `os._exit(status)` raises when the world model's code calls it in awbench's process."""


def _guarded_exit(status: int) -> NoReturn:
    """`os._exit` once a world model is imported. Called by the model's code in awbench's process, where it would
    end the process at once, without a word and with exit 0 (no atexit handler, no `finally` runs: nothing can
    report it afterwards), it raises OsExitCalled, which fails what the model was doing as `sys.exit` does;
    anyone else (awbench itself, a process the model forked) exits. A thread the model starts itself does not
    hold its context (`_IN_MODEL_CODE`), and `posix._exit` or a signal are not guarded: those end the process."""
    if _IN_MODEL_CODE.get() and os.getpid() == _AWBENCH_PID:
        raise OsExitCalled(status)
    _PROCESS_EXIT(status)


@contextmanager
def _model_code() -> Iterator[None]:
    token = _IN_MODEL_CODE.set(True)
    try:
        yield
    finally:
        _IN_MODEL_CODE.reset(token)


def _import(module: str, spec: str) -> Any:
    if os.getcwd() not in sys.path:  # the `awbench` script's sys.path has its own directory, not the user's
        sys.path.insert(0, os.getcwd())
    os._exit = _guarded_exit  # before the import: a module binding `from os import _exit` binds the guard
    try:
        with _model_code():
            return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is not None and (module + ".").startswith(error.name + "."):
            raise WorldModelError(
                f"{spec}: no module named {error.name!r} (not installed, nor in the current directory)"
            ) from None
        raise WorldModelError(f"{spec}: importing {module!r} failed: {_what(error)}") from None
    except Exception as error:
        raise WorldModelError(f"{spec}: importing {module!r} failed: {_what(error)}") from None
    except SystemExit as error:
        raise WorldModelError(f"{spec}: importing {module!r} {_did(error)}") from None


def _attribute(module: Any, qualname: str, spec: str) -> Any:
    found = module
    for part in qualname.split("."):
        if not hasattr(found, part):
            names = [n for n in dir(found) if not n.startswith("_")]
            raise WorldModelError(f"{spec}: {found.__name__!r} has no {part!r}{did_you_mean(part, names)}")
        found = getattr(found, part)
    return found


def _installed(name: str, spec: str) -> metadata.EntryPoint:
    entries = {e.name: e for e in metadata.entry_points(group=ENTRY_POINTS)}
    if name not in entries:
        installed = ", ".join(sorted(entries)) or "none"
        raise WorldModelError(
            f"{spec}: no installed world model is named {name!r}{did_you_mean(name, entries)} (installed, by entry "
            f"point group {ENTRY_POINTS}: {installed}); give python:MODULE:NAME for one that is not installed"
        )
    return entries[name]


def _package(module: str) -> metadata.Distribution | None:
    """The installed distribution that provides `module`'s top-level package, when exactly one does (reading
    every installed package's file list: only for run.json)."""
    names = metadata.packages_distributions().get(module.partition(".")[0], [])
    if len(set(names)) != 1:
        return None
    return metadata.distribution(names[0])


def find(model: str) -> WorldModel:
    """The object `python:MODULE:NAME` or `python:NAME` names (WorldModelError when there is none)."""
    spec = model.removeprefix(PREFIX)
    if not spec:
        raise WorldModelError(f"{model!r}: expected python:MODULE:NAME, or python:NAME for an installed one")
    entry = None
    if ":" in spec:
        module, _, qualname = spec.partition(":")
    else:
        entry = _installed(spec, model)
        module, _, qualname = entry.value.partition(":")
    if not module or not qualname:
        raise WorldModelError(f"{model!r}: expected python:MODULE:NAME (e.g. python:my_models:predict)")
    target = _attribute(_import(module, model), qualname, model)
    return WorldModel(target, f"{module}:{qualname}", entry)


def _predict_of_class(cls: type, spec: str) -> Callable[..., Any]:
    """The class's predict as it is called on an instance (without `self`), to check its signature."""
    raw = inspect.getattr_static(cls, "predict", None)
    method = getattr(cls, "predict", None)
    if raw is None or not callable(method):
        raise WorldModelError(f"{spec}: class {cls.__name__} has no predict method; it needs {SIGNATURE}")
    if isinstance(raw, (staticmethod, classmethod)):
        return method
    return functools.partial(method, None)


def _check_signature(predict: Callable[..., Any], what: str, spec: str) -> None:
    try:
        signature = inspect.signature(predict)
    except (TypeError, ValueError):
        return  # a builtin without a signature: it will tell at the first call
    try:
        signature.bind([], sample=None, seed=None, max_tokens=1, temperature=0.0)
    except TypeError as error:
        raise WorldModelError(f"{spec}: {what}{signature} cannot be called as {SIGNATURE}: {error}") from None


def check(settings: ModelSettings) -> WorldModel:
    """The world model, with everything that can be checked without calling it checked."""
    found = find(settings.model)
    spec = settings.model
    if found.is_class:
        _check_signature(_predict_of_class(found.target, spec), f"{found.target.__name__}.predict", spec)
        try:
            inspect.signature(found.target).bind(**settings.model_args)
        except TypeError as error:
            given = ", ".join(settings.model_args) or "no arguments"  # names only: a value may be a key
            raise WorldModelError(
                f"{spec}: --model-arg: {found.target.__name__}{inspect.signature(found.target)} "
                f"cannot take {given}: {error}"
            ) from None
        except ValueError:
            pass  # no signature to check against: the instantiation will tell
    elif callable(found.target):
        if settings.model_args:
            raise WorldModelError(
                f"{spec}: --model-arg is for a class, and {found.import_path} is a function: leave it out"
            )
        _check_signature(found.target, getattr(found.target, "__name__", "predict"), spec)
    else:
        raise WorldModelError(
            f"{spec}: {found.import_path} is a {type(found.target).__name__}, not a function or a class; "
            f"it must be {SIGNATURE}, or a class with that method"
        )
    return found


def _what(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _did(error: BaseException) -> str:
    """What the model's code did: "raised ValueError: ..."; a sys.exit() or os._exit() said as what it is, since a
    world model may not end awbench's process."""
    if isinstance(error, SystemExit):
        called = "os._exit" if isinstance(error, OsExitCalled) else "sys.exit"
        return f"called {called}({error.code!r}): a world model may not end awbench's process"
    return f"raised {_what(error)}"


async def _caught(call: Callable[[], Awaitable[Any]]) -> Outcome:
    """An async call's outcome, whatever it raises; a CancelledError leaves the task cancelled (by the run, which
    stops, or by the model's own code, which `_awaited` tells apart)."""
    try:
        with _model_code():  # this task's own context
            return await call(), None
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # sys.exit, GeneratorExit, KeyboardInterrupt: the run decides
        return None, error


class _Threads:
    """A plain predict's threads: at most `count`, started as calls come while none is idle, as a
    ThreadPoolExecutor's. Daemons, unlike those (which the interpreter joins when it exits): a predict that never
    returns does not keep awbench's process alive after Ctrl-C."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._started = 0
        self._idle = threading.Semaphore(0)
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.Future[Outcome]] | None] = queue.SimpleQueue()

    def submit(self, call: Callable[[], Any]) -> asyncio.Future[Outcome]:
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        if not self._idle.acquire(blocking=False) and self._started < self._count:
            name = f"awbench-world-model-{self._started + 1}"
            try:
                threading.Thread(target=self._serve, name=name, daemon=True).start()
            except RuntimeError as error:  # threads cannot start (the model's code set sys.excepthook = None)
                future.set_result((None, error))
                return future
            self._started += 1
        self._calls.put((call, future))
        return future

    def shutdown(self) -> None:
        """Each thread ends after its call in progress; one that never returns is left to the process's end."""
        for _ in range(self._started):
            self._calls.put(None)

    def _serve(self) -> None:
        _IN_MODEL_CODE.set(True)  # this thread's own context: it runs nothing but the model's code
        while (job := self._calls.get()) is not None:
            call, future = job
            try:
                outcome: Outcome = (call(), None)
            except BaseException as error:  # sys.exit, GeneratorExit, KeyboardInterrupt: the run decides
                outcome = (None, error)
            try:
                future.get_loop().call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the run's loop is closed: nobody waits for this call any more
                pass
            self._idle.release()


def _settle(future: asyncio.Future[Outcome], outcome: Outcome) -> None:
    if not future.cancelled():
        future.set_result(outcome)


async def _awaited(future: asyncio.Future[Outcome], timeout: float | None = None) -> Outcome | None:
    """The call's outcome (None when it has not come within `timeout`). When the run stops meanwhile (Ctrl-C, an
    error elsewhere), or the time is up, a call on the event loop is cancelled; one in a thread is left to end on
    its own. A call that was cancelled without that (an async predict raising CancelledError) raised it."""
    try:
        done, _ = await asyncio.wait({future}, timeout=timeout)
    finally:
        future.cancel()
    if not done:
        return None
    return (None, asyncio.CancelledError()) if future.cancelled() else future.result()


class PythonModelBackend(BackendBase):
    def __init__(self, predict: Callable[..., Any], settings: ModelSettings, instance: Any = None) -> None:
        self.predict = predict
        self.settings = settings
        self.instance = instance  # the class's object, closed with the backend when it has close or aclose
        self.is_async = inspect.iscoroutinefunction(predict)
        # A plain predict blocks: it runs in threads, so that saving and judging go on meanwhile.
        self._threads = None if self.is_async else _Threads(settings.concurrency)

    async def _one(self, request: GenerationRequest) -> Generation:
        call = functools.partial(
            self.predict,
            request.messages,
            sample=world_model_sample(request.sample),
            seed=request.seed,
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
        )
        started = time.perf_counter()
        outcome = await _awaited(self._started(call))
        assert outcome is not None  # no timeout: a predict takes as long as it takes
        text, error = outcome
        if isinstance(error, KeyboardInterrupt):
            raise error  # stops the run, as Ctrl-C does
        if error is not None:
            return self._failed(request, f"predict {_did(error)}", started)
        if not isinstance(text, str):
            return self._failed(request, f"predict returned {type(text).__name__}, not str", started)
        return Generation(
            key=request.key,
            generation=request.generation,
            text=text,
            finish_reason="stop",
            latency_s=time.perf_counter() - started,
        )

    def _started(self, call: Callable[[], Any]) -> asyncio.Future[Outcome]:
        return asyncio.ensure_future(_caught(call)) if self._threads is None else self._threads.submit(call)

    @staticmethod
    def _failed(request: GenerationRequest, error: str, started: float) -> Generation:
        return Generation(
            key=request.key, generation=request.generation, error=error, latency_s=time.perf_counter() - started
        )

    def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        return in_prefix_order(
            requests, lambda request, _: self._one(request), generation_place, self.settings.concurrency, CANDIDATE_WAIT
        )

    async def aclose(self) -> None:
        """The end of the run: the predict threads told to stop, then the object's `aclose()` awaited, else its
        `close()` called in a thread of its own (once: the object is forgotten), so that a model holding a process,
        a file or a connection lets it go. What either raises, or one that does not return within CLOSE_TIMEOUT_S,
        is WorldModelError (a warning: the run goes on without it)."""
        if self._threads is not None:
            self._threads.shutdown()
        instance, self.instance = self.instance, None
        closing = next((name for name in ("aclose", "close") if callable(getattr(instance, name, None))), None)
        if closing is None:
            return
        call = getattr(instance, closing)
        future: asyncio.Future[Outcome]
        if closing == "aclose":
            future = asyncio.ensure_future(_caught(call))
        else:
            thread = _Threads(1)
            future = thread.submit(call)
            thread.shutdown()
        outcome = await _awaited(future, CLOSE_TIMEOUT_S)
        if outcome is None:
            raise WorldModelError(f"{self.settings.model}: {closing}() did not return within {CLOSE_TIMEOUT_S:g} s")
        if outcome[1] is not None:  # said by the run, after its records and scores are kept
            raise WorldModelError(f"{self.settings.model}: {closing}() {_did(outcome[1])}")


def preflight(settings: ModelSettings) -> None:
    check(settings)


def describe(settings: ModelSettings) -> dict[str, Any]:
    return find(settings.model).describe()


def create(settings: ModelSettings, endpoints: Any = None) -> PythonModelBackend:
    found = check(settings)
    if not found.is_class:
        return PythonModelBackend(found.target, settings)
    try:
        with _model_code():
            instance = found.target(**settings.model_args)
    except (Exception, SystemExit) as error:
        raise WorldModelError(f"{settings.model}: {found.target.__name__}(...) {_did(error)}") from None
    return PythonModelBackend(instance.predict, settings, instance)
