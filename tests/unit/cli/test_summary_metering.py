"""The summary's wire-metering clause: a figure when the wire priced the run, never a bare ``n/a``."""

from __future__ import annotations

from wfbench.cli.run.summary import _metered_text
from wfbench.domain.metering.evidence import Spend


def test_a_priced_run_shows_what_the_wire_metered():
    assert _metered_text(Spend(0.5, budget_usd=2.0)) == "; metered at the wire this run: $0.5000 of $2.0000"


def test_an_unpriced_wire_says_so_instead_of_n_a():
    text = _metered_text(Spend(None, unpriced_requests=4))
    assert "n/a" not in text
    assert "not priced at the wire" in text


def test_no_meter_adds_nothing():
    assert _metered_text(None) == ""
