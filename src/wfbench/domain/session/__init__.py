"""Agent sessions as values: what a session was asked and what it did (records, usage),
reading its event stream into a verdict, and folding a cell's sessions into its outcome."""
