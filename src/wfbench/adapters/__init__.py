"""Adapters: one module per port implementation (sandboxes, agent CLIs, provider, stores, clock)."""
