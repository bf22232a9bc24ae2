"""``wfbench run``'s options resolved against the corpus: arms, overlay, model, runs, and the warnings.

Everything here happens before any session and fails with one ``InputError`` naming the field.
The warnings say, before a cent is spent, what the sweep cannot deliver: an unpriced model (cost
``n/a``, so the cost gate can only answer ``insufficient_evidence``) or fewer runs than the gate
needs paired.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from wfbench.adapters.gateway.price_table import builtin_prices, load_prices
from wfbench.app.corpus.arm_fit import arm_problems, skill_presence
from wfbench.app.corpus.arms import (
    Arm,
    Overlay,
    check_overlay_arms,
    load_overlay,
    overlay_digest,
    resolve_arms,
)
from wfbench.app.corpus.corpus import Corpus, load_corpus
from wfbench.domain.errors import InputError
from wfbench.domain.metering.prices import PriceTable
from wfbench.domain.promotion.policy import DEFAULT_POLICY, PromotionPolicy
from wfbench.domain.sweep.manifest import check_model_name

if TYPE_CHECKING:
    from wfbench.cli.run.request import RunRequest

DEFAULT_ARMS = ("workflow", "workflow_direct", "baseline")


@attrs.frozen
class Setup:
    """A run's resolved configuration (what the manifest records), plus its warnings."""

    corpus: Corpus
    arms: tuple[Arm, ...]
    overlay: Overlay | None
    overlay_digest: str | None
    model: str
    runs: int
    provider_script: str | None
    warnings: tuple[str, ...]


def resolve_setup(
    corpus_path: str,
    *,
    arms: Sequence[str],
    runs: int | None,
    model: str | None,
    candidate_overlay: str | None,
    provider_script: str | None,
    agent: str,
    policy: PromotionPolicy = DEFAULT_POLICY,
    prices: PriceTable | None = None,
) -> Setup:
    """Load the corpus and resolve the run's options against it (command line first, corpus second).

    ``prices`` (default: the built-in tables) decide which arms warn that their cost will be n/a.

    The default ``--runs`` is the corpus's; else the gate's minimum paired runs when a candidate
    arm runs (fewer can only end ``insufficient_evidence``); else 1.

    Raises:
        InputError: a bad corpus, arm, overlay or model (naming the file or option and the field).
    """
    loaded = load_corpus(corpus_path)
    chosen = resolve_arms(list(arms) or list(loaded.defaults.arms) or list(DEFAULT_ARMS), loaded.arms)
    candidates = [arm for arm in chosen if arm.is_candidate]
    overlay_dir = candidate_overlay or (loaded.defaults.candidate_overlay if candidates else None)
    overlay = None if overlay_dir is None else load_overlay(overlay_dir, candidates)
    has_skill = skill_presence(loaded)
    check_overlay_arms(overlay, chosen, loaded.arms, has_skill=has_skill)
    if model is not None:
        pinned = check_model_name(model)
    else:
        try:
            pinned = check_model_name(loaded.defaults.model, field="--model (or defaults.model)")
        except InputError as exc:
            raise exc.located(source=loaded.path) from None
    count = runs or loaded.defaults.runs or (policy.min_runs if candidates else 1)
    script = os.path.abspath(provider_script) if provider_script else loaded.provider_script
    table = builtin_prices() if prices is None else prices
    kinds = [task.kind for task in loaded.tasks]
    warnings = [
        *_runs_warning(count, candidates, policy),
        *price_warnings(chosen, agent, pinned, table),
        *arm_problems(loaded, chosen, kinds),
    ]
    return Setup(
        corpus=loaded,
        arms=chosen,
        overlay=overlay,
        overlay_digest=None if overlay is None else overlay_digest(overlay),
        model=pinned,
        runs=count,
        provider_script=script,
        warnings=tuple(warnings),
    )


def _runs_warning(runs: int, candidates: Sequence[Arm], policy: PromotionPolicy) -> list[str]:
    if not candidates or runs >= policy.min_runs:
        return []
    return [
        f"--runs {runs}: the gate needs {policy.min_runs} paired runs per task and arm; this sweep can only"
        f" end insufficient_evidence for {', '.join(arm.name for arm in candidates)}"
    ]


def price_warnings(arms: Sequence[Arm], agent: str, model: str, prices: PriceTable) -> list[str]:
    """One warning per model of the sweep that has no price, naming every arm (and agent) that runs it.

    Every agent's cost is its usage metered at the wire times its model's prices, so an unpriced
    model is the one reason a cell's cost is ``n/a`` (never 0).
    """
    by_model: dict[str, list[str]] = {}
    for arm in arms:
        arm_model = arm.model or model
        if prices.prices_for(arm_model) is None:
            arm_agent = arm.agent.name if arm.agent is not None else agent
            by_model.setdefault(arm_model, []).append(f"{arm.name} ({arm_agent})")
    return [
        f"model {name} has no price (built-in tables or --prices FILE): cost_usd will be n/a for arm(s)"
        f" {', '.join(names)}, and the cost gate can only answer insufficient_evidence for them (add the"
        " model to a --prices file, or re-gate on tokens: `wfbench gate DIR --metric output_tokens`)"
        for name, names in sorted(by_model.items())
    ]


def setup_of(request: RunRequest, corpus_path: str, prices: PriceTable | None = None) -> Setup:
    """:func:`resolve_setup` with ``request``'s options (the run's and the dry run's).

    ``prices``: the run's price table (default: ``--prices`` over the built-in tables; a bad file
    raises InputError naming its line and field).
    """
    return resolve_setup(
        corpus_path,
        arms=request.arms,
        runs=request.runs,
        model=request.model,
        candidate_overlay=request.candidate_overlay,
        provider_script=request.provider_script,
        agent=request.agent,
        prices=load_prices(request.prices) if prices is None else prices,
    )


def provider_script_for(request: RunRequest, resolved: str | None) -> str | None:
    """The provider script to serve, or None for ``--base-url``; a conflicting pair is refused.

    Raises:
        InputError: ``--base-url`` with a provider script (the corpus's or ``--provider-script``)
            unless ``--no-provider-script``; ``--no-provider-script`` without ``--base-url``.
    """
    if request.no_provider_script:
        if request.base_url is None:
            raise InputError(
                "--no-provider-script needs --base-url (the endpoint to use instead)",
                field="--no-provider-script",
            )
        if request.provider_script is not None:
            raise InputError(
                "--no-provider-script and --provider-script contradict each other", field="--provider-script"
            )
        return None
    script = resolved
    if request.base_url is not None and script is not None:
        where = "--provider-script" if request.provider_script else f"the corpus's provider_script ({script})"
        raise InputError(
            f"--base-url and {where} conflict: the sweep would silently ignore --base-url;"
            " pass --no-provider-script to run against --base-url",
            field="--base-url",
        )
    return script


def incumbent_overlay_for(request: RunRequest, setup: Setup) -> Overlay | None:
    """The incumbent overlay (``wfbench evolve``), validated against the arms' evaluated skills."""
    if request.incumbent_overlay is None:
        return None
    from wfbench.app.corpus.arms import load_overlay

    return load_overlay(request.incumbent_overlay, setup.arms)
