"""The executor options of ``wfbench run``: where cells run (``docs/distributed.md``)."""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

import typer

from wfbench.domain.errors import InputError

#: ``--executor`` choices: this machine's thread pool, or the nodes of a Ray cluster.
ExecutorName = Literal["local", "ray"]

Executor = Annotated[
    ExecutorName,
    typer.Option(
        "--executor",
        help="Where cells run: local threads (--workers), or the nodes of the Ray cluster at --ray-address"
        " (needs the ray extra: pip install 'wfbench[ray]').",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="HOST:PORT",
        help="The Ray cluster's address (its head's GCS host:port) for --executor ray; always explicit.",
        show_default=False,
    ),
]
NodeLossRetries = Annotated[
    int,
    typer.Option(
        "--node-loss-retries",
        min=0,
        metavar="N",
        help="With --executor ray: run a cell whose node died again, up to N times (default 0: its row is"
        " an infra-error; every attempt is recorded).",
    ),
]
CancelGrace = Annotated[
    float,
    typer.Option(
        "--cancel-grace",
        min=0.0,
        metavar="SECONDS",
        help="With --executor ray: seconds a cancelled cell gets to stop before its task is killed.",
    ),
]


class ExecutorChoice(NamedTuple):
    """Where a sweep's cells run, as the options gave it (a NamedTuple: ``--help`` starts without attrs)."""

    name: str = "local"
    ray_address: str | None = None
    node_loss_retries: int = 0
    cancel_grace_s: float = 30.0

    @classmethod
    def of(
        cls,
        name: str,
        *,
        ray_address: str | None,
        node_loss_retries: int,
        cancel_grace_s: float,
        explicit: frozenset[str],
    ) -> ExecutorChoice:
        """The checked choice.

        Raises:
            InputError: ``--executor ray`` without ``--ray-address``, or a Ray option without it.
        """
        if name == "ray":
            if not (ray_address or "").strip():
                raise InputError(
                    "--executor ray needs --ray-address HOST:PORT (never a guessed cluster)",
                    field="--ray-address",
                )
            return cls(name, ray_address.strip() if ray_address else None, node_loss_retries, cancel_grace_s)
        for option, flag in (
            ("ray_address", "--ray-address"),
            ("node_loss_retries", "--node-loss-retries"),
            ("cancel_grace", "--cancel-grace"),
        ):
            if option in explicit:
                raise InputError(f"{flag} applies only to --executor ray", field=flag)
        return cls(name)
