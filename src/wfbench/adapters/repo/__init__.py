"""Git workspaces: snapshots, bundles, capture, oracle files, skill targets, environments."""
