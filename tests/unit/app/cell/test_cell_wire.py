"""A cell's wire evidence: each session judged against its lease's meter, the row's usage from the wire."""

from __future__ import annotations

import attrs
import pytest

from wfbench.app.cell.wire import BUDGET_DETAIL, CellWire, cut_detail
from wfbench.app.sweep.budget import BudgetStop, metered_spend, spend_fields
from wfbench.domain.metering.evidence import Spend
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.metering.wire import WireMeter, WireRefusal
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.session.outcome import sum_sessions
from wfbench.domain.session.records import SessionRecord, Usage
from wfbench.domain.sweep.pacing import throttle_status
from wfbench.domain.workspace.sandbox import Bridge, SandboxPolicy

PRICES = ModelPrices(3.0, 3.75, 0.30, 15.0)


@attrs.define
class FakeLease:
    """A lease whose meter the test moves forward by hand."""

    bridge: Bridge | None = Bridge(socket="/tmp/x/model.sock", port=41000)
    token: str = "wfbench-proxy-cell"
    now: WireMeter = attrs.field(factory=WireMeter)
    closed: bool = False
    #: Behind a model gateway: the cell's meter at the upstream.
    native: FakeLease | None = None

    def meter(self, *, settle_s: float = 0.0) -> WireMeter:
        return self.now

    def close(self) -> None:
        self.closed = True


def record(
    usage: Usage, *, ok: bool = True, kind: ErrorKind | None = None, cost: float | None = 0.1
) -> SessionRecord:
    return SessionRecord(
        ok=ok,
        error_kind=kind,
        error_detail=None,
        usage=usage,
        cost_usd=cost,
        num_turns=2,
        duration_s=1.0,
        session_id="s1",
        skill_invoked=None,
    )


def session(
    wire: CellWire, lease: FakeLease, measured: Usage | None, reported: SessionRecord
) -> SessionRecord:
    before = wire.before()
    lease.now = lease.now.plus_reply(measured) if measured is not None else lease.now
    return wire.check(reported, before)


def test_a_session_whose_report_matches_the_wire_is_left_as_it_is() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    reported = record(Usage(100, None, None, 20))
    assert session(wire, lease, Usage(100, None, None, 20), reported) is reported
    assert wire.sessions == [WireMeter(requests=1, usage=Usage(100, None, None, 20))]


def test_a_forged_self_report_makes_the_session_evidence_unverified() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    judged = session(wire, lease, Usage(100, None, None, 20), record(Usage(1, None, None, 1)))
    assert (judged.ok, judged.error_kind) == (False, ErrorKind.EVIDENCE_UNVERIFIED)
    assert judged.error_detail is not None
    assert "input_tokens 1 reported, 100 at the wire" in judged.error_detail


def test_only_the_sessions_own_requests_are_compared() -> None:
    """The second session is judged on what happened after the first (snapshot difference)."""
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    session(wire, lease, Usage(500, None, None, 50), record(Usage(500, None, None, 50)))
    second = session(wire, lease, Usage(100, None, None, 20), record(Usage(100, None, None, 20)))
    assert second.error_kind is None


def test_an_errored_session_is_not_compared_it_has_no_measurement_of_its_own() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    errored = record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR, cost=None)
    assert session(wire, lease, Usage(100, None, None, 20), errored) is errored


def test_a_reply_that_could_not_be_metered_to_the_end_leaves_an_ok_session_unverified() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    before = wire.before()
    lease.now = lease.now.plus_reply(Usage(100, None, None, 20)).plus_reply(
        Usage(5, None, None, 1), complete=False
    )
    judged = wire.check(record(Usage(100, None, None, 20)), before)
    assert judged.error_kind is ErrorKind.EVIDENCE_UNVERIFIED  # the report does not match a lower bound
    lease2 = FakeLease()
    wire2 = CellWire(lease2, PRICES)
    before = wire2.before()
    lease2.now = lease2.now.plus_reply(Usage(100, None, None, 20)).plus_reply(None, complete=False)
    judged = wire2.check(record(Usage(100, None, None, 20)), before)
    assert judged.error_kind is ErrorKind.EVIDENCE_UNVERIFIED
    assert judged.error_detail == "1 reply(ies) of the session could not be metered to the end"


