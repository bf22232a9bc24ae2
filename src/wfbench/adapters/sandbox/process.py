"""Managed processes: own the whole process group, bound the output, kill on timeout or cancel.

Every command wfbench starts (agent sessions, verify, oracle, git inside the sandbox) goes
through :func:`run_managed`. The child gets a new session (pgid = pid), so the harness can end
the whole group, and only that group, by its id: SIGTERM first, SIGKILL after ``grace_s``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import ExecResult, ProcessState

TAIL_BYTES = 64 * 1024
_POLL_S = 0.02
#: How often a running command's wait looks at its cancel token (its end is seen at once).
_CANCEL_TICK_S = 0.1
#: Process groups :func:`run_managed` started that have not ended yet (their pgid = the leader's pid),
#: for :func:`kill_live_groups` (a second Ctrl-C force-quits the whole sweep).
_LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()


def live_groups() -> tuple[int, ...]:
    """The process groups started by :func:`run_managed` that are still running."""
    with _LIVE_LOCK:
        return tuple(sorted(_LIVE))


def kill_live_groups() -> int:
    """SIGKILL every live group :func:`run_managed` started (any thread's); how many were signalled."""
    groups = live_groups()
    for pgid in groups:
        _signal_group(pgid, signal.SIGKILL)
    return len(groups)


class _Drain(threading.Thread):
    """Reads a pipe to EOF, keeping the first ``limit`` bytes (and a tail) and an overflow flag."""

    def __init__(self, pipe: object, limit: int) -> None:
        super().__init__(daemon=True)
        self._pipe = pipe
        self._limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.overflow = False

    def run(self) -> None:
        read = self._pipe.read1  # type: ignore[attr-defined]
        with contextlib.suppress(OSError, ValueError):
            while chunk := read(65536):
                room = self._limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                if len(chunk) > max(room, 0):
                    self.overflow = True
                self.tail += chunk
                if len(self.tail) > TAIL_BYTES:
                    del self.tail[: len(self.tail) - TAIL_BYTES]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _end_group(proc: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM the group, SIGKILL it after ``grace_s``. Returns True if SIGKILL was needed."""
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader so a zombie does not keep the group "alive"
        if not _group_alive(pgid):
            return False
        time.sleep(_POLL_S)
    _signal_group(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=max(1.0, grace_s))
    return True


def run_managed(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout_s: float,
    cwd: str | None = None,
    stdin: bytes | None = None,
    cancel: CancelToken | None = None,
    stdout_limit: int = 8 * 1024 * 1024,
    grace_s: float = 5.0,
    preexec: Callable[[], None] | None = None,
) -> ExecResult:
    """Run ``argv`` in its own process group and return once the whole group is gone.

    A descendant that outlives the leader is killed and the result is ``forced-kill``: a tree
    that leaves processes behind is never ``ok``. ``preexec`` runs in the child between fork and
    exec (keep it to a few system calls: the parent may have threads); if it raises, the result
    is ``spawn-failure``.
    """
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    started = time.monotonic()
    if cancel is not None and cancel.is_set():
        return ExecResult(ProcessState.CANCELLED, None, b"", b"", 0.0, detail="cancelled before start")
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            preexec_fn=preexec,  # noqa: PLW1509 - callers pass a single system call (no locks, gc is off)
        )
    except OSError as exc:
        return ExecResult(
            ProcessState.SPAWN_FAILURE, None, b"", b"", 0.0, detail=f"cannot start {argv[0]}: {exc.strerror}"
        )
    except subprocess.SubprocessError as exc:  # preexec raised in the child
        detail = f"cannot start {argv[0]}: {exc}"
        return ExecResult(ProcessState.SPAWN_FAILURE, None, b"", b"", 0.0, detail=detail)
    with _LIVE_LOCK:
        _LIVE.add(proc.pid)
    try:
        return _supervise(
            proc,
            stdin=stdin,
            timeout_s=timeout_s,
            cancel=cancel,
            limit=stdout_limit,
            grace_s=grace_s,
            started=started,
        )
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc.pid)


def _supervise(
    proc: subprocess.Popen[bytes],
    *,
    stdin: bytes | None,
    timeout_s: float,
    cancel: CancelToken | None,
    limit: int,
    grace_s: float,
    started: float,
) -> ExecResult:
    """Drain, feed and wait for ``proc`` (see :func:`run_managed`)."""
    out = _Drain(proc.stdout, limit)
    err = _Drain(proc.stderr, TAIL_BYTES)
    out.start()
    err.start()
    input_error = ""
    if stdin is not None:
        input_error = _feed(proc, stdin)
    try:
        state, forced, timed_out = _wait(proc, timeout_s=timeout_s, cancel=cancel, grace_s=grace_s)
    except BaseException:
        _signal_group(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        raise
    detail = ""
    if state is ProcessState.EXITED and _group_alive(proc.pid):
        _signal_group(proc.pid, signal.SIGKILL)
        state, forced, detail = ProcessState.FORCED_KILL, True, "descendants outlived the process"
    for reader in (out, err):
        reader.join(1.0)
    if out.is_alive() or err.is_alive():
        _signal_group(proc.pid, signal.SIGKILL)
        for reader in (out, err):
            reader.join(max(1.0, grace_s))
        if out.is_alive() or err.is_alive():
            state, detail = ProcessState.REAP_FAILURE, "output pipes remained open after tree termination"
        elif state is ProcessState.EXITED:
            state, forced, detail = ProcessState.FORCED_KILL, True, "a descendant held the output pipes"
    if state is ProcessState.EXITED and input_error:
        state, detail = ProcessState.INPUT_FAILURE, input_error
    return ExecResult(
        state=state,
        returncode=proc.returncode,
        stdout=bytes(out.head),
        stderr_tail=bytes(err.tail),
        duration_s=round(time.monotonic() - started, 3),
        stdout_overflow=out.overflow,
        timed_out=timed_out,
        forced_kill=forced,
        detail=detail,
    )


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> str:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError) as exc:
        return f"stdin: {exc}"
    return ""


def _wait(
    proc: subprocess.Popen[bytes], *, timeout_s: float, cancel: CancelToken | None, grace_s: float
) -> tuple[ProcessState, bool, bool]:
    """Wait for the leader; returns (state, SIGKILL needed, timed out).

    The leader's end is noticed the moment it happens (its pidfd becomes readable), not at the
    next tick of a poll: a 20 ms command used to be seen up to 100 ms late. The tick only bounds
    how soon a cancellation is seen.
    """
    deadline = time.monotonic() + timeout_s
    with _exit_watch(proc) as exited:
        while True:
            tick = min(_CANCEL_TICK_S, max(0.0, deadline - time.monotonic()))
            if exited(tick):
                return ProcessState.EXITED, False, False
            if cancel is not None and cancel.is_set():
                return ProcessState.CANCELLED, _end_group(proc, grace_s), False
            if time.monotonic() >= deadline:
                forced = _end_group(proc, grace_s)
                return (ProcessState.FORCED_KILL if forced else ProcessState.TIMEOUT), forced, True


@contextlib.contextmanager
def _exit_watch(proc: subprocess.Popen[bytes]) -> Iterator[Callable[[float], bool]]:
    """``exited(seconds)``: waits up to ``seconds`` for the leader to end; True (reaped) once it has.

    A pidfd (Linux ≥ 5.3) wakes the wait at the leader's exit; without one, ``Popen.wait`` with a
    timeout is the fallback (it sleeps in short, growing steps).
    """
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here (old kernel, not Linux)
        pidfd = None
    if pidfd is None:

        def polled(seconds: float) -> bool:
            try:
                proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                return False
            return True

        yield polled
        return
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)

    def watched(seconds: float) -> bool:
        if poller.poll(seconds * 1000) or proc.poll() is not None:
            proc.wait()
            return True
        return False

    try:
        yield watched
    finally:
        os.close(pidfd)
