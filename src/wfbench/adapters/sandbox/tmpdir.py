"""Where the bwrap sandbox's ``TMPDIR`` goes: a private tmpfs that no bound path lies in.

The sandbox's ``/tmp`` is a fresh tmpfs. But a tree bound at the same path (the Python runtime,
a task environment's runtime, a read-only mount) whose host path is under ``/tmp`` — a clone, a
venv or a sweep's scratch tree in the host's ``/tmp`` — needs a mount point inside it, and so do
the empty tmpfs over its ``site-packages``. ``/tmp`` then holds those directories, and a command
that expects its ``TMPDIR`` empty (or removes what it finds there) sees, or trips over, the
harness's layout. So ``TMPDIR`` is ``/tmp`` only when no mount lies inside it; otherwise it is a
tmpfs of its own at the first candidate path that no mount lies in, contains or equals.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

#: The sandbox's /tmp (a per-run tmpfs inside the sandbox's own mount namespace).
SANDBOX_TMP = "/tmp"  # noqa: S108 - a path inside the sandbox's own mount namespace
#: The dedicated TMPDIR's name when /tmp holds mount points (a number is added on a collision).
DEDICATED_NAME = "wfbench-tmp"
#: bwrap options followed by ``<source> <target>`` and by ``<target>`` alone.
_SOURCE_TARGET = frozenset({"--bind", "--ro-bind", "--bind-try", "--ro-bind-try", "--dev-bind", "--symlink"})
_TARGET = frozenset({"--tmpfs", "--dir", "--proc", "--dev"})


def mount_targets(args: Sequence[str]) -> tuple[str, ...]:
    """Every path the bwrap options ``args`` mount or create (up to ``--``, the command)."""
    found: list[str] = []
    i = 0
    while i < len(args) and args[i] != "--":
        if args[i] in _SOURCE_TARGET and i + 2 < len(args):
            found.append(args[i + 2])
            i += 3
        elif args[i] in _TARGET and i + 1 < len(args):
            found.append(args[i + 1])
            i += 2
        else:
            i += 1
    return tuple(found)


def _overlaps(path: str, target: str) -> bool:
    """True when ``path`` and ``target`` are the same, or one lies inside the other."""
    return path == target or path.startswith(target.rstrip("/") + "/") or target.startswith(path + "/")


def _candidates() -> Iterator[str]:
    yield f"{SANDBOX_TMP}/{DEDICATED_NAME}"
    yield f"/{DEDICATED_NAME}"
    n = 2
    while True:
        yield f"/{DEDICATED_NAME}-{n}"
        n += 1


def private_tmpdir(targets: Sequence[str]) -> str:
    """``/tmp`` when ``targets`` hold its tmpfs and no other target lies inside it, else a free path.

    A free path is one that no target equals, lies in or contains; ``/tmp/wfbench-tmp`` first (a
    sibling of the mount points in /tmp), then ``/wfbench-tmp``, ``/wfbench-tmp-2``… (when /tmp
    itself is bound, or those names are taken).
    """
    others = list(targets)
    if SANDBOX_TMP in others:
        others.remove(SANDBOX_TMP)  # /tmp's own tmpfs (a second /tmp target covers it)
        if not any(_overlaps(SANDBOX_TMP, t) for t in others):
            return SANDBOX_TMP
    for path in _candidates():
        if not any(_overlaps(path, t) for t in others):
            return path
    raise AssertionError("unreachable: the candidates never end")  # pragma: no cover
