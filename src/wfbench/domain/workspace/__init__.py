"""Workspaces and sandboxes as values: sandbox policies and results, snapshots, churn,
patches and phase-boundary rules, and hidden oracles with their limits and digests."""
