"""wfbench: benchmark headless coding-agent workflows with hidden oracles and a deterministic gate."""

__version__ = "0.1.0.dev0"
