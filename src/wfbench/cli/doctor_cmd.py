"""``wfbench doctor``: what this machine can run, and what is missing."""

from __future__ import annotations

import sys

import typer


def register(app: typer.Typer) -> None:
    """Add ``doctor``."""
    app.command("doctor", short_help="Check what this machine can run.")(doctor)


def doctor() -> None:
    """Report what this machine can do: bwrap (and its resource limits), the claude CLI, Node."""
    import shutil
    import subprocess

    from wfbench.cli import bootstrap as boot

    try:
        sandbox = boot.build_sandbox("bwrap")
        typer.echo("bwrap: works")
        describe = getattr(sandbox, "describe_limits", None)
        for line in describe() if describe is not None else ():
            typer.echo(line)
    except Exception as exc:
        typer.echo(f"bwrap: NOT usable — {exc}")
    claude = boot.find_claude()
    version = "not installed"
    if claude:
        done = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30, check=False)
        version = f"{claude} ({done.stdout.strip() or done.stderr.strip()})"
    typer.echo(f"claude: {version}")
    node = shutil.which("node")
    node_version = (
        subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        if node
        else ""
    )
    typer.echo(f"node: {node_version or 'not installed'}")
    typer.echo(f"python: {sys.version.split()[0]} ({sys.executable})")
