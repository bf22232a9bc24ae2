"""SWE-bench's per-instance images as the environment of imported tasks (docs/swebench.md, "Images").

SWE-bench's harness runs each instance in its own image, ``sweb.eval.<arch>.<instance id>``; the
published ones are ``swebench/sweb.eval.x86_64.<id>:latest`` with the id lower-cased and ``__``
written ``_1776_`` (``TestSpec.instance_image_key``). Each holds the repository at ``/testbed`` and
a conda env ``testbed`` with everything its tests need; the harness's eval script activates it and
works in ``/testbed``. An imported task does the same without a shell start-up file: the env's
``bin`` goes first on ``PATH`` and the task's workdir is ``/testbed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wfbench.domain.errors import InputError

__all__ = ["SWEBENCH_IMAGES", "TESTBED", "TESTBED_BIN", "image_environment", "image_name"]

#: SWE-bench's instance images (``swebench.harness.test_spec.TestSpec.instance_image_key``, remote form).
SWEBENCH_IMAGES = "swebench/sweb.eval.x86_64.{instance_id}:latest"
#: Where SWE-bench's images hold the repository, and the bin directory of their conda env ``testbed``.
TESTBED = "/testbed"
TESTBED_BIN = "/opt/miniconda3/envs/testbed/bin"


def image_name(template: str, instance_id: str) -> str:
    """The image of ``instance_id`` by ``template`` (``{instance_id}``), as SWE-bench's harness names it.

    The id is lower-cased and its ``__`` written ``_1776_`` (``django__django-11099`` ->
    ``django_1776_django-11099``), as the published images are named. ``swebench`` is SWE-bench's
    own template (:data:`SWEBENCH_IMAGES`).

    Raises:
        InputError: the template names another placeholder (field ``--images``).
    """
    if template == "swebench":
        template = SWEBENCH_IMAGES
    try:
        return template.format(instance_id=instance_id.lower().replace("__", "_1776_"))
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(
            f"{template!r}: only {{instance_id}} can be filled in ({exc})", field="--images"
        ) from None


def image_environment(name: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An instance image as the task's environment: ``/testbed``, conda env ``testbed`` first on PATH.

    ``extra`` (``--environment``) adds its keys (``install`` on top, ``timeout``…) or replaces these.
    """
    return {"image": name, "workdir": TESTBED, "path": [TESTBED_BIN], **(extra or {})}
