"""``wfbench doctor``: what this machine can run, what is missing, and exit 1 when a requirement fails.

Each check is one line, ``<name>: <ok|warn|FAIL> — <detail>``. Required (a ``FAIL`` exits 1): the
Python runtime, git (every workspace is a git snapshot), bubblewrap (the default sandbox; the
explicit ``--sandbox host-unsafe`` runs without it), and free space where sweeps write (the
current directory's ``results/`` and ``$TMPDIR``, at least :data:`MIN_FREE_BYTES`). Advisory
(``warn``): the API key variable (needed only with ``--base-url``), the agent CLIs against their
pinned versions (needed only with ``--agent claude`` / ``codex`` / ``gemini`` / ``opencode``), Node.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from typing import NamedTuple

import typer

from wfbench.cli.exit_codes import FAILED, OK

#: Free bytes wanted where sweeps write (transcripts, patches, snapshots, scratch trees).
MIN_FREE_BYTES = 1024**3
OK_, WARN, FAIL = "ok", "warn", "FAIL"


class Check(NamedTuple):
    """One line of the doctor's report (a NamedTuple: every command starts without attrs)."""

    name: str
    status: str
    detail: str

    def line(self) -> str:
        """``name: status — detail``."""
        return f"{self.name}: {self.status} — {self.detail}"


DOCTOR_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench doctor                      # one line per check: ok, warn or FAIL\n"
    "  wfbench doctor && wfbench run       # CI: stop before a sweep on a machine that cannot run it\n"
    "\n\b\nEnvironment: WFBENCH_ANTHROPIC_API_KEY (checked, never printed), WFBENCH_CLAUDE_BIN,\n"
    "WFBENCH_CODEX_BIN, TMPDIR.\n"
    "\n\b\nExit codes: 0 every requirement met (warnings allowed), 1 a requirement failed."
)


def register(app: typer.Typer) -> None:
    """Add ``doctor``."""
    app.command(
        "doctor",
        epilog=DOCTOR_EPILOG,
        short_help="Check what this machine can run (exit 1 if a requirement fails).",
    )(doctor)


def doctor() -> None:
    """Check Python, git, bubblewrap (and its limits), disk space, the API key variable and the agent CLIs.

    Exits 1 when a requirement fails (python, git, bwrap, disk space), 0 otherwise; warnings
    (an unset key, an agent CLI missing or not at its pinned version) never fail.
    """
    checks = run_checks(os.environ)
    for check in checks:
        typer.echo(check.line())
    failed = [check.name for check in checks if check.status == FAIL]
    typer.echo(
        f"{len(failed)} requirement(s) failed: {', '.join(failed)}" if failed else "all requirements met"
    )
    raise typer.Exit(FAILED if failed else OK)


def run_checks(environ: Mapping[str, str]) -> list[Check]:
    """Every check, in report order."""
    return [
        Check("python", OK_, f"{sys.version.split()[0]} ({sys.executable})"),
        _git(),
        *_bwrap(),
        _podman(environ),
        _docker(environ),
        *_disk(environ),
        _api_key(environ),
        _agent("claude", _claude_pin(), _find("claude")),
        _agent("codex", _codex_pin(), _find("codex")),
        _agent("gemini", _gemini_pin(), _find("gemini")),
        _agent("opencode", _opencode_pin(), _find("opencode")),
        _node(),
    ]


def _version(binary: str) -> str:
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run: {exc}"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def _git() -> Check:
    git = shutil.which("git")
    if git is None:
        return Check("git", FAIL, "not found on PATH (every task workspace is a git snapshot)")
    return Check("git", OK_, f"{_version(git)} ({git})")


def _bwrap() -> list[Check]:
    from wfbench.cli import bootstrap as boot

    try:
        sandbox = boot.build_sandbox("bwrap")
    except Exception as exc:  # the reason is the detail; doctor reports, never raises
        return [Check("bwrap", FAIL, f"NOT usable: {exc}")]
    checks = [Check("bwrap", OK_, "works")]
    describe: Callable[[], list[str]] | None = getattr(sandbox, "describe_limits", None)
    checks += [Check("limits", OK_, line) for line in (describe() if describe is not None else ())]
    return checks


