"""Load and bind what a sweep runs on: corpus, arms, plugins, skill bindings, tasks, SWE-bench import."""
