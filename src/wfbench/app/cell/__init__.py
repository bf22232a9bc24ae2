"""One cell to its row: context, sessions, measures, review, oracle, events."""
