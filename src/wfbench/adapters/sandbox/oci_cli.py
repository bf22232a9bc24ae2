"""Where the container CLIs differ: podman and docker behind one OCI backend (docs/containers.md).

The backend (:mod:`wfbench.adapters.sandbox.podman`) and its command line
(:mod:`wfbench.adapters.sandbox.podman_argv`) take an :class:`OciCli`; what the two CLIs spell
differently is decided here or there by :attr:`OciCli.docker`, nowhere else:

* **runtime**: podman takes ``--runtime PATH`` before the subcommand (runc: crun refuses hybrid/v1
  cgroups); docker's daemon has its own default runtime (runc) and the CLI gets none.
* **user**: podman maps the harness's uid to 1000 in a per-container user namespace (``--uidmap``);
  docker has no per-container user namespace, so the command runs as the harness's own uid
  (``--user UID:GID``), with every capability dropped. It owns the workspace either way; under docker
  it also owns the image's files that belong to that uid (root's, when the harness is root).
* **environment**: podman drops the image's variables with ``--unsetenv-all``; docker cannot, so the
  names the image declares (read once per image) are removed by ``env -u`` in the entrypoint.
* **tmpfs**: podman copies the image's files into a tmpfs unless ``notmpcopyup`` and chowns it with
  ``U``; docker never copies, and takes the owner as ``uid=``/``gid=``; a read-only tmpfs is
  ``readonly`` (docker) or ``ro=true,notmpcopyup`` (podman); ``--read-only-tmpfs=false`` is podman's.
* **removal**: ``podman rm --force --ignore --time 0``; ``docker rm --force`` (a missing one is an
  error there, and ignored).
* **listing**: a label's value is ``{{index .Labels "L"}}`` to podman and ``{{.Label "L"}}`` to docker.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = ["DOCKER", "PODMAN", "OciCli"]

PODMAN = "podman"
DOCKER = "docker"


@attrs.frozen
class OciCli:
    """A container CLI as the backend calls it: which one, its binary, and (podman only) the runtime."""

    flavor: str
    binary: str
    runtime: str = ""

    @property
    def docker(self) -> bool:
        """True for docker (and its spelling of every flag listed in the module doc)."""
        return self.flavor == DOCKER

    @property
    def base(self) -> tuple[str, ...]:
        """``podman [--runtime R]`` or ``docker``: what every subcommand follows."""
        if self.runtime and not self.docker:
            return (self.binary, "--runtime", self.runtime)
        return (self.binary,)

    def remove(self, names: Sequence[str]) -> list[str]:
        """Remove the named containers now, running or not (a missing one is not an error that matters)."""
        if self.docker:
            return [*self.base, "rm", "--force", *names]
        return [*self.base, "rm", "--force", "--ignore", "--time", "0", *names]

    def list_labelled(self, label: str, value: str | None = None) -> list[str]:
        """List the containers carrying ``label`` (``=value`` if given): ``<name> <label value>`` lines."""
        show = f'{{{{.Label "{label}"}}}}' if self.docker else f'{{{{index .Labels "{label}"}}}}'
        wanted = label if value is None else f"{label}={value}"
        return [
            *self.base,
            "ps",
            "--all",
            "--filter",
            f"label={wanted}",
            "--format",
            f"{{{{.Names}}}} {show}",
        ]

    def image_env(self, ref: str) -> list[str]:
        """The variables the image declares, as a JSON list of ``NAME=value`` (docker's ``env -u`` list)."""
        return [*self.base, "image", "inspect", "--format", "{{json .Config.Env}}", ref]
