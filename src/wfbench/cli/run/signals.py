"""SIGINT/SIGTERM during ``wfbench run``: the first cancels the sweep, a second force-quits it."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from wfbench.cli.exit_codes import CANCELLED

__all__ = ["cancel_on_signals"]


@contextmanager
def cancel_on_signals(cancel: threading.Event, out_dir: str) -> Iterator[None]:
    """SIGINT/SIGTERM cancel the sweep; a second one force-quits it.

    The first: running cells are told to stop (each command gets SIGTERM, then SIGKILL after its
    grace period), keep what their finished sessions measured, and the partial report is written;
    exit 130. The second: every process the sweep started is SIGKILLed at once
    (:func:`wfbench.adapters.sandbox.force_quit.kill_everything`) and the process exits 130 without waiting;
    rows already written are whole, and ``--resume`` continues from them.
    """

    def handler(signum: int, frame: object) -> None:
        del frame
        name = signal.Signals(signum).name
        if cancel.is_set():
            from wfbench.adapters.sandbox.force_quit import kill_everything

            killed = kill_everything()
            os.write(
                2,
                f"wfbench: {name} again: force-quit ({killed} process group(s)/process(es) killed); rows"
                f" already written are whole — resume with: wfbench run --resume {out_dir}\n".encode(),
            )
            os._exit(CANCELLED)
        cancel.set()
        os.write(
            2,
            f"wfbench: {name}: stopping — running cells are cancelled and keep what they measured"
            " (press Ctrl-C again to force-quit)\n".encode(),
        )

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        # After a cancelled sweep the process is on its way out with 130: a second signal landing
        # after the summary (the graceful stop won the race) still force-quits with 130, never
        # Python's default death by SIGINT. An uncancelled sweep gives the handlers back.
        if not cancel.is_set():
            for sig, old in previous.items():
                signal.signal(sig, old)
