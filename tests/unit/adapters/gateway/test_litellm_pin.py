"""The LiteLLM the gateway looks for is the one scripts/install-tools installs."""

from __future__ import annotations

import re
from pathlib import Path

from wfbench.adapters.gateway import litellm_gateway

ROOT = Path(__file__).resolve().parents[4]


def test_install_tools_pins_the_litellm_version_the_gateway_looks_for() -> None:
    script = (ROOT / "scripts" / "install-tools").read_text()
    pinned = re.search(r'^LITELLM_VERSION="([^"]+)"', script, re.MULTILINE)
    assert pinned is not None, "scripts/install-tools no longer pins LITELLM_VERSION"
    assert pinned.group(1) == litellm_gateway.LITELLM_VERSION


def test_the_gateway_finds_the_cached_pinned_venv_first_after_the_override(tmp_path, monkeypatch) -> None:
    executable = tmp_path / f"litellm-{litellm_gateway.LITELLM_VERSION}" / "bin" / "litellm"
    executable.parent.mkdir(parents=True)
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    monkeypatch.delenv("WFBENCH_LITELLM_BIN", raising=False)
    monkeypatch.setenv("WFBENCH_CACHE", str(tmp_path))
    assert litellm_gateway.find_litellm() == str(executable)
    monkeypatch.setenv("WFBENCH_LITELLM_BIN", "/nonexistent/litellm")
    assert litellm_gateway.find_litellm() == str(executable)  # an unusable override falls through
