"""What the key proxy measured of one cell at the wire, outside the sandbox (``docs/security.md``).

A :class:`WireMeter` is a snapshot: the requests forwarded upstream, the usage the upstream
reported in its replies (summed per field; a field no reply reported is ``None``: unknown is not
zero), the replies whose usage could not be read to the end (a stream cut short), and the
requests the proxy refused with why. Snapshots subtract (:meth:`WireMeter.since`), so a cell
meters each of its sessions by the difference between the snapshots before and after it.
"""

from __future__ import annotations

import attrs

from wfbench.domain.session.records import Usage

USAGE_NAMES = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
#: At most this many refusals are kept with their detail (the count keeps growing past it).
MAX_REFUSALS_KEPT = 20


def add_usage(one: Usage, other: Usage) -> Usage:
    """Field by field: the sum of the known values; ``None`` only when neither is known."""
    values: dict[str, int | None] = {}
    for name in USAGE_NAMES:
        left, right = getattr(one, name), getattr(other, name)
        values[name] = None if left is None and right is None else (left or 0) + (right or 0)
    return Usage(**values)


def subtract_usage(later: Usage, earlier: Usage) -> Usage:
    """``later - earlier`` field by field (a field unknown in ``later`` stays unknown)."""
    values: dict[str, int | None] = {}
    for name in USAGE_NAMES:
        after, before = getattr(later, name), getattr(earlier, name)
        values[name] = None if after is None else after - (before or 0)
    return Usage(**values)


def is_provider_fault(status: int) -> bool:
    """True for an upstream status that is the provider's fault: 429 (throttled) or any 5xx."""
    return status == 429 or 500 <= status <= 599


@attrs.frozen
class WireRefusal:
    """One request the proxy refused: its status, a closed-vocabulary kind and a detail for people.

    Kinds: ``auth`` (no or a wrong token), ``route`` (method or path not allowed), ``path`` (not a
    normalized path), ``query``, ``body`` (too large, not strict UTF-8 JSON), ``duplicate-key``,
    ``model`` (not the pinned model), ``server-tool`` (a tool the provider would run on the
    network), ``field`` and ``content`` (not on the content allow-lists of
    :mod:`wfbench.domain.metering.requests`; the detail starts with the field's path),
    ``budget`` (``--max-cost`` reached, or no room left for the request's worst-case cost),
    ``connections`` (the cell's connection cap).
    """

    status: int
    kind: str
    detail: str

    def to_mapping(self) -> dict[str, object]:
        """The JSON form kept in a row."""
        return {"status": self.status, "kind": self.kind, "detail": self.detail}


@attrs.frozen
class WireMeter:
    """One cell's wire evidence so far (see the module docstring)."""

    #: Requests forwarded upstream (whatever their status).
    requests: int = 0
    #: Usage the upstream reported in the replies of metered routes.
    usage: Usage = attrs.field(factory=Usage)
    #: Replies of metered routes whose usage could not be read to the end (cut short, unparsable):
    #: :attr:`usage` holds what they reported before the cut, a lower bound.
    incomplete: int = 0
    #: Of those, the replies the upstream itself ended or garbled while the agent still read them
    #: (not an agent that hung up early): a provider fault, whatever the session made of it.
    cut_upstream: int = 0
    #: Every refusal counted; :attr:`refusals` keeps the first :data:`MAX_REFUSALS_KEPT`.
    refused: int = 0
    refusals: tuple[WireRefusal, ...] = ()
    #: Requests the upstream answered with a provider fault (429 or 5xx), and the last such status.
    upstream_failures: int = 0
    last_failure_status: int | None = None

    def since(self, earlier: WireMeter) -> WireMeter:
        """What happened after ``earlier`` (an older snapshot of the same cell)."""
        failures = self.upstream_failures - earlier.upstream_failures
        return WireMeter(
            requests=self.requests - earlier.requests,
            usage=subtract_usage(self.usage, earlier.usage),
            incomplete=self.incomplete - earlier.incomplete,
            cut_upstream=self.cut_upstream - earlier.cut_upstream,
            refused=self.refused - earlier.refused,
            refusals=self.refusals[len(earlier.refusals) :],
            upstream_failures=failures,
            last_failure_status=self.last_failure_status if failures else None,
        )

    def plus_failure(self, status: int) -> WireMeter:
        """One forwarded request the upstream answered with a provider fault (429 or 5xx)."""
        return attrs.evolve(
            self,
            requests=self.requests + 1,
            upstream_failures=self.upstream_failures + 1,
            last_failure_status=status,
        )

    def plus_reply(
        self, usage: Usage | None, *, complete: bool = True, by_upstream: bool = False
    ) -> WireMeter:
        """One forwarded request more, with the usage its reply reported (``None``: none readable).

        ``complete`` False: the reply was cut short or unparsable, so ``usage`` (what arrived) is a
        lower bound and the reply counts in :attr:`incomplete`; ``by_upstream`` says the upstream
        did that, not the agent, and it counts in :attr:`cut_upstream` too.
        """
        return attrs.evolve(
            self,
            requests=self.requests + 1,
            usage=self.usage if usage is None else add_usage(self.usage, usage),
            incomplete=self.incomplete + (not complete),
            cut_upstream=self.cut_upstream + (by_upstream and not complete),
        )

    def plus_unmetered(self) -> WireMeter:
        """One forwarded request whose route carries no usage (``count_tokens``), or an error reply."""
        return attrs.evolve(self, requests=self.requests + 1)

    def plus_refusal(self, refusal: WireRefusal) -> WireMeter:
        """One refused request more (its detail kept while fewer than the limit are)."""
        kept = self.refusals + ((refusal,) if len(self.refusals) < MAX_REFUSALS_KEPT else ())
        return attrs.evolve(self, refused=self.refused + 1, refusals=kept)
