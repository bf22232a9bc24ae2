"""``wfbench evolve``: a proposer writes candidate skills, each gated by a sweep."""
