"""``wfbench run`` and ``wfbench evolve``: options, flow, dry run, summary, agents, Ray driver and node."""
