"""Code review evidence: the agent's review artifact and the hidden labels (strict parsers),
their shared vocabulary, optimal finding-to-label matching, and the review score."""
