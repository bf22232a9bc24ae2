"""The loopback server of ``wfbench view``."""
