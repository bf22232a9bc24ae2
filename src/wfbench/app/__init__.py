"""Use cases: load a corpus, plan and run a sweep, render reports, evaluate promotion."""
