"""A container image as commands run in it: what a container backend starts, and where the workspace is."""

from __future__ import annotations

import attrs

__all__ = ["ContainerImage"]


@attrs.frozen
class ContainerImage:
    """The container image a command runs in (container backends only) and where the workspace appears.

    ``ref`` is what the runtime starts (an image id ``sha256:…`` or a local name); ``workdir`` is the
    absolute path at which the workspace is mounted inside it (``/testbed`` for SWE-bench images);
    ``path`` is the ``PATH`` the image declares (its toolchain: a conda env, ``/usr/local/go/bin``),
    which commands of an image task start from ("" when it declares none).
    """

    ref: str
    workdir: str = "/workspace"
    path: str = ""
