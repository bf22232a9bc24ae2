"""The bounds of a sweep's concurrency, shared by the command line and the corpus reader.

Import-light on purpose (``wfbench run --help`` reads it): constants only.
"""

from __future__ import annotations

__all__ = ["MAX_WORKERS"]

#: Agent sessions wait on the model, not on cores; the provider's throttling is paced by the
#: scheduler's AIMD limit (``--throttle-retries``), so the cap is the machine's, not the reference's 8.
MAX_WORKERS = 64
