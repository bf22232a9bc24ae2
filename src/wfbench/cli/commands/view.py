"""``wfbench view DIR`` (browse a sweep: loopback server or ``--static OUT``) and ``wfbench compare A B``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.adapters.store.sweep_dir import SweepDirectory
    from wfbench.domain.results.rows import Row

_Dir = Annotated[Path, typer.Argument(help="A sweep directory (holding results.jsonl).")]


def _open(target: Path) -> SweepDirectory:
    from wfbench.adapters.store.sweep_dir import SweepDirectory

    if target.is_file() and target.name == "results.jsonl":
        target = target.parent
    return SweepDirectory.open(str(target))


def _static(site, sweep: str, out: Path) -> None:  # type: ignore[no-untyped-def]
    from wfbench.adapters.store.sweep_dir import StaticTree

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
        from wfbench.adapters.viewer.server import ViewServer
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

    @app.command("compare")
    def compare(
        before: Annotated[
            Path, typer.Argument(help="Sweep A (the before: incumbent skill, older agent...).")
        ],
        after: Annotated[Path, typer.Argument(help="Sweep B (the after).")],
        *,
        out: Annotated[
            Path | None, typer.Option("--out", help="Also write the comparison as Markdown here.")
        ] = None,
        html: Annotated[
            Path | None, typer.Option("--html", help="Also write it as a self-contained page here.")
        ] = None,
    ) -> None:
        """Compare two sweeps per task and arm (resolution, cost, quality), paired statistics of B vs A."""
        from wfbench.adapters.store.jsonl_store import write_text_atomic
        from wfbench.app.report.compare import compare_sweeps, render_comparison_html, render_comparison_md
        from wfbench.app.report.model import ReportInputs

        sweeps = [_open(before), _open(after)]
        inputs = []
        for sweep in sweeps:
            promotion, _ = sweep.json_file("promotion.json")
            manifest, _ = sweep.json_file("manifest.json")
            inputs.append(
                ReportInputs(
                    promotion=promotion if isinstance(promotion, dict) else None,
                    manifest=manifest if isinstance(manifest, dict) else None,
                )
            )
        comparison = compare_sweeps(
            _strict_rows(sweeps[0]),
            _strict_rows(sweeps[1]),
            names=(sweeps[0].path, sweeps[1].path),
            inputs=(inputs[0], inputs[1]),
        )
        text = render_comparison_md(comparison)
        typer.echo(text, nl=False)
        if out is not None:
            write_text_atomic(out, text)
        if html is not None:
            write_text_atomic(html, render_comparison_html(comparison))


def _strict_rows(sweep: SweepDirectory) -> tuple[Row, ...]:
    """Every row of the sweep; a torn or invalid line is an InputError (compare needs every row)."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore

    return JsonlResultStore(sweep.results_path).rows()
