"""Sandboxes (bwrap, host), their limits and cgroups, processes, and the network bridge."""
