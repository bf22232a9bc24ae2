"""Evolving candidate skills: generation records, the loop's stop rules, the proposer's evidence digest."""
