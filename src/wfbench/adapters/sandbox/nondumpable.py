"""Start a program non-dumpable: through an execute-only copy of its ELF interpreter.

Linux marks a process *non-dumpable* when it executes a file it may not read (``would_dump()``
in ``fs/exec.c``), and that includes the ELF interpreter named by the program's ``PT_INTERP``
(``/lib64/ld-linux-x86-64.so.2``). A non-dumpable process cannot be ptraced (``gdb -p``),
nor have its memory read or written (``/proc/<pid>/mem``, ``process_vm_readv``/``writev``), its
environment read (``/proc/<pid>/environ``), its file descriptors opened (``/proc/<pid>/fd/N``,
``pidfd_getfd``) or compared (``kcmp``) by any other process of the same user without
``CAP_SYS_PTRACE`` — and nothing in the sandbox has a capability. The process itself keeps
full access to its own ``/proc/self``.

So the sandbox runs ``<exec-only loader> <program> <args>...``: the loader copy has mode 0111 (the
sandbox user may execute, not read it; it is bound read-only, so it cannot be ``chmod``-ed), the
kernel maps it without a read check, and it loads the program as usual. ``/proc/self/exe`` names
the loader; the program is ``argv[1]`` to it (the real Claude CLI, a Bun single-file
executable, and CPython both run unchanged). Only that one process is non-dumpable: the program's
own children execute normally, so a tool can still debug the programs it starts itself.

This is chosen over a seccomp filter (which cannot stop ``open("/proc/1/fd/1")`` or writes to
``/proc/<pid>/mem``: a path is not a syscall argument seccomp can inspect) and over a relay alone
(which only moves the pipe to another ptrace-able process). A statically linked program has no
interpreter: :func:`elf_interpreter` returns ``None`` and the caller must refuse (or run an
execute-only copy of the program itself). Requires ``fs.suid_dumpable`` to be 0 or 2 (the
default), since the kernel sets a non-dumpable process to that value.
"""

from __future__ import annotations

import os
import shutil
import struct

#: Where the execute-only loader appears inside the sandbox.
LOADER_TARGET = "/opt/wfbench/ld.so"
_PT_INTERP = 3
_MAX_INTERP = 4096


def elf_interpreter(path: str) -> str | None:
    """The ``PT_INTERP`` path of the ELF file at ``path``, or None (not ELF, static, unreadable)."""
    try:
        with open(path, "rb") as handle:
            ident = handle.read(64)
            if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                return None
            wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
            if wide:
                (phoff,) = struct.unpack_from(order + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", ident, 54)
            else:
                (phoff,) = struct.unpack_from(order + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", ident, 42)
            for index in range(min(phnum, 256)):
                handle.seek(phoff + index * phentsize)
                header = handle.read(phentsize)
                if wide:
                    kind, _flags, offset, _vaddr, _paddr, size = struct.unpack(order + "IIQQQQ", header[:40])
                else:
                    kind, offset, _vaddr, _paddr, size = struct.unpack(order + "IIIII", header[:20])
                if kind == _PT_INTERP and 0 < size <= _MAX_INTERP:
                    handle.seek(offset)
                    return handle.read(size).split(b"\0", 1)[0].decode() or None
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def exec_only_copy(source: str, dest: str) -> str:
    """Copy ``source`` to a new file ``dest`` with mode 0111 (execute only); returns ``dest``.

    Raises:
        OSError: the copy could not be made.
    """
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    with open(source, "rb") as src, os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(src, out, 1024 * 1024)
    os.chmod(dest, 0o111)  # noqa: S103 - execute-only is the point: no read, no write
    return dest
