"""``wfbench export DIR --format atif|inspect``: a sweep's cells for the tools people already use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

EXPORT_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench export results/sweep --format atif     # DIR/export/atif/: an ATIF file per session\n"
    "  wfbench export results/sweep --format inspect  # DIR/export/inspect/<sweep>.json (inspect view)\n"
    "\n\b\nExit codes: 0 written, 2 not a sweep directory or an unknown format."
)


def export(
    sweep: Annotated[Path, typer.Argument(metavar="DIR", help="A sweep directory (holding results.jsonl).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="atif (Harbor's trajectory format) or inspect (an Inspect AI log).",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", metavar="OUT", help="Output directory (default: DIR/export/FORMAT).", show_default=False
        ),
    ] = None,
) -> None:
    """Export each session as an ATIF trajectory, or the sweep as an Inspect AI log (docs/export.md)."""
    import json

    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.app.report.export import FORMATS, SweepSource, export_sweep, summary
    from wfbench.cli import bootstrap as boot
    from wfbench.cli.commands.gate import results_path
    from wfbench.domain.errors import InputError

    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})", field="--format")
    source = results_path(sweep)
    root = source.parent
    directory = boot.sweep_directory(str(root))
    raw = directory.read("manifest.json")
    try:
        manifest = json.loads(raw) if raw else {}
    except ValueError:
        manifest = {}
    target = out if out is not None else root / "export" / fmt
    result = export_sweep(
        SweepSource(
            rows=JsonlResultStore(source).rows(),
            directory=directory,
            name=root.resolve().name,
            manifest=manifest if isinstance(manifest, dict) else {},
        ),
        fmt=fmt,
        out=boot.sweep_directory(str(target)),
    )
    for line in summary(result):
        typer.echo(line)
    typer.echo(f"wrote {target}/")


def register(app: typer.Typer) -> None:
    """Add ``wfbench export``."""
    app.command(
        "export", epilog=EXPORT_EPILOG, short_help="Export trajectories (ATIF) or an Inspect AI log."
    )(export)
