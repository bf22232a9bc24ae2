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
_Dirs = Annotated[
    Path,
    typer.Argument(help="A sweep directory, or a directory of sweeps (e.g. results/): an index of them all."),
]

VIEW_HELP = """Browse a sweep, or every sweep under a directory, in the browser.

A sweep: the report, every task, arm and cell (prompt, transcript, patch, review, oracle, row).
A directory of sweeps (results/): an index (date, corpus, arms, cells, decisions, spend,
status; sortable, filterable), each sweep's pages, and any two sweeps compared. Pages of a
sweep that is still running refresh as its rows arrive.

\b
Examples:
  wfbench view results/wfbench-20260101T000000      # one sweep
  wfbench view results/                             # every sweep under results/
  wfbench view DIR --port 8765                      # a fixed port (loopback only)
  wfbench view DIR --static DIR/view                # the pages as files (one sweep)

\b
Exit codes:
  0  served until Ctrl-C, or the pages were written
  2  DIR holds no sweep, or an option is invalid
"""

COMPARE_HELP = """Compare two sweeps per task and arm (resolution, cost, quality); B against A, paired.

\b
Examples:
  wfbench compare results/before results/after            # Markdown on stdout
  wfbench compare A B --out compare.md --html compare.html

\b
Exit codes:
  0  the comparison was printed (and written)
  2  a sweep is missing, or a results.jsonl line is not a row (named)
"""


def _open(target: Path) -> SweepDirectory:
    from wfbench.adapters.store.sweep_dir import SweepDirectory

    if target.is_file() and target.name == "results.jsonl":
        target = target.parent
    return SweepDirectory.open(str(target))


def _library(target: Path):  # type: ignore[no-untyped-def]
    """The directory of sweeps at ``target`` (an InputError when it holds none)."""
    from wfbench.adapters.store.sweep_catalog import SweepTree
    from wfbench.app.report.library import SweepLibrary

    tree = SweepTree(str(target))
    if not target.is_dir() or not tree.names():
        raise InputError(
            "holds no sweep (no results.jsonl in it or in its subdirectories)", source=str(target)
        )
    return SweepLibrary(tree, root=tree.root)


def _static(site, sweep: str, out: Path) -> None:  # type: ignore[no-untyped-def]
    from wfbench.adapters.store.sweep_dir import StaticTree

    root = os.path.realpath(out)
    if root == sweep:
        raise InputError("must not be the sweep directory itself (use e.g. DIR/view)", field="--static")
    prefix = os.path.relpath(sweep, root).replace(os.sep, "/") + "/"
    count = site.write_static(StaticTree(root).write, sweep_prefix=prefix)
    typer.echo(f"wrote {count} page(s) to {root}/ — open {os.path.join(root, 'index.html')}")


def view(
    directory: _Dirs,
    *,
    host: Annotated[str, typer.Option("--host", help="Loopback address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")] = 0,
    static: Annotated[
        Path | None,
        typer.Option("--static", help="Write the pages as files under this directory instead."),
    ] = None,
) -> None:
    from wfbench.app.report.site import SweepSite

    if directory.is_dir() and not (directory / "results.jsonl").exists():
        if static is not None:
            raise InputError("--static writes one sweep's pages: name a sweep directory", field="--static")
        site = _library(directory)
        served = site.root
    else:
        sweep = _open(directory)
        title = f"wfbench sweep {os.path.basename(sweep.path)}"
        site = SweepSite(sweep, title=title, background=static is None)  # the server answers at once
        served = sweep.path
        if static is not None:
            _static(site, sweep.path, static)
            return
    from wfbench.adapters.viewer.server import ViewServer
    from wfbench.app.report.page import csp

    server = ViewServer(site.render, host=host, port=port, csp=csp())
    typer.echo(f"wfbench view: serving {served} at {server.url} (Ctrl-C stops)")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


def compare(
    before: Annotated[Path, typer.Argument(help="Sweep A (the before: incumbent skill, older agent...).")],
    after: Annotated[Path, typer.Argument(help="Sweep B (the after).")],
    *,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the comparison as Markdown here.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write it as a self-contained page here.")
    ] = None,
) -> None:
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
        names=(str(before), str(after)),
        inputs=(inputs[0], inputs[1]),
    )
    text = render_comparison_md(comparison)
    typer.echo(text, nl=False)
    if out is not None:
        write_text_atomic(out, text)
    if html is not None:
        from wfbench.app.report.links import Links

        here = os.path.dirname(os.path.abspath(html))
        links = tuple(
            Links(
                mode="report",
                root=os.path.relpath(s.path, here).replace(os.sep, "/") + "/",
                cell_pages=os.path.isdir(os.path.join(s.path, "tasks")),  # written beside report.html
            )
            for s in sweeps
        )
        import attrs

        # The page names each sweep by the path its links use (relative: the page moves with them).
        named = attrs.evolve(comparison, names=(links[0].root.rstrip("/"), links[1].root.rstrip("/")))
        write_text_atomic(html, render_comparison_html(named, links=(links[0], links[1])))


def register(app: typer.Typer) -> None:
    """Add ``view`` and ``compare`` to ``app``."""
    app.command("view", help=VIEW_HELP)(view)
    app.command("compare", help=COMPARE_HELP)(compare)


def _strict_rows(sweep: SweepDirectory) -> tuple[Row, ...]:
    """Every row of the sweep; a torn or invalid line is an InputError (compare needs every row)."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore

    return JsonlResultStore(sweep.results_path).rows()
