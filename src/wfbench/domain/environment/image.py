"""A container image as commands run in it: what a container backend starts, and where the workspace is."""

from __future__ import annotations

import attrs

__all__ = ["IMAGE_DEFAULT_PATH", "ContainerImage", "image_path"]

#: ``PATH`` of an image task whose image declares none (the usual Debian/Ubuntu one).
IMAGE_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


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


def image_path(declared: str, first: tuple[str, ...] = ()) -> str:
    """The ``PATH`` commands of an image task start from: ``first``, then what the image declares."""
    return ":".join([*first, declared or IMAGE_DEFAULT_PATH])
