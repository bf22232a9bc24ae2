"""Bridge-socket directories left by a killed process, removed at the next sweep's start.

A bridge's socket lives in a fresh ``wfb-<pid>-n<pidns>-<random>`` directory (:func:`net_bridge.socket_path`)
that its owner removes when the bridge closes. A SIGKILLed sweep cannot: when the directory was in
the sweep's scratch tree, the next sweep removes it with the tree; when ``$TMPDIR`` was too deep for
a socket path, it went to one of :data:`net_bridge.SHORT_ROOTS` (``/tmp``, ``/var/tmp``,
``/dev/shm``) and stayed there. :func:`remove_stale_socket_dirs` removes those whose creator pid is
no longer running *in the creator's PID namespace*, that this user owns, and that hold nothing but
sockets (anything else is not a directory this mechanism made, and is left alone).

``/tmp`` is shared by every PID namespace of the machine (a container, the nodes of a Ray cluster
started in a namespace), and a pid means something only in its own namespace: a directory names
its creator's namespace (the inode of ``/proc/self/ns/pid``, as the pids cgroups do), and only
directories of this process's own namespace are judged. An older ``wfb-<pid>-<random>`` name
(no namespace) is judged as the initial namespace's, as an older wfbench always ran there.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Sequence

from wfbench.adapters.sandbox.net_bridge import pid_namespace, socket_dir_roots

__all__ = ["remove_stale_socket_dirs"]

_NAME = re.compile(r"wfb-(\d+)-(?:n(\d+)-)?[A-Za-z0-9_]+")
#: The inode of the kernel's initial PID namespace (``PROC_PID_INIT_INO``).
INITIAL_PIDNS = 4026531836


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists (another user's process)
        return True
    return True


def _owner_namespace(found: re.Match[str]) -> int:
    return int(found.group(2)) if found.group(2) is not None else INITIAL_PIDNS


def _only_sockets(path: str) -> list[str] | None:
    """The sockets in ``path``, or ``None`` when it holds anything else (or cannot be read)."""
    try:
        names = os.listdir(path)
        entries = [(name, os.lstat(os.path.join(path, name))) for name in names]
    except OSError:
        return None
    if any(not stat.S_ISSOCK(info.st_mode) for _, info in entries):
        return None
    return [os.path.join(path, name) for name, _ in entries]


def remove_stale_socket_dirs(
    roots: Sequence[str] | None = None, namespace: int | None = None
) -> tuple[str, ...]:
    """Remove the ``wfb-<pid>-*`` socket directories under ``roots`` whose creator is dead; the paths removed.

    ``roots`` defaults to where :func:`net_bridge.socket_path` puts them (the temporary directory,
    then the short roots). Only directories of this process's PID namespace (``namespace``,
    default: read from ``/proc``), that this user owns, holding only sockets, are removed; a
    process that cannot tell its namespace removes nothing.
    """
    mine = pid_namespace() if namespace is None else namespace
    if mine is None:
        return ()
    removed: list[str] = []
    for root in socket_dir_roots() if roots is None else roots:
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            found = _NAME.fullmatch(name)
            path = os.path.join(root, name)
            if found is None or _owner_namespace(found) != mine or _alive(int(found.group(1))):
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            sockets = _only_sockets(path)
            if sockets is None:
                continue
            with contextlib.suppress(OSError):
                for sock in sockets:
                    os.unlink(sock)
                os.rmdir(path)
                removed.append(path)
    return tuple(removed)
