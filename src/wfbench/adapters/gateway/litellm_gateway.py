"""The model gateway: a real LiteLLM proxy on loopback, so Claude Code runs on another provider's model.

``wfbench run --agent claude --model gpt-5.5 --gateway openai`` runs Claude Code on an OpenAI
model (``docs/gateway.md``)::

    claude (sandbox) ─bridge─▶ key proxy (cell lease) ─x-wfbench-cell─▶ LiteLLM ─▶ upstream meter ─▶ upstream
                               Anthropic Messages      (loopback, per sweep)   OpenAI Responses

* **LiteLLM** (``litellm[proxy]``, the ``gateway`` extra) translates Anthropic Messages to OpenAI
  Responses and back (tools and streaming included). It runs once per sweep on 127.0.0.1, from a
  config written into a private directory, and is stopped with the sweep (its process group).
  Nothing secret is in its argv: its master key and its upstream token are in its environment.
* **The sandbox** sees only its cell's lease (a bridge and a dummy token), as without a gateway.
  The key proxy in front of LiteLLM presents LiteLLM's master key, and names the cell in an
  ``x-wfbench-cell`` header, which LiteLLM forwards (``forward_client_headers_to_llm_api``).
* **The upstream meter** is a second key proxy between LiteLLM and the upstream: it holds the real
  key (so LiteLLM holds only the meter's token), and meters each reply's native usage (Responses:
  ``input_tokens`` is the whole, cached and cache-write tokens are subsets) in the cell the header
  names. The row's usage and cost are that native figure; LiteLLM's translated figure, as the
  front proxy saw it, is kept beside it and a disagreement is flagged (``app/cell/wire.py``).

LiteLLM fetches a model price map from the internet at import unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set: it is (wfbench prices from its own tables).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets as random_tokens
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

from wfbench.adapters.sandbox.net_bridge import free_port
from wfbench.domain.errors import InputError, WfbenchError

__all__ = ["CELL_HEADER", "LiteLLMProcess", "find_litellm"]

CELL_HEADER = "x-wfbench-cell"
#: How long LiteLLM may take to answer its liveness probe (about 1 min on a busy 2-core machine).
READY_TIMEOUT_S = 240.0
STOP_GRACE_S = 15.0


#: The pinned proxy ``scripts/install-tools`` puts in its own venv under the cache (``litellm[proxy]`` pins
#: ``rich<14``, which would hold the project's own tools back if it shared wfbench's environment).
LITELLM_VERSION = "1.108.7"


def find_litellm() -> str | None:
    """The ``litellm`` console script: ``$WFBENCH_LITELLM_BIN``, the cache's pinned venv, beside this
    interpreter (the ``gateway`` extra), or on PATH."""
    cache = os.environ.get("WFBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "wfbench")
    for path in (
        os.environ.get("WFBENCH_LITELLM_BIN"),
        os.path.join(cache, f"litellm-{LITELLM_VERSION}", "bin", "litellm"),
        os.path.join(os.path.dirname(sys.executable), "litellm"),
        shutil.which("litellm"),
    ):
        if path and os.access(path, os.X_OK):
            return path
    return None


def gateway_config(model: str, upstream_base_url: str) -> dict[str, object]:
    """LiteLLM's config: ``model`` served from the upstream's Responses API, keys from the environment."""
    return {
        "model_list": [
            {
                "model_name": model,
                "litellm_params": {
                    "model": f"openai/responses/{model}",
                    "api_base": upstream_base_url.rstrip("/") + "/v1",
                    "api_key": "os.environ/WFBENCH_GATEWAY_UPSTREAM_TOKEN",
                },
            }
        ],
        "general_settings": {
            "master_key": "os.environ/WFBENCH_GATEWAY_MASTER_KEY",
            "forward_client_headers_to_llm_api": True,
        },
        "litellm_settings": {"drop_params": True, "num_retries": 0, "request_timeout": 1800},
    }


class LiteLLMProcess:
    """One LiteLLM proxy on loopback for a sweep (:meth:`start`, :attr:`base_url`, :meth:`stop`).

    ``upstream_base_url`` is where LiteLLM sends the model's requests (the upstream meter) and
    ``upstream_token`` what it presents there.

    Raises:
        InputError: no ``litellm`` executable (install the ``gateway`` extra).
        WfbenchError: it did not become ready in time (with the tail of its output).
    """

    def __init__(
        self, model: str, upstream_base_url: str, upstream_token: str, *, binary: str | None = None
    ) -> None:
        found = binary or find_litellm()
        if found is None:
            raise InputError(
                "needs LiteLLM: install the gateway extra (pip install 'wfbench[gateway]')", field="--gateway"
            )
        self._binary = found
        self._model = model
        self._upstream = upstream_base_url
        self._upstream_token = upstream_token
        self.master_key = "sk-wfbench-" + random_tokens.token_hex(24)
        self._port = free_port()
        self._dir: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.started_s: float | None = None

    def __repr__(self) -> str:
        return f"LiteLLMProcess(model={self._model!r}, port={self._port})"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (Anthropic Messages at ``/v1/messages``)."""
        return f"http://127.0.0.1:{self._port}"

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> LiteLLMProcess:
        """Write the config, start LiteLLM, wait until it answers; returns self."""
        began = time.monotonic()
        self._dir = tempfile.mkdtemp(prefix="wfbench-litellm-")
        config = os.path.join(self._dir, "config.json")  # JSON is YAML: LiteLLM reads it as its config
        with open(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            json.dump(gateway_config(self._model, self._upstream), handle)
        log = open(os.path.join(self._dir, "litellm.log"), "wb")  # noqa: SIM115 - closed with the process
        argv = [self._binary, "--config", config, "--host", "127.0.0.1", "--port", str(self._port)]
        self._process = subprocess.Popen(
            argv,
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self._dir,
        )
        log.close()
        try:
            self._wait_ready(began + timeout_s)
        except BaseException:
            self.stop()
            raise
        self.started_s = round(time.monotonic() - began, 1)
        return self

    def _env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self._dir or "/nonexistent",
            "LANG": "C.UTF-8",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_LOG": "ERROR",
            "WFBENCH_GATEWAY_MASTER_KEY": self.master_key,
            "WFBENCH_GATEWAY_UPSTREAM_TOKEN": self._upstream_token,
            "NO_PROXY": "127.0.0.1,localhost",
        }

    def _wait_ready(self, deadline: float) -> None:
        probe = self.base_url + "/health/liveliness"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise WfbenchError(f"LiteLLM exited with {self._process.returncode}: {self._tail()}")
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(probe, timeout=2) as reply,  # noqa: S310 - loopback http only
            ):
                if reply.status == 200:
                    return
            time.sleep(0.5)
        raise WfbenchError(f"LiteLLM did not answer on {self.base_url} in time: {self._tail()}")

    def _tail(self) -> str:
        path = os.path.join(self._dir or "", "litellm.log")
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            text = handle.read()[-2000:].decode("utf-8", "replace")
            for secret in (self.master_key, self._upstream_token):
                text = text.replace(secret, "[REDACTED]")
            return text
        return "(no output)"

    def stop(self) -> None:
        """Stop LiteLLM's process group (SIGTERM, SIGKILL after a grace) and remove its directory."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(STOP_GRACE_S)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> LiteLLMProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(model: str, upstream_base_url: str, upstream_token: str) -> Iterator[LiteLLMProcess]:
    """A started :class:`LiteLLMProcess`, stopped when the block ends."""
    with LiteLLMProcess(model, upstream_base_url, upstream_token) as process:
        yield process
