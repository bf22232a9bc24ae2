"""Helpers shared by the test suites: the demo sweep, small corpora, apply/evolve/Ray/repo kits."""
