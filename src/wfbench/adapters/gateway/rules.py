"""What the key proxy lets through: routes, paths, queries, headers and request bodies.

The proxy forwards a request only when all of these hold (each refusal is a
:class:`~wfbench.domain.metering.wire.WireRefusal` recorded in the cell's meter):

* **route**: the method and path are one of the proxy's :class:`Route` entries —
  :data:`ANTHROPIC_ROUTES` (``POST /v1/messages``, ``POST /v1/messages/count_tokens``) by
  default, plus :data:`OPENAI_RESPONSES_ROUTE` (``POST /v1/responses``) for an agent speaking
  OpenAI Responses (``KeyProxy(routes=ANTHROPIC_ROUTES + (OPENAI_RESPONSES_ROUTE,))``), plus
  :data:`GEMINI_ROUTES` (``POST /v1beta/models/{model}:generateContent``,
  ``:streamGenerateContent?alt=sse`` and ``:countTokens``) for Gemini CLI, whose model is in the
  path (checked against the pinned model there);
* **path**: normalized — ASCII, no dot segment, no empty segment (``//``), no percent-encoding,
  no backslash, semicolon or fragment; the query holds only the route's allowed parameters
  (``beta=true`` for Anthropic);
* **body**: at most :data:`MAX_BODY_BYTES`, strict JSON (UTF-8, no duplicate key anywhere, so
  what was checked is what is sent), an object whose ``model`` is the pinned model and whose
  content passes the route's allow-lists (:mod:`wfbench.domain.metering.requests`: top-level
  fields, tool types, content block, source, item and part types; no URL the provider would
  fetch, no provider-side state);
* **headers**: only the route's allow-listed request headers are forwarded (others are dropped,
  never refused); credentials are replaced by the real key.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

import attrs

from wfbench.adapters.gateway.wire_usage import WireProtocol
from wfbench.domain.metering.gemini_requests import GEMINI, check_gemini_content
from wfbench.domain.metering.requests import (
    GATEWAY_RESPONSES,
    MESSAGES,
    RESPONSES,
    RequestRules,
    check_request,
    decode_body,
)

MAX_BODY_BYTES = 32 * 1024 * 1024
_SAFE_PATH = re.compile(r"/[A-Za-z0-9._~/:-]*")
#: ``{model}`` in a route's path: a model name (one path segment, no colon).
MODEL_SLOT = "{model}"
_MODEL_NAME = r"([A-Za-z0-9][A-Za-z0-9._-]{0,127})"
_ANTHROPIC_HEADERS = frozenset(
    {"content-type", "accept", "anthropic-version", "anthropic-beta", "user-agent", "x-app"}
)
_OPENAI_HEADERS = frozenset(
    {
        "content-type",
        "accept",
        "user-agent",
        "openai-beta",
        "originator",
        "session-id",
        "session_id",
        "thread-id",
        "x-client-request-id",
        "x-codex-turn-metadata",
        "version",
    }
)
_GEMINI_HEADERS = frozenset({"content-type", "accept", "user-agent", "x-goog-api-client"})
#: The SDKs' own telemetry headers (OS, runtime, retry count…) carry nothing of the agent's choosing.
_SDK_HEADER_PREFIX = "x-stainless-"


class Refused(Exception):
    """A request the proxy does not forward: HTTP status, refusal kind and a message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


@attrs.frozen
class Route:
    """One allowed (method, path): how its replies report usage (``None``: not metered)."""

    method: str
    path: str
    meter: WireProtocol | None
    #: Request headers forwarded upstream (lower case; ``x-stainless-*`` always are).
    headers: frozenset[str]
    #: Query parameters allowed, with their allowed values.
    query: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    #: What the body may say (None: only the model is checked).
    rules: RequestRules | None = None
    #: The model the request's path names (routes with ``{model}`` in their path, once matched).
    path_model: str | None = None

    def matches(self, path: str) -> str | None:
        """``""`` when ``path`` is this route's, the model it names for a ``{model}`` route, else None."""
        if MODEL_SLOT not in self.path:
            return "" if path == self.path else None
        head, _, tail = self.path.partition(MODEL_SLOT)
        found = re.fullmatch(re.escape(head) + _MODEL_NAME + re.escape(tail), path)
        return None if found is None else found.group(1)


