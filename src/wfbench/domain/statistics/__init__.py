"""Paired statistics per candidate → incumbent pair: effects, intervals, power and planning."""
