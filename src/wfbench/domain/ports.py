"""The ports: everything the domain and the use cases need from the outside world.

Adapters implement these Protocols; use cases receive them as keyword-only arguments and never
build them. Failures of the agent or of a sandboxed command are values; failures of the harness
raise the :mod:`wfbench.domain.errors` named in each docstring.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from wfbench.domain.environment.capture import CapturedWorkdir, CaptureRequest
from wfbench.domain.environment.spec import BuiltEnvironment, EnvironmentSpec
from wfbench.domain.metering.evidence import Spend
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.metering.wire import WireMeter
from wfbench.domain.promotion.skill_swap import CommitSpec, SwapOutcome
from wfbench.domain.results.rows import Row
from wfbench.domain.results.spend import Spend as SweepSpend
from wfbench.domain.session.records import SessionRecord, SessionRequest, Usage
from wfbench.domain.sweep.live import SweepState
from wfbench.domain.sweep.manifest import RunManifest
from wfbench.domain.sweep.scheduling import Cell, CellFinished
from wfbench.domain.workspace.oracle import OracleBundle, OracleFileSpec, OracleLimits
from wfbench.domain.workspace.rules import Churn, Patch, Snapshot, WorkspaceState
from wfbench.domain.workspace.sandbox import Bridge, ExecResult, SandboxPolicy


class CancelToken(Protocol):
    """Cooperative cancellation (a ``threading.Event`` satisfies it)."""

    def is_set(self) -> bool:
        """True once cancellation was requested."""
        ...

    def wait(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds; True if cancellation was requested."""
        ...


class Sandbox(Protocol):
    """Runs one command over a cell's workspace under a declared policy."""

    name: str

    def preflight(self) -> None:
        """Prove the backend can start a trivial command.

        Raises:
            SandboxUnavailable: the backend cannot run here (never fall back to the host).
        """
        ...

    def workspace_path(self, policy: SandboxPolicy) -> str:
        """The path at which the command sees the workspace (``/workspace`` under bwrap)."""
        ...

    def mount_path(self, mount_target: str, policy: SandboxPolicy) -> str:
        """The path at which the command sees a mount declared with ``target=mount_target``."""
        ...

    def run(
        self,
        argv: Sequence[str],
        *,
        policy: SandboxPolicy,
        stdin: bytes | None = None,
        cancel: CancelToken | None = None,
    ) -> ExecResult:
        """Run ``argv`` to completion, timeout or cancellation; the whole process tree is gone on return.

        Raises:
            SandboxError: the sandbox itself could not be set up for this command.
        """
        ...


class ModelCLI(Protocol):
    """Runs one headless agent session inside a sandbox and returns its parsed record."""

    def run_session(
        self,
        request: SessionRequest,
        *,
        sandbox: Sandbox,
        policy: SandboxPolicy,
        cancel: CancelToken | None = None,
    ) -> SessionRecord:
        """Run the session. Agent failures (HTTP errors, bad streams, timeouts) are in the record.

        Raises:
            SandboxError: the sandbox could not start the agent at all.
        """
        ...


class ModelLease(Protocol):
    """One cell's way to the model endpoint: a bridge, a dummy token, and the wire meter of the cell.

    The agent reaches ``bridge.url`` (through ``SandboxPolicy.bridges``) and presents ``token``;
    every request is attributed to this cell and metered at the wire, outside the sandbox.
    """

    bridge: Bridge | None
    token: str
    #: The prices of the lease's model (``None``: unpriced; the cell's cost is then unknown, never 0).
    prices: ModelPrices | None

    def meter(self, *, settle_s: float = 0.0) -> WireMeter:
        """What was measured of this cell so far (waiting up to ``settle_s`` for requests in flight)."""
        ...

    def close(self) -> None:
        """End the lease: its bridge stops serving and its socket is removed (idempotent)."""
        ...


