"""A task's own limits (``limits:`` of a corpus task; Harbor's timeouts and ``[environment]`` resources).

``limits: {agent_timeout: S, verifier_timeout: S, cpus: N, memory: SIZE, storage: SIZE}``. The time
limits replace the sweep's ``--session-timeout``/``--verify-timeout`` for the task; the resources
replace the sandbox's per-command limits (each backend enforces them as docs/containers.md says).
A size is a number and one binary unit, ``K``, ``M``, ``G`` or ``T`` (``512M``, ``1.5G``), the form
Harbor's deprecated ``memory``/``storage`` keys use; ``4GB``, ``4GiB`` and bare numbers are refused
(a bare number has no unit anyone agrees on).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.workspace.sandbox import TaskResources

__all__ = ["LIMIT_KEYS", "TaskLimits", "parse_limits", "parse_task_size"]

#: ``limits:`` keys of a task.
LIMIT_KEYS = frozenset({"agent_timeout", "verifier_timeout", "cpus", "memory", "storage"})
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT])$")
_SCALE = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
#: The smallest memory or storage limit a task may ask for (a command needs a few MiB to start).
MIN_SIZE = 16 * 1024**2
#: The most CPUs a task may ask for (a sanity bound; the machine's own count clamps it at run time).
MAX_CPUS = 1024


@attrs.frozen
class TaskLimits:
    """A task's own limits (None: the sweep's ``--session-timeout``/``--verify-timeout``, the sandbox's)."""

    agent_timeout_s: float | None = None
    verifier_timeout_s: float | None = None
    cpus: float | None = None
    memory_bytes: int | None = None
    storage_bytes: int | None = None

    @property
    def resources(self) -> TaskResources:
        """The resources a sandboxed command of this task runs under."""
        return TaskResources(cpus=self.cpus, memory_bytes=self.memory_bytes, storage_bytes=self.storage_bytes)

    def digest(self) -> str | None:
        """sha256 of the declared limits (None when the task declares none: rows before limits match).

        Part of the reuse binding: a row measured under other limits never stands in for this task.
        """
        declared = {key: value for key, value in attrs.asdict(self).items() if value is not None}
        if not declared:
            return None
        return hashlib.sha256(json.dumps(declared, sort_keys=True).encode()).hexdigest()


def parse_task_size(raw: Any) -> int:
    """Bytes of a size such as ``512M`` or ``2G`` (binary units). ValueError with the accepted form."""
    text = raw.strip().upper() if isinstance(raw, str) else None
    found = _SIZE.match(text) if text else None
    if found is None:
        raise ValueError(f"must be a size such as 512M or 4G (units K, M, G, T), got {raw!r}")
    value = int(float(found.group(1)) * _SCALE[found.group(2)])
    if value < MIN_SIZE:
        raise ValueError(f"must be at least 16M, got {raw!r}")
    return value


def parse_cpus(raw: Any) -> float:
    """A positive, finite number of CPUs (``0.5``, ``2``). ValueError otherwise."""
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise ValueError(f"must be a number of CPUs such as 0.5 or 2, got {raw!r}")
    if not 0.01 <= raw <= MAX_CPUS:
        raise ValueError(f"must be between 0.01 and {MAX_CPUS}, got {raw!r}")
    return float(raw)


def parse_limits(raw: Mapping[str, Any], *, locator: str) -> TaskLimits:
    """``limits:`` of task ``locator`` (keys already checked). InputError naming the field."""
    values: dict[str, Any] = {}
    for key in sorted(LIMIT_KEYS & set(raw)):
        value = raw[key]
        try:
            if key in ("agent_timeout", "verifier_timeout"):
                if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 86400:
                    raise ValueError("must be a number of seconds (1..86400)")
                values[f"{key}_s"] = float(value)
            elif key == "cpus":
                values["cpus"] = parse_cpus(value)
            else:
                values[f"{key}_bytes"] = parse_task_size(value)
        except ValueError as exc:
            raise InputError(str(exc), locator=locator, field=f"limits.{key}") from None
    return TaskLimits(**values)
