"""Task environments: the spec a corpus declares, its digest, task variables (docs/real-repos.md)."""
