"""``wfbench view DIR`` (browse a sweep: loopback server or ``--static OUT``) and ``wfbench compare A B``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from wfbench.domain.errors import InputError

_Dir = Annotated[Path, typer.Argument(help="A sweep directory (holding results.jsonl).")]


def _open(target: Path):  # type: ignore[no-untyped-def]
    from wfbench.adapters.sweep_dir import SweepDirectory

    if target.is_file() and target.name == "results.jsonl":
        target = target.parent
    return SweepDirectory.open(str(target))


def _static(site, sweep: str, out: Path) -> None:  # type: ignore[no-untyped-def]
    from wfbench.adapters.sweep_dir import StaticTree

    root = os.path.realpath(out)
    if root == sweep:
        raise InputError("must not be the sweep directory itself (use e.g. DIR/view)", field="--static")
    prefix = os.path.relpath(sweep, root).replace(os.sep, "/") + "/"
    count = site.write_static(StaticTree(root).write, sweep_prefix=prefix)
    typer.echo(f"wrote {count} page(s) to {root}/ — open {os.path.join(root, 'index.html')}")


def register(app: typer.Typer) -> None:
    """Add ``view`` and ``compare`` to ``app``."""

    @app.command("view")
    def view(
        directory: _Dir,
        *,
        host: Annotated[str, typer.Option("--host", help="Loopback address to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")] = 0,
        static: Annotated[
            Path | None,
            typer.Option("--static", help="Write the pages as files under this directory instead."),
        ] = None,
    ) -> None:
        """Browse a sweep: the report, every task, arm and cell (transcript, patch, review, row)."""
        from wfbench.app.report.site import SweepSite

        sweep = _open(directory)
        site = SweepSite(sweep, title=f"wfbench sweep {os.path.basename(sweep.path)}")
        if static is not None:
            _static(site, sweep.path, static)
            return
        from wfbench.adapters.view_server import ViewServer
        from wfbench.app.report.page import csp

        server = ViewServer(site.render, host=host, port=port, csp=csp())
        typer.echo(f"wfbench view: serving {sweep.path} at {server.url} (Ctrl-C stops)")
        sys.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()
