"""A real multi-node Ray cluster on this machine, inside a network namespace that holds only loopback.

Ray rewrites 127.0.0.1 to the host's routable address, and here only loopback traffic is allowed
(``../shared/research/ray.md``), so every Ray process of a test or benchmark runs inside a
namespace of its own: :class:`LoopbackCluster` starts ``unshare --net --pid --mount-proc`` (as
root) around a holder process, brings ``lo`` up there, and starts the head and each worker node
as a separate ``ray start`` inside it (:meth:`LoopbackCluster.run` enters it with ``nsenter``).
The namespace has no other interface and no route, so no Ray traffic can reach another address;
every listener is on 127.0.0.1. The PID namespace makes the teardown total: killing the holder
(the one process this kit started outside) kills every process of the cluster, Ray's and the
sandboxes'. Each cluster has its own ``--temp-dir``, and every driver gets an explicit address.

Used by ``tests/integration/executors/test_ray_cluster.py`` and ``bench/distributed_bench.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

HEAD_PORT = 6390
#: Per-node port block (each node on this one host needs its own agent ports).
_PORT_BASE = 20000
_PORTS_PER_NODE = 10


def ray_missing() -> str | None:
    """Why a Ray cluster cannot be started here (``None``: it can)."""
    if os.geteuid() != 0:
        return "a loopback-only network namespace needs root (unshare -n)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"{tool} is not installed"
    done = subprocess.run([sys.executable, "-c", "import ray"], capture_output=True, check=False)
    if done.returncode != 0:
        return "ray is not installed (pip install 'wfbench[ray]')"
    return None


class LoopbackCluster:
    """A head (no slots) and ``workers`` worker nodes with ``slots`` wfbench slots each."""

    def __init__(self, root: Path, *, workers: int = 2, slots: int = 2, env: Mapping[str, str] | None = None):
        self.root = root
        self.workers = workers
        self.slots = slots
        self.temp_dir = root / "ray-tmp"
        # The nodes' own temporary directories (``wfbench-node-*``): a node killed with its raylet
        # cannot remove them, so they go to a short directory of the cluster's that stop() removes.
        self.tmp = tempfile.mkdtemp(prefix="wfray-", dir="/tmp")  # noqa: S108 - short UNIX socket paths
        self.env = {**os.environ, "TMPDIR": self.tmp, **(env or {}), "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self._holder: subprocess.Popen[bytes] | None = None
        self.init_pid: int | None = None
        self.node_raylets: list[int] = []
        self.started_s: dict[str, float] = {}

    @property
    def address(self) -> str:
        """The head's GCS address, as every driver must name it."""
        return f"127.0.0.1:{HEAD_PORT}"

    # --- the namespace --------------------------------------------------------------------

    def open_namespace(self) -> None:
        """Create the loopback-only network + PID namespace and its holder process."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.temp_dir.mkdir(exist_ok=True)
        holder = "ip link set lo up && echo ready && exec sleep 100000"
        self._holder = subprocess.Popen(
            [
                "unshare",
                "--net",
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "--",
                "/bin/sh",
                "-c",
                holder,
            ],
            stdout=subprocess.PIPE,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            start_new_session=True,
        )
        assert self._holder.stdout is not None
        line = self._holder.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the namespace did not come up: {line!r}")
        children = Path(f"/proc/{self._holder.pid}/task/{self._holder.pid}/children").read_text().split()
        self.init_pid = int(children[0])
        links = self.run(["ip", "-o", "link"], capture=True).stdout
        if [line.split(":")[1].strip() for line in links.splitlines()] != ["lo"]:
            raise RuntimeError(f"the namespace holds more than loopback: {links}")

    def run(
        self,
        argv: Sequence[str],
        *,
        capture: bool = False,
        check: bool = True,
        timeout: float = 600.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the namespace and wait for it."""
        return subprocess.run(
            self.inside(argv),
            capture_output=capture,
            text=True,
            check=check,
            timeout=timeout,
            env=dict(env or self.env),
            cwd=cwd,
        )

    def inside(self, argv: Sequence[str]) -> list[str]:
        """``argv`` prefixed to run inside the namespace."""
        assert self.init_pid is not None, "open_namespace() first"
        return ["nsenter", "-t", str(self.init_pid), "-n", "-p", "-m", "--", *argv]

    def popen(self, argv: Sequence[str], **kwargs: object) -> subprocess.Popen[str]:
        """Start ``argv`` inside the namespace (``nsenter`` forks it; see :meth:`child_of`)."""
        kwargs.setdefault("env", dict(self.env))
        return subprocess.Popen(self.inside(argv), text=True, **kwargs)  # type: ignore[call-overload]

    @staticmethod
    def child_of(proc: subprocess.Popen[str], timeout: float = 30.0) -> int:
        """The host pid of the command ``nsenter`` forked for ``proc`` (to signal it directly)."""
        deadline = time.monotonic() + timeout
        path = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                children = path.read_text().split()
                if children:
                    return int(children[0])
            time.sleep(0.05)
        raise RuntimeError("nsenter forked no child")

    def processes(self) -> list[tuple[int, str]]:
        """Every live process in the namespace but its holder: (host pid, command line).

        A zombie is not listed: it has ended (no memory, no files, no cmdline), only its exit
        status waits for its parent, and a parent that is still alive is listed itself.
        """
        assert self.init_pid is not None
        mine = os.readlink(f"/proc/{self.init_pid}/ns/pid")
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == self.init_pid:
                continue
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/pid") != mine:
                    continue
                if Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
                found.append((int(entry), raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()))
        return found

    # --- the cluster ----------------------------------------------------------------------

    def _ray(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "ray.scripts.scripts", "start", *args]

    def _ports(self, index: int) -> list[str]:
        base = _PORT_BASE + index * _PORTS_PER_NODE
        return [
            f"--node-manager-port={base}",
            f"--object-manager-port={base + 1}",
            f"--dashboard-agent-listen-port={base + 2}",
            f"--dashboard-agent-grpc-port={base + 3}",
            f"--runtime-env-agent-port={base + 4}",
            f"--metrics-export-port={base + 5}",
            f"--min-worker-port={base + 100 + index * 200}",
            f"--max-worker-port={base + 299 + index * 200}",
        ]

    def start(self) -> None:
        """The namespace, the head (no slots), then each worker node; raises if any fails."""
        self.open_namespace()
        began = time.monotonic()
        self.run(
            self._ray(
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={HEAD_PORT}",
                "--num-cpus=0",
                f"--temp-dir={self.temp_dir}",
                "--include-dashboard=false",
                "--disable-usage-stats",
                *self._ports(0),
            ),
            capture=True,
        )
        self.started_s["head"] = time.monotonic() - began
        for index in range(1, self.workers + 1):
            self.add_worker(index)

    def add_worker(self, index: int, *, env: Mapping[str, str] | None = None) -> int:
        """Start worker node ``index`` (1-based), ``env`` added to its environment; its raylet's pid."""
        before = set(self.raylets())
        began = time.monotonic()
        self.run(
            self._ray(
                f"--address={self.address}",
                "--node-ip-address=127.0.0.1",
                f"--num-cpus={self.slots}",
                f"--resources={json.dumps({'wfbench_slot': self.slots})}",
                "--disable-usage-stats",
                *self._ports(index),
            ),
            capture=True,
            env={**self.env, **(env or {})},
        )
        self.started_s[f"worker{index}"] = time.monotonic() - began
        new = sorted(set(self.raylets()) - before)
        if len(new) != 1:
            raise RuntimeError(f"expected one new raylet for worker {index}, found {new}")
        self.node_raylets.append(new[0])
        return new[0]

    def node_id(self, raylet: int) -> str:
        """The Ray node id of the node whose raylet is ``raylet`` (from its command line)."""
        for arg in Path(f"/proc/{raylet}/cmdline").read_bytes().split(b"\0"):
            if arg.startswith(b"--node_id="):
                return arg.split(b"=", 1)[1].decode()
        raise RuntimeError(f"raylet {raylet} names no --node_id")

    def busy_workers(self, raylet: int) -> int:
        """How many of ``raylet``'s task workers have a bwrap process below them (cells running there)."""
        parents: dict[int, int] = {}
        commands: dict[int, str] = {}
        for pid, cmd in self.processes():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{pid}/stat").read_text()
                parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
                commands[pid] = cmd
        busy = set()
        for pid, cmd in commands.items():
            if os.path.basename(cmd.split(" ", 1)[0]) != "bwrap":
                continue
            chain = [pid]
            while chain[-1] in parents and parents[chain[-1]] not in (raylet, 0, 1):
                chain.append(parents[chain[-1]])
            if parents.get(chain[-1]) == raylet:
                busy.add(chain[-1])
        return len(busy)

    def raylets(self) -> list[int]:
        """Host pids of every raylet in the namespace."""
        return [
            pid for pid, cmd in self.processes() if "/raylet/raylet " in f"{cmd} " and "--head" not in cmd
        ]

    def kill_raylet(self, worker: int) -> int:
        """SIGKILL worker node ``worker``'s raylet (1-based); its pid."""
        pid = self.node_raylets[worker - 1]
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_slots(self, slots: int, timeout: float = 180.0) -> None:
        """Wait until the cluster offers ``slots`` wfbench slots in all."""
        probe = (
            "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False);"
            "print(int(ray.cluster_resources().get('wfbench_slot', 0)))"
        )
        deadline = time.monotonic() + timeout
        while True:
            done = self.run([sys.executable, "-c", probe, self.address], capture=True, check=False)
            if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(slots)]:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the cluster never offered {slots} slots: {done.stdout} {done.stderr[-500:]}"
                )
            time.sleep(1.0)

    def stop(self) -> None:
        """Kill the namespace's holder: the kernel ends every process left inside; then drop the
        (now empty) command cgroups the namespace's sandboxes left (only it could judge them stale)."""
        namespace = None
        if self.init_pid is not None:
            with contextlib.suppress(OSError):
                namespace = os.stat(f"/proc/{self.init_pid}/ns/pid").st_ino
        if self._holder is not None and self._holder.poll() is None:
            os.kill(self._holder.pid, signal.SIGKILL)
            self._holder.wait(timeout=30)
        self._holder = None
        if namespace is not None:
            _remove_groups_of(namespace)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _remove_groups_of(namespace: int) -> None:
    """rmdir every wfbench pids/memory group a process of PID namespace ``namespace`` created."""
    from wfbench.adapters.sandbox import memory_cgroup, pids_cgroup

    for detect, error in (
        (pids_cgroup.detect, pids_cgroup.PidsUnavailable),
        (memory_cgroup.detect, memory_cgroup.MemoryUnavailable),
    ):
        try:
            parent = detect().parent
        except (error, OSError):
            continue
        for name in os.listdir(parent):
            if f"-n{namespace}-" in name:
                pids_cgroup.remove_group(os.path.join(parent, name), wait_s=2.0)


@contextlib.contextmanager
def loopback_cluster(root: Path, **kwargs: object) -> Iterator[LoopbackCluster]:
    """A started :class:`LoopbackCluster`, stopped however the block ends."""
    cluster = LoopbackCluster(root, **kwargs)  # type: ignore[arg-type]
    try:
        cluster.start()
        cluster.wait_slots(cluster.workers * cluster.slots)
        yield cluster
    finally:
        cluster.stop()
