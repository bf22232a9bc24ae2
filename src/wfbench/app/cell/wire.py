"""Wire evidence in a cell: sessions reach the model through the cell's lease and are checked against it.

The cell holds one :class:`~wfbench.domain.ports.ModelLease` for its whole life. Each agent
session gets the lease's bridge in its sandbox policy, ``ANTHROPIC_BASE_URL`` = the bridge's
loopback URL and ``ANTHROPIC_API_KEY`` = the lease's dummy token. After the session, the wire
meter's difference over the session is the measurement (``docs/security.md``):

* an ok session a reply of which the upstream cut short (while the agent still read it) becomes
  a ``session-error``: a provider fault, systemic like the CLI's own API errors, however the agent
  ended its session on the cut reply;
* an ok session whose self-reported usage disagrees with the wire becomes ``evidence-unverified``
  with the detail (:func:`~wfbench.domain.metering.evidence.usage_disagreement`), as does one a
  reply of which was cut because the agent hung up early;
* a session the proxy refused because ``--max-cost`` was reached becomes ``cancelled`` (the
  budget stopped it; ``--resume`` with a larger budget runs the cell again);
* the row's four usage fields and ``cost_usd`` are the wire's (cost from the pinned model's
  prices); the agent's own figures are kept beside them in ``agent_reported_usage`` and
  ``agent_reported_cost_usd``, with ``usage_source: "wire"``, ``wire_requests``,
  ``wire_incomplete``, ``wire_refused`` and ``wire_refusals`` (status, kind, detail).
"""

from __future__ import annotations

from typing import Any

import attrs

from wfbench.domain.metering.evidence import usage_disagreement
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.metering.wire import USAGE_NAMES, WireMeter
from wfbench.domain.ports import ModelLease
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.outcome import SessionSum
from wfbench.domain.session.records import SessionRecord, Usage
from wfbench.domain.workspace.sandbox import SandboxPolicy

#: How long a finished session may still have a request in flight at the proxy.
SETTLE_S = 5.0
BASE_URL_VAR = "ANTHROPIC_BASE_URL"
KEY_VAR = "ANTHROPIC_API_KEY"
BUDGET_DETAIL = "stopped by --max-cost: the sweep's metered spend reached its budget"


def cut_detail(replies: int) -> str:
    """The detail of an ok session a reply of which the upstream cut short."""
    return f"the model provider cut {replies} reply(ies) of the session short (a provider fault)"


def failure_detail(wire: WireMeter) -> str:
    """What the proxy saw of the provider's faults in a session: the last status and how many."""
    return (
        f"the model provider answered {wire.last_failure_status} to {wire.upstream_failures}"
        " request(s) of the session (a provider fault)"
    )


def _with_provider_faults(record: SessionRecord, wire: WireMeter) -> SessionRecord:
    """A failed session's record, its detail naming the provider faults the wire saw during it.

    An agent that retries a failing provider on its own (OpenCode: five times, over a minute, no
    setting turns it off) ends at the session timeout with nothing of the cause in its stream:
    the proxy's count says the provider failed it, not the agent.
    """
    if record.error_kind is not ErrorKind.SESSION_ERROR:
        return record
    faults = [
        *([failure_detail(wire)] if wire.upstream_failures else []),
        *([cut_detail(wire.cut_upstream)] if wire.cut_upstream else []),
    ]
    if not faults:
        return record
    return attrs.evolve(record, error_detail="; ".join(filter(None, (record.error_detail, *faults))))


def gateway_evidence(translated: Usage, native: Usage) -> dict[str, Any]:
    """The row fields of a gateway: its translated usage, and how it disagrees with the native usage.

    A field both report must be equal; a field only the gateway reports is not compared (LiteLLM
    reports ``0`` for cache fields the upstream never sent: that is no measurement).
    """
    differences = [
        f"{name} {getattr(translated, name)} through the gateway, {getattr(native, name)} at the upstream"
        for name in USAGE_NAMES
        if getattr(native, name) is not None and getattr(translated, name) != getattr(native, name)
    ]
    detail = "the model gateway's usage disagrees with the upstream's: " + "; ".join(differences)
    return {
        "gateway_usage": {name: getattr(translated, name) for name in USAGE_NAMES},
        "gateway_usage_disagreement": detail if differences else None,
    }


