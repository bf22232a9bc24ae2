"""The resource-limit options of ``wfbench run`` (docs/security.md, "Resource limits")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.adapters.sandbox.command_limits import ResourceLimits

MemoryLimit = Annotated[
    str, typer.Option(metavar="SIZE", help="Memory per sandboxed command (cgroup), e.g. 4G; off disables.")
]
ProcessLimit = Annotated[str, typer.Option(metavar="N", help="Processes/threads per sandboxed command; off.")]
OpenFiles = Annotated[str, typer.Option(metavar="N", help="RLIMIT_NOFILE of every sandboxed process; off.")]
FileSizeLimit = Annotated[
    str, typer.Option(metavar="SIZE", help="RLIMIT_FSIZE: the largest file a sandboxed command writes; off.")
]
TmpfsSize = Annotated[
    str, typer.Option(metavar="SIZE", help="Size of each sandbox tmpfs (/tmp, home, /dev/shm).")
]
DiskBudget = Annotated[
    str, typer.Option(metavar="SIZE", help="Bytes a workspace may grow on disk during its sessions; off.")
]


def size_option(text: str, flag: str, *, count: bool = False) -> int | None:
    """A size (``512M``, ``2G``) or a count; ``off`` disables. InputError naming the flag."""
    from wfbench.adapters.sandbox.command_limits import parse_size

    if text.strip().lower() in ("off", "none"):
        return None
    try:
        value = int(text) if count else parse_size(text)
    except ValueError:
        kind = "a whole number" if count else "a size such as 512M or 2G"
        raise InputError(f"must be {kind} or off, got {text!r}", field=flag) from None
    if value <= 0:
        raise InputError(f"must be positive, got {text!r}", field=flag)
    return value


def resource_limits(
    *, memory: str, processes: str, open_files: str, file_size: str, tmpfs: str
) -> ResourceLimits:
    """The sandbox's per-command limits (:class:`wfbench.adapters.sandbox.command_limits.ResourceLimits`)."""
    from wfbench.adapters.sandbox.command_limits import ResourceLimits

    tmpfs_bytes = size_option(tmpfs, "--tmpfs-size")
    if tmpfs_bytes is None:
        raise InputError("cannot be off (the sandbox's /tmp is a sized tmpfs)", field="--tmpfs-size")
    return ResourceLimits(
        pids=size_option(processes, "--process-limit", count=True),
        memory_bytes=size_option(memory, "--memory-limit"),
        open_files=size_option(open_files, "--open-files", count=True),
        file_size_bytes=size_option(file_size, "--file-size-limit"),
        tmpfs_bytes=tmpfs_bytes,
    )
