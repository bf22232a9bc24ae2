"""``wfbench provider serve SCRIPT``: run the scripted model provider on loopback until signalled."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from wfbench.domain.errors import InputError

MAX_PORT = 65535


def register(app: typer.Typer) -> None:
    """Add the ``provider`` command group to ``app``."""
    group = typer.Typer(
        name="provider",
        help="The scripted model provider (offline model endpoint for tests and dry runs).",
        no_args_is_help=True,
    )
    group.command(
        "serve",
        epilog="\b\nExamples:\n  wfbench provider serve script.yaml --port 0 --log requests.jsonl\n"
        "  ANTHROPIC_BASE_URL=$(...) claude -p 'hi'     # point an agent at the printed URL\n"
        "\n\b\nExit codes: 0 stopped by SIGINT/SIGTERM, 2 a bad script or an address that cannot be bound.",
        short_help="Serve a provider script on loopback until signalled.",
    )(serve)
    app.add_typer(group, name="provider")


def serve(
    script: Annotated[
        Path, typer.Argument(metavar="SCRIPT", help="YAML script (see docs/provider-script.md).")
    ],
    port: Annotated[int, typer.Option(metavar="PORT", help="Port on 127.0.0.1; 0 picks a free one.")] = 0,
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Loopback address to bind (127.0.0.1 or ::1).")
    ] = "127.0.0.1",
    log: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Append every request to this JSONL file (with the rule and turn that answered it).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve SCRIPT (Anthropic Messages, OpenAI Responses); print the base URL; stop on SIGINT/SIGTERM."""
    from wfbench.adapters.provider.script import ProviderScript
    from wfbench.adapters.provider.scripted import ScriptedProvider

    if not 0 <= port <= MAX_PORT:
        raise InputError(f"must be between 0 and {MAX_PORT}", field="--port")
    loaded = ProviderScript.load(script)
    try:
        provider = ScriptedProvider(loaded, host=host, port=port, log_path=log)
    except ValueError as exc:
        raise InputError(str(exc), field="--host") from exc
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            provider.start()
        except OSError as exc:
            raise InputError(f"cannot bind {host}:{port} ({exc.strerror or exc})", field="--port") from exc
        typer.echo(provider.base_url)
        while not stop.wait(0.5):
            pass
    finally:
        provider.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