@attrs.define
class CellWire:
    """One cell's lease and what each of its sessions measured."""

    lease: ModelLease
    prices: ModelPrices | None
    sessions: list[WireMeter] = attrs.field(factory=list)

    def policy(self, policy: SandboxPolicy) -> SandboxPolicy:
        """``policy`` with the lease's bridge (also under ``network: host``: model traffic stays metered)."""
        if self.lease.bridge is None:
            return policy
        return attrs.evolve(policy, bridges=(*policy.bridges, self.lease.bridge))

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The session's environment additions with the base URL the agent sees (the bridge's)."""
        if self.lease.bridge is None:
            return env
        return {**env, BASE_URL_VAR: self.lease.bridge.url}

    def secrets(self, secrets: dict[str, str]) -> dict[str, str]:
        """The session's secrets: the lease's dummy token as the API key."""
        return {**secrets, KEY_VAR: self.lease.token}

    def before(self) -> WireMeter:
        """A snapshot to meter the next session against."""
        return self.lease.meter()

    def check(self, record: SessionRecord, before: WireMeter) -> SessionRecord:
        """The session's record, judged against what the wire measured during it."""
        wire = self.lease.meter(settle_s=SETTLE_S).since(before)
        self.sessions.append(wire)
        if any(refusal.kind == "budget" for refusal in wire.refusals):
            return attrs.evolve(record, ok=False, error_kind=ErrorKind.CANCELLED, error_detail=BUDGET_DETAIL)
        if not record.ok or record.error_kind is not None:
            return _with_provider_faults(record, wire)
        if wire.cut_upstream:  # the provider's fault, whatever the agent made of the cut reply
            return attrs.evolve(
                record,
                ok=False,
                error_kind=ErrorKind.SESSION_ERROR,
                error_detail=cut_detail(wire.cut_upstream),
            )
        detail = usage_disagreement(record.usage, wire.usage)
        if wire.incomplete and detail is None:
            detail = f"{wire.incomplete} reply(ies) of the session could not be metered to the end"
        if detail is None:
            return record
        return attrs.evolve(record, ok=False, error_kind=ErrorKind.EVIDENCE_UNVERIFIED, error_detail=detail)

    def row(self, total: SessionSum) -> tuple[SessionSum, dict[str, Any]]:
        """``total`` with the wire's usage and cost, and the row fields that keep the agent's beside them.

        Behind a model gateway the wire is the upstream's native usage (the lease's ``native``
        meter); the gateway's translated figure, as the agent's key proxy saw it, is kept beside
        it (``gateway_usage``) and a field both report differently is flagged.
        """
        meter = self.lease.meter(settle_s=SETTLE_S)
        gateway_fields: dict[str, Any] = {}
        native = getattr(self.lease, "native", None)
        if native is not None:
            translated, meter = meter, native.meter(settle_s=SETTLE_S)
            gateway_fields = gateway_evidence(translated.usage, meter.usage)
        cost = None if self.prices is None else self.prices.cost_usd(meter.usage)
        fields: dict[str, Any] = {
            "usage_source": "wire",
            "agent_reported_usage": {name: getattr(total.usage, name) for name in USAGE_NAMES},
            "agent_reported_cost_usd": total.cost_usd,
            "wire_requests": meter.requests,
            "wire_incomplete": meter.incomplete,
            "wire_refused": meter.refused,
            "wire_refusals": [refusal.to_mapping() for refusal in meter.refusals],
            **gateway_fields,
        }
        diagnostics = [
            f"the key proxy refused a request of this cell: {r.status} {r.kind} ({r.detail})"
            for r in meter.refusals
        ]
        if gateway_fields.get("gateway_usage_disagreement"):
            diagnostics.append(str(gateway_fields["gateway_usage_disagreement"]))
        total = attrs.evolve(
            total,
            usage=meter.usage,
            cost_usd=cost,
            evidence_diagnostics=(*total.evidence_diagnostics, *diagnostics),
        )
        return total, fields