def test_a_reply_the_upstream_cut_makes_an_ok_session_a_systemic_session_error() -> None:
    """A provider fault, however the agent ended its session on it (the Claude CLI may end it ok)."""
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    before = wire.before()
    lease.now = lease.now.plus_reply(Usage(100, None, None, 20)).plus_reply(
        Usage(5, None, None, 1), complete=False, by_upstream=True
    )
    judged = wire.check(record(Usage(100, None, None, 20)), before)
    assert (judged.ok, judged.error_kind, judged.error_detail) == (
        False,
        ErrorKind.SESSION_ERROR,
        "the model provider cut 1 reply(ies) of the session short (a provider fault)",
    )
    assert cut_detail(2) == "the model provider cut 2 reply(ies) of the session short (a provider fault)"
    failed = record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR, cost=None)
    own = wire.check(failed, before)  # the session's own error stays; the detail names the cut
    assert (own.ok, own.error_kind, own.error_detail) == (False, ErrorKind.SESSION_ERROR, cut_detail(1))


def test_a_session_the_budget_stopped_is_cancelled_whatever_it_reported() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    before = wire.before()
    lease.now = lease.now.plus_refusal(WireRefusal(403, "budget", "spent"))
    judged = wire.check(record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR), before)
    assert (judged.error_kind, judged.error_detail) == (ErrorKind.CANCELLED, BUDGET_DETAIL)


def test_the_row_takes_usage_and_cost_from_the_wire_and_keeps_the_agents_beside() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    reported = record(Usage(1, 0, 0, 1), cost=0.1234)
    session(wire, lease, Usage(1000, 0, 0, 100), reported)
    lease.now = lease.now.plus_refusal(WireRefusal(404, "route", "GET /v1/models is not an allowed route"))
    total, fields = wire.row(sum_sessions([reported]))
    assert total.usage == Usage(1000, 0, 0, 100)
    assert total.cost_usd == PRICES.cost_usd(Usage(1000, 0, 0, 100))
    assert fields["usage_source"] == "wire"
    assert fields["agent_reported_usage"] == {
        "input_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    assert fields["agent_reported_cost_usd"] == 0.1234
    assert (fields["wire_requests"], fields["wire_refused"]) == (1, 1)
    assert fields["wire_refusals"] == [
        {"status": 404, "kind": "route", "detail": "GET /v1/models is not an allowed route"}
    ]
    assert any("GET /v1/models" in d for d in total.evidence_diagnostics)


def test_without_prices_the_rows_cost_is_unknown_not_zero() -> None:
    lease = FakeLease()
    wire = CellWire(lease, None)
    session(wire, lease, Usage(10, None, None, 2), record(Usage(10, None, None, 2)))
    total, _ = wire.row(sum_sessions([record(Usage(10, None, None, 2))]))
    assert total.cost_usd is None


def test_behind_a_gateway_the_row_is_the_native_usage_with_the_gateways_beside_and_flagged() -> None:
    native = FakeLease(bridge=None, now=WireMeter().plus_reply(Usage(4000, None, 44000, 80)))
    lease = FakeLease(now=WireMeter().plus_reply(Usage(4000, 0, 44000, 80)), native=native)
    total, fields = CellWire(lease, PRICES).row(sum_sessions([record(Usage(4000, 0, 44000, 80))]))
    assert total.usage == Usage(4000, None, 44000, 80)  # the upstream reported no cache writes: unknown
    assert total.cost_usd == PRICES.cost_usd(Usage(4000, None, 44000, 80))
    assert fields["gateway_usage"]["cache_creation_input_tokens"] == 0
    assert fields["gateway_usage_disagreement"] is None  # a gateway's own 0 for an unsent field is no claim

    lease.now = WireMeter().plus_reply(Usage(48000, 0, 44000, 80))  # a gateway counting cached tokens twice
    total, fields = CellWire(lease, PRICES).row(sum_sessions([record(Usage(48000, 0, 44000, 80))]))
    assert total.usage.input_tokens == 4000
    assert fields["gateway_usage_disagreement"] == (
        "the model gateway's usage disagrees with the upstream's:"
        " input_tokens 48000 through the gateway, 4000 at the upstream"
    )
    assert fields["gateway_usage_disagreement"] in total.evidence_diagnostics


def test_sessions_get_the_bridge_the_url_and_the_token() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    policy = SandboxPolicy(workspace="/w", workspace_writable=True, network=False, timeout_s=1.0)
    assert wire.policy(policy).bridges == (lease.bridge,)
    assert wire.policy(attrs.evolve(policy, network=True)).bridges == (
        lease.bridge,
    )  # network: host stays metered
    assert wire.env({"X": "1"}) == {"X": "1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:41000"}
    assert wire.secrets({}) == {"ANTHROPIC_API_KEY": "wfbench-proxy-cell"}


@attrs.define
class FakeGateway:
    spent: Spend

    def lease(self, label: str, *, model: str | None = None, scratch: str | None = None) -> FakeLease:
        return FakeLease()

    def spend(self) -> Spend:
        return self.spent


def test_the_budget_stop_holds_cells_back_once_reached_and_says_so() -> None:
    gateway = FakeGateway(Spend(0.5, 1.0))
    stop = BudgetStop(gateway)
    assert stop.may_start()
    assert stop.note() is None
    gateway.spent = Spend(1.2, 1.0)
    assert not stop.may_start()
    assert not stop.may_start()
    assert stop.stopped
    note = stop.note()
    assert note is not None
    assert note.startswith("[max-cost] metered spend $1.2000 of $1.0000 reached the --max-cost budget")
    assert "2 cell(s) did not start" in note


def test_without_a_gateway_nothing_is_metered_and_nothing_stops() -> None:
    stop = BudgetStop(None)
    assert stop.may_start()
    assert not stop.stopped
    assert metered_spend(None) is None
    assert spend_fields(None) == {"metered_spend_usd": None}


@pytest.mark.parametrize(("spend", "reached"), [(Spend(0.25, 1.0), False), (Spend(1.0, 1.0), True)])
def test_spend_fields_are_json_ready(spend: Spend, reached: bool) -> None:
    assert spend_fields(spend) == {
        "metered_spend_usd": spend.spent_usd,
        "max_cost_usd": 1.0,
        "max_cost_reached": reached,
    }


def test_a_failed_sessions_detail_names_the_provider_faults_the_wire_saw() -> None:
    """An agent that retries a 503 on its own and is killed at the timeout: the proxy names the cause."""
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    before = wire.before()
    lease.now = lease.now.plus_failure(500).plus_failure(503)
    timed_out = attrs.evolve(
        record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR), error_detail="agent process timeout"
    )
    checked = wire.check(timed_out, before)

    assert checked.error_kind is ErrorKind.SESSION_ERROR
    assert checked.error_detail == (
        "agent process timeout; the model provider answered 503 to 2 request(s) of the session"
        " (a provider fault)"
    )
    assert wire.sessions[-1].requests == 2