MESSAGES_ROUTE = Route(
    "POST",
    "/v1/messages",
    WireProtocol.ANTHROPIC,
    _ANTHROPIC_HEADERS,
    {"beta": frozenset({"true"})},
    MESSAGES,
)
COUNT_TOKENS_ROUTE = Route(
    "POST", "/v1/messages/count_tokens", None, _ANTHROPIC_HEADERS, {"beta": frozenset({"true"})}, MESSAGES
)
ANTHROPIC_ROUTES = (MESSAGES_ROUTE, COUNT_TOKENS_ROUTE)
#: Codex sends function tools, apply_patch as a custom tool and ``tool_search`` (the provider
#: searching the request's own deferred tools: nothing outside the request).
OPENAI_RESPONSES_ROUTE = Route(
    "POST", "/v1/responses", WireProtocol.OPENAI_RESPONSES, _OPENAI_HEADERS, rules=RESPONSES
)
#: Gemini CLI streams (``alt=sse``); the plain route and token counting are the API's too.
GEMINI_ROUTES = (
    Route(
        "POST",
        "/v1beta/models/{model}:streamGenerateContent",
        WireProtocol.GEMINI,
        _GEMINI_HEADERS,
        {"alt": frozenset({"sse"})},
        GEMINI,
    ),
    Route(
        "POST", "/v1beta/models/{model}:generateContent", WireProtocol.GEMINI, _GEMINI_HEADERS, rules=GEMINI
    ),
    Route("POST", "/v1beta/models/{model}:countTokens", None, _GEMINI_HEADERS, rules=GEMINI),
)


#: The upstream meter behind a model gateway (``litellm_gateway``): Responses as LiteLLM sends it.
GATEWAY_RESPONSES_ROUTE = attrs.evolve(OPENAI_RESPONSES_ROUTE, rules=GATEWAY_RESPONSES)


def route_for(method: str, target: str, routes: tuple[Route, ...]) -> Route:
    """The route of a request target (origin-form ``path[?query]``).

    Raises:
        Refused: 400 for a target that is not a normalized path or has a query the route does not
            allow; 404 for a path that is no route; 405 for a route's path with another method.
    """
    path, _, query = target.partition("?")
    if not path.startswith("/") or "#" in target:
        raise Refused(400, "path", "origin-form targets only")
    segments = path.split("/")[1:]
    if not _SAFE_PATH.fullmatch(path) or any(part in ("", ".", "..") for part in segments):
        raise Refused(400, "path", f"not a normalized path: {_shown(path)}")
    found = [(route, model) for route in routes if (model := route.matches(path)) is not None]
    if not found:
        raise Refused(404, "route", f"{method} {path} is not an allowed route")
    route, model = next(((r, m) for r, m in found if r.method == method), (None, ""))
    if route is None:
        raise Refused(405, "route", f"{method} {path} is not an allowed route")
    if model:
        route = attrs.evolve(route, path_model=model)
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if value not in route.query.get(name, frozenset()):
            raise Refused(400, "query", f"query parameter {_shown(name)} is not allowed on {path}")
    return route


def forwarded_headers(route: Route, presented: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The presented headers the route allows (lower-case names), in their order."""
    return [
        (name, value)
        for name, value in presented
        if name in route.headers or name.startswith(_SDK_HEADER_PREFIX)
    ]


def check_body(route: Route, body: bytes, model: str | None) -> dict[str, object]:
    """The body as checked: strict JSON, the pinned model, the route's allow-lists.

    Raises:
        Refused: 400 (not strict JSON or not an object), 403 (``model``: not the pinned model;
            ``duplicate-key``; ``field``, ``content``, ``server-tool``: see
            :mod:`wfbench.domain.metering.requests`; the detail names the field's path).
    """
    parsed, refusal = decode_body(body)
    if parsed is None:
        assert refusal is not None
        raise Refused(400 if refusal.kind == "body" else 403, refusal.kind, refusal.detail)
    asked = route.path_model if MODEL_SLOT in route.path else parsed.get("model")
    if model is not None and asked != model:
        raise Refused(403, "model", f"model {_shown(str(asked))} is not the pinned model {model}")
    found = None if route.rules is None else check_request(route.rules, parsed)
    if found is None and route.rules is GEMINI:
        found = check_gemini_content(parsed)
    if found is not None:
        raise Refused(403, found.kind, found.message())
    return parsed


def _shown(text: str) -> str:
    """``text`` bounded and printable, for a refusal message."""
    clean = "".join(ch if ch.isprintable() and ch.isascii() else "?" for ch in text)
    return clean[:120]
