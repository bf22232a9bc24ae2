"""Usage measured at the wire: what the key proxy saw of a cell, prices, spend and budgets, and the
rule that an agent's self-reported usage must agree with the wire."""