def _podman(environ: Mapping[str, str]) -> Check:
    """Advisory: the container backend (``--sandbox podman``, image tasks) and this machine's quirks."""
    from wfbench.cli import bootstrap as boot

    podman = shutil.which("podman")
    if podman is None:
        return Check("podman", WARN, "not installed (needed only for --sandbox podman / image tasks)")
    info = subprocess.run(
        [podman, "info", "--format", "{{.Host.CgroupsVersion}} {{.Host.OCIRuntime.Name}}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    cgroups, _, default_runtime = info.stdout.strip().partition(" ")
    image = environ.get(boot.PODMAN_IMAGE_ENV) or boot.DEFAULT_PODMAN_IMAGE
    runtime = environ.get("WFBENCH_PODMAN_RUNTIME", "runc")
    quirks = f"cgroups {cgroups or '?'}, default runtime {default_runtime or '?'}, wfbench uses {runtime}"
    if cgroups == "v1" and runtime == "crun":
        quirks += " (crun refuses hybrid/v1 cgroups: use runc)"
    try:
        boot.build_sandbox("podman")
    except Exception as exc:  # the reason is the detail; doctor reports, never raises
        return Check("podman", WARN, f"NOT usable ({quirks}; image {image}): {exc}")
    return Check(
        "podman", OK_, f"{_version(podman)}; {quirks}; ulimits under the hard limits; image {image} works"
    )


def _docker(environ: Mapping[str, str]) -> Check:
    """Advisory: ``--sandbox docker`` (its daemon answers, the base image is there, a container starts)."""
    from wfbench.cli import bootstrap as boot

    docker = shutil.which("docker")
    if docker is None:
        return Check("docker", WARN, "not installed (needed only for --sandbox docker)")
    image = environ.get(boot.DOCKER_IMAGE_ENV) or boot.DEFAULT_PODMAN_IMAGE
    try:
        boot.build_sandbox("docker")
    except Exception as exc:  # the reason is the detail; doctor reports, never raises
        return Check("docker", WARN, f"NOT usable (image {image}): {exc}")
    server = subprocess.run(
        [docker, "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout.strip()
    return Check("docker", OK_, f"{_version(docker)}; daemon {server}; image {image} works")


def _disk(environ: Mapping[str, str]) -> list[Check]:
    checks = []
    for label, path in (
        ("disk (results)", os.getcwd()),
        ("disk (TMPDIR)", environ.get("TMPDIR") or tempfile.gettempdir()),
    ):
        try:
            free = shutil.disk_usage(path).free
        except OSError as exc:
            checks.append(Check(label, FAIL, f"{path}: {exc.strerror or exc}"))
            continue
        shown = f"{free / 1024**3:.1f} GiB free at {path}"
        if free >= MIN_FREE_BYTES:
            checks.append(Check(label, OK_, shown))
        else:
            checks.append(Check(label, FAIL, f"{shown} (wants at least {MIN_FREE_BYTES // 1024**3} GiB)"))
    return checks


def _api_key(environ: Mapping[str, str]) -> Check:
    from wfbench.cli.bootstrap import API_KEY_ENV

    if environ.get(API_KEY_ENV, "").strip():
        return Check(
            "api key", OK_, f"{API_KEY_ENV} is set (used only with --base-url, held by the key proxy)"
        )
    extra = (
        " ANTHROPIC_API_KEY is set but wfbench never reads it." if environ.get("ANTHROPIC_API_KEY") else ""
    )
    return Check(
        "api key", WARN, f"{API_KEY_ENV} is not set: offline sweeps need none; --base-url does.{extra}"
    )


def _find(agent: str) -> str | None:
    from wfbench.cli import bootstrap as boot

    finders = {
        "claude": boot.find_claude,
        "codex": boot.find_codex,
        "gemini": boot.find_gemini,
        "opencode": boot.find_opencode,
    }
    return finders[agent]()


def _claude_pin() -> str:
    from wfbench.adapters.agents.claude import CLAUDE_VERSION

    return CLAUDE_VERSION


def _codex_pin() -> str:
    from wfbench.adapters.agents.codex import CODEX_VERSION

    return CODEX_VERSION


def _opencode_pin() -> str:
    from wfbench.adapters.agents.opencode import OPENCODE_VERSION

    return OPENCODE_VERSION


def _gemini_pin() -> str:
    from wfbench.adapters.agents.gemini import GEMINI_VERSION

    return GEMINI_VERSION


def _agent(name: str, pinned: str, binary: str | None) -> Check:
    if binary is None:
        return Check(
            name, WARN, f"not installed (needed for --agent {name}; scripts/install-tools installs {pinned})"
        )
    version = _version(binary)
    if pinned not in version.split():
        return Check(
            name,
            WARN,
            f"{binary} is {version or 'of unknown version'}, not the pinned {pinned} (scripts/install-tools)",
        )
    return Check(name, OK_, f"{binary} ({version}, the pinned version)")


def _node() -> Check:
    node = shutil.which("node")
    if node is None:
        return Check("node", WARN, "not installed (the agent CLIs are installed with npm)")
    return Check("node", OK_, _version(node))
