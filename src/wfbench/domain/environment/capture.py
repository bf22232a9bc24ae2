"""Capturing an image's working directory as a task's repository (``wfbench tasks import harbor``).

A Harbor task's starting state is its image's working directory as built, not a git repository.
The import builds the image once and captures that directory into a one-commit, parentless git
repository inside the corpus, so snapshots, patch capture, churn and reuse work as for git tasks.
"""

from __future__ import annotations

import attrs

__all__ = ["CaptureRequest", "CapturedWorkdir"]


@attrs.frozen
class CaptureRequest:
    """What to build and capture: a Containerfile with its context, or a named image."""

    task: str
    containerfile: str | None = None
    context: str | None = None
    image: str | None = None
    #: The working directory to capture (None: the image's own ``WORKDIR``).
    workdir: str | None = None
    timeout_s: float = 600.0


@attrs.frozen
class CapturedWorkdir:
    """The captured repository, the directory it came from, and what was left out (said, not hidden)."""

    repository: str
    workdir: str
    commit: str
    image_id: str
    files: int
    left_out: tuple[str, ...] = ()