def test_a_failed_session_the_provider_throttled_runs_again_after_a_back_off() -> None:
    """The wire's wording of a 429 is what the sweep's pacing reads as a throttle (any agent)."""
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    before = wire.before()
    lease.now = lease.now.plus_failure(429).plus_failure(429)
    failed = attrs.evolve(record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR), error_detail="timeout")
    detail = wire.check(failed, before).error_detail
    row = Row(task="t", arm="a", run=0, error_kind=ErrorKind.SESSION_ERROR, extra={"error_detail": detail})
    assert throttle_status(row) == 429


def test_only_this_sessions_provider_faults_are_named_and_an_agent_failure_keeps_its_own_kind() -> None:
    lease = FakeLease(now=WireMeter().plus_failure(529))  # an earlier session's fault
    wire = CellWire(lease, PRICES)
    failed = attrs.evolve(record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR), error_detail="exit 1")
    assert wire.check(failed, wire.before()).error_detail == "exit 1"
    before = wire.before()
    lease.now = lease.now.plus_failure(429)
    skipped = record(Usage(), ok=False, kind=ErrorKind.SKILL_NOT_INVOKED)
    assert wire.check(skipped, before) is skipped


def test_a_failed_sessions_detail_names_a_reply_the_provider_cut() -> None:
    lease = FakeLease()
    wire = CellWire(lease, PRICES)
    before = wire.before()
    lease.now = lease.now.plus_reply(Usage(100, None, None, 20), complete=False, by_upstream=True)
    failed = attrs.evolve(record(Usage(), ok=False, kind=ErrorKind.SESSION_ERROR), error_detail="timeout")
    assert wire.check(failed, before).error_detail == f"timeout; {cut_detail(1)}"