class ModelGateway(Protocol):
    """Where agent sessions reach the model: one metered lease per cell, and the sweep's spend."""

    def lease(self, label: str, *, model: str | None = None, scratch: str | None = None) -> ModelLease:
        """A new lease for the cell ``label`` whose requests must name ``model`` (None: the sweep's).

        ``scratch`` is the cell's own scratch directory: the lease's socket goes there when the
        path fits a UNIX socket (else under the temporary directory, named with its owner's pid
        and PID namespace).

        Raises:
            SandboxError: the lease's socket cannot be created.
        """
        ...

    def spend(self) -> Spend:
        """The metered spend of every lease so far, against the budget."""
        ...


class Clock(Protocol):
    """Wall and monotonic time; the only way time enters the domain and the use cases."""

    def now(self) -> dt.datetime:
        """The current UTC time (timezone-aware)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic clock, for durations."""
        ...


class SweepDirectory(Protocol):
    """Every file of a sweep's directory besides its rows, by path relative to the directory.

    What app code writes through it: the cells' artifacts (``cells/…``: transcripts, review
    output, oracle evidence), the reports (``report.md``, ``report.html``), the evidence
    (``promotion.json``), the rows' companion files (``concurrency.json``) and an evolution's
    journal and run file. Every write is durable and whole (unique temporary, fsync, rename,
    fsync of the directory): a reader sees the old bytes or the new ones. The claim of the
    directory and its run manifest are the :class:`ClaimableSweepDirectory`'s.
    """

    def write(self, rel: str, data: bytes) -> None:
        """Replace ``rel`` (``/``-separated, relative, no ``..``) with ``data``, durably.

        Missing parent directories are made (mode 0700).

        Raises:
            ValueError: ``rel`` is absolute, empty or leaves the directory.
            SweepStorageError: the directory refuses writes (full, over quota, read-only, failing).
            OSError: the file could not be written; its previous content is intact.
        """
        ...

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel``, or ``None`` when there is no such file.

        Raises:
            ValueError: ``rel`` is absolute, empty or leaves the directory.
        """
        ...


class ClaimableSweepDirectory(SweepDirectory, Protocol):
    """A sweep directory the run use case (:func:`wfbench.app.sweep.run.claimed_sweep`) owns for one sweep.

    Beyond its files: the claim (the lock, a resume's repairs, the move of cancelled rows) and the
    run manifest. A directory that only carries files (a Ray node's, an evolution's) need not be one.
    """

    def claim(self, *, resume: bool, note: Callable[[str], None]) -> AbstractContextManager[SweepClaim]:
        """Hold the directory (made when missing) for one sweep until the block ends.

        No other sweep can claim it meanwhile. A fresh sweep refuses a directory that already
        holds rows. A resume repairs what an interruption left (a torn last row, partial files)
        and sets the rows a cancellation made aside (``results.cancelled.jsonl``), so their cells
        run again; each repair is told to ``note``. When the block raises before
        :meth:`SweepClaim.started`, what the run created in the directory is removed again.

        Raises:
            InputError: another sweep holds the directory; a fresh sweep would append to rows
                already there; a resumed ``results.jsonl`` repeats a cell or has an invalid line;
                the directory cannot be used.
        """
        ...

    def write_manifest(self, manifest: RunManifest) -> None:
        """Replace ``manifest.json`` with ``manifest``, durably (as :meth:`write`).

        Raises:
            SweepStorageError: the directory refuses writes.
            OSError: the file could not be written; its previous content is intact.
        """
        ...


class SweepClaim(Protocol):
    """A sweep's hold on its directory (:meth:`ClaimableSweepDirectory.claim`)."""

    def started(self) -> None:
        """The sweep is under way (its manifest is written): a later failure keeps what it wrote."""
        ...


class ResultStore(Protocol):
    """Append-only storage of rows; a row is either wholly there or not at all."""

    def append(self, row: Row) -> None:
        """Persist one row durably (flushed and fsynced) before returning.

        Raises:
            SweepStorageError: the storage refuses writes (full, over quota, read-only, failing);
                rows already written are intact.
            OSError: the row could not be written; rows already written are intact.
        """
        ...

    def rows(self) -> tuple[Row, ...]:
        """Every row, in the order appended.

        Raises:
            InputError: a stored line is torn or invalid (names the file and line).
        """
        ...


class Workspaces(Protocol):
    """Sanitized snapshots, private per-cell copies, evidence of change, hidden-oracle staging.

    Everything the agent may have touched is read without trusting it (private GIT_DIR, no
    hooks, no symlink following). Harness failures raise ``SandboxError``; bad corpus input
    raises ``InputError`` (exit 2).
    """

    def resolve_commit(self, repo: str, ref: str) -> str:
        """Resolve ``ref`` once to a commit id. Raises InputError (field ``repo`` or ``ref``)."""
        ...

    def build_snapshot(self, repo: str, ref: str, dest: str, *, commit: str | None = None) -> Snapshot:
        """Build the parentless snapshot of the commit at ``dest`` (must not exist).

        Raises:
            InputError: the repository or ref is bad (when ``commit`` is not given).
            SandboxError: git failed.
        """
        ...

    def private_copy(self, snapshot: Snapshot, dest: str, *, cancel: CancelToken | None = None) -> str:
        """Copy the snapshot to a new ``dest`` sharing nothing writable. Raises SandboxError."""
        ...

    def remove_tree(self, path: str) -> str | None:
        """Remove a tree (write bits restored first); the failure reason or None. Never raises."""
        ...

    def state(self, workspace: str) -> WorkspaceState:
        """Fingerprints of the workspace's entries (``.git`` excluded), for phase-boundary checks."""
        ...

    def disk_usage(self, workspace: str) -> int:
        """Bytes the workspace occupies on disk (allocated blocks, ``.git`` included). Never follows links."""
        ...

    def ignored(self, snapshot: Snapshot, paths: Sequence[str]) -> frozenset[str]:
        """Which of ``paths`` (relative; directories end in ``/``) the base commit's ignore rules ignore."""
        ...

    def churn(self, workspace: str, snapshot: Snapshot, *, base_commit: str | None = None) -> Churn:
        """Churn against ``base_commit`` (default the snapshot's), untracked files included."""
        ...

    def capture_patch(
        self, workspace: str, snapshot: Snapshot, limit_bytes: int, *, base_commit: str | None = None
    ) -> Patch:
        """The binary diff against the base, cut at ``limit_bytes``. Raises SandboxError."""
        ...

    def capture_oracle(
        self,
        corpus_dir: str,
        files: Sequence[OracleFileSpec],
        limits: OracleLimits | None = None,
        *,
        task_id: str = "",
        source: str = "",
    ) -> OracleBundle:
        """Read oracle files into memory with digests. Raises InputError naming task and path."""
        ...

    def stage_oracle(self, bundle: OracleBundle, dest: str) -> str:
        """Write the bundle read-only under a new ``dest`` (after the agent exited). Raises SandboxError."""
        ...

    def erase_oracle(self, bundle: OracleBundle, stage: str) -> bool:
        """Remove the stage; True if its bytes were intact. Raises SandboxError if removal fails."""
        ...


class Environments(Protocol):
    """Task environments: built once per digest inside the sandbox, cached, mounted read-only in cells.

    Raises ``SandboxError`` when a build fails (with the tail of its log) and ``InputError`` when
    the spec names an interpreter that cannot be used.
    """

    def ensure(
        self,
        spec: EnvironmentSpec,
        *,
        snapshot: Snapshot,
        task_env: Mapping[str, str],
        cancel: CancelToken | None = None,
    ) -> BuiltEnvironment:
        """The environment of ``spec`` for ``snapshot``: from the cache when its digest was built."""


class ImageWorkdirs(Protocol):
    """Build a task's image and capture its working directory as a git repository (the Harbor import).

    Used by ``wfbench tasks import harbor`` only, before any sweep: a Harbor task's starting state is
    its image's working directory as built.
    """

    def capture(self, request: CaptureRequest, dest: str) -> CapturedWorkdir:
        """Build (or reuse) the image and commit its working directory, once, as a repository at ``dest``.

        Raises:
            InputError: the image does not build, or has no such working directory.
            SandboxUnavailable: no container runtime can run here.
        """
        ...


class SkillTarget(Protocol):
    """The repository a promoted overlay is applied to (``wfbench promote apply``)."""

    def committed(self, roots: Sequence[str], paths: Sequence[str]) -> Mapping[str, bytes | None]:
        """The committed (``HEAD``) bytes of every file under ``roots`` and of each of ``paths``.

        A path not committed maps to ``None``.

        Raises:
            InputError: the target has no commit, or a bound path is committed as a non-file.
        """
        ...

    def current(self, paths: Sequence[str]) -> Mapping[str, str]:
        """The sha256 of what each path holds in the working tree now (``absent`` when missing).

        Raises:
            InputError: a path or one of its parents is a symlink or a special file.
        """
        ...

    def swap(
        self,
        writes: Sequence[tuple[str, bytes]],
        expected: Mapping[str, str],
        *,
        message: str,
        commit: CommitSpec | None = None,
    ) -> SwapOutcome:
        """Write every ``(path, bytes)`` in one all-or-nothing, crash-safe transaction.

        Every path of ``expected`` (``target_base_digests``) must still hold its recorded digest
        (compare-and-swap); an interrupted earlier transaction is finished first.

        Raises:
            InputError: a compare-and-swap conflict, an unsafe destination, a bad commit request
                (nothing was changed).
            WfbenchError: the transaction failed and was rolled back.
        """
        ...

    def applied_at_head(self, evidence_sha256: str) -> tuple[str, tuple[str, ...]] | None:
        """``HEAD``'s id and listed files when it is the commit of an apply of this evidence, else None."""
        ...

    def commit_written(self, commit: CommitSpec, paths: Sequence[str]) -> str:
        """Commit ``paths`` as the working tree holds them (an apply's files a crash left uncommitted).

        An existing ``commit.branch`` that points at ``HEAD``'s commit (the one it would be created
        from) or at exactly the commit this makes (a crash after the branch, before ``HEAD`` moved)
        is that apply's unfinished work and is finished; any other existing branch is refused.

        Raises:
            InputError: a bad branch name, a branch holding other commits, a detached HEAD without
                a branch.
        """
        ...


class CellExecutor(Protocol):
    """Runs the cells of a sweep somewhere: threads of this process (``app/sweep/thread_executor.py``,
    the default) or the nodes of a cluster (``adapters/executors/ray_executor.py``).

    The driver keeps the fold, the breaker and every row: an executor runs cells and reports
    them finished, and never persists anything. Every submitted cell is reported exactly once,
    with its row, or with ``row=None`` when it never started (cancelled while queued). A cell
    that failed in the executor (its worker or node died) is reported with a row that says so
    (``infra-error``), never dropped. A cell the driver cancelled is reported ``cancelled``.
    """

    @property
    def slots(self) -> int:
        """How many cells it runs at once (the pool's workers, the cluster's accepted slots)."""
        ...

    def submit(self, index: int, cell: Cell, delay_s: float = 0.0) -> None:
        """Queue ``cell`` (``index``: its submission position); it starts when a slot is free.

        ``delay_s`` is the fold's pacing back-off: the cell starts no sooner (a throttled
        retry). An executor that cannot delay refuses a positive ``delay_s`` (ValueError).
        """
        ...

    def wait(self, timeout: float) -> tuple[CellFinished, ...]:
        """Cells finished since the last call, in no particular order; waits up to ``timeout`` s for one."""
        ...

    def cancel(self, grace_s: float) -> None:
        """Stop every queued and running cell: cooperatively now, by force after ``grace_s``.

        Returns at once; the cells are reported through :meth:`wait` as they end.
        """
        ...

    def close(self) -> None:
        """Release the executor: cells still running are cancelled and waited for."""
        ...


class BudgetLedger(Protocol):
    """The books a key proxy keeps its sweep's spend in: one proxy's own (``SpendLedger``), or one
    ledger every node of a cluster shares (``adapters/executors/ray_ledger.py``).

    The rule is :func:`wfbench.domain.metering.evidence.admission` either way: a request's worst
    case is reserved before it goes upstream and settled to the wire's figure when it ends.
    """

    budget_usd: float | None

    def spend(self) -> Spend:
        """The metered spend so far, against the budget."""
        ...

    def check(self) -> None:
        """Refuse a new request once the committed spend reached the budget.

        Raises:
            the gateway's ``Refused`` (403 ``budget``).
        """
        ...

    def reserve(self, worst_usd: float, timeout_s: float) -> float:
        """Reserve ``worst_usd`` (waiting at most ``timeout_s`` while reservations fill the budget).

        Raises:
            the gateway's ``Refused`` (403 ``budget``): the budget is spent, the wait ran out,
                the ledger stopped or (a shared ledger) cannot be reached.
        """
        ...

    def settle(
        self, usage: Usage | None, prices: ModelPrices | None, *, release: float, billed: bool, complete: bool
    ) -> None:
        """One request is done: release its reservation, add what the wire measured."""
        ...

    def stop(self) -> None:
        """Wake every request waiting on this proxy's side (each is refused)."""
        ...


class SpendSource(Protocol):
    """Where a sweep's spend so far is read from (rows today; the wire meter when it lands)."""

    def spent(self) -> SweepSpend:
        """The spend so far."""


#: ``(path in the prior sweep, path in this sweep, sha256 or None, size or None, required)``.
ArtifactRef = tuple[str, str, str | None, int | None, bool]


class PriorResults(Protocol):
    """A prior sweep's output directory (an adapter reads it; the app never touches its files)."""

    @property
    def path(self) -> str:
        """The directory (for messages)."""

    def rows(self) -> tuple[Row, ...]:
        """Every row of its ``results.jsonl``."""

    def copy_artifacts(self, artifacts: Sequence[ArtifactRef], dest_dir: str) -> None:
        """Copy every artifact to its destination path under ``dest_dir``, all or nothing.

        An optional artifact is skipped when absent; the first present source of a destination wins.

        Raises:
            OSError, ValueError: a required file is missing or unsafe, or its bytes drifted from
                the recorded size or sha256 (nothing is left behind).
        """


class ArtifactLike(Protocol):
    """A file of the sweep as found (see ``adapters/store/sweep_dir.Artifact``)."""

    @property
    def path(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def data(self) -> bytes: ...
    @property
    def size(self) -> int | None: ...
    @property
    def detail(self) -> str | None: ...
    @property
    def readable(self) -> bool: ...
    def text(self) -> str: ...


class ArtifactSource(Protocol):
    """Reads files of the sweep directory, never raising."""

    def artifact(self, rel: str, *, limit: int) -> ArtifactLike:
        """The file ``rel``, at most ``limit`` bytes; its state says what was found."""


class SweepSource(Protocol):
    """A sweep directory, read-only (``adapters/store/sweep_dir.SweepDirectory``)."""

    def scan(self, problems: list[Any] | None = None) -> Iterator[tuple[int, Row]]:
        """Rows with their line's byte offset; bad lines appended to ``problems``."""

    def row_at(self, offset: int) -> dict[str, Any] | None:
        """The raw row whose line starts at ``offset``."""

    def json_file(self, name: str) -> tuple[Any, str]:
        """A JSON document of the sweep root and its state."""

    def artifact(self, rel: str, *, limit: int) -> ArtifactLike:
        """A file of the sweep (never raising)."""


@runtime_checkable
class LiveSweep(SweepSource, Protocol):
    """A sweep directory that may still be growing (``wfbench view`` of a running sweep)."""

    def state(self) -> SweepState:
        """Its size, whether a process still runs it, whether it is judged (never raising)."""

    def follow(self, start: int) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """The raw rows of the complete lines from byte ``start`` on, each with the offset just
        past its line (where to start next time); a torn last line is left for later, a line
        that is not a JSON object is skipped."""


class SweepCatalog(Protocol):
    """The sweeps under one directory (``wfbench view DIR`` of many sweeps)."""

    def names(self) -> tuple[str, ...]:
        """Each sweep's path relative to the directory (``/``-separated), sorted; a fresh listing."""

    def open(self, name: str) -> LiveSweep:
        """The sweep ``name`` (one :meth:`names` listed).

        Raises:
            InputError: ``name`` is not a sweep under the directory.
        """
