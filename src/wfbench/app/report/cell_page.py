"""The page of one cell: everything behind its numbers, read from the sweep directory only.

In order: the outcome (resolved, error kind and detail, cost, tokens, turns, real cell wall time),
verify (passed and its output), the hidden oracle (passed or failed — never its output), the
review artifact's findings matched against the labels (which finding hit which label, which
label was missed), the patch as a highlighted diff, each session's transcript (assistant text,
every tool call with its input and result, errors), the evidence diagnostics, and every field
of the row. A missing, refused, cut or torn artifact is said as such; the page never fails on
it. All agent-controlled text goes through :func:`~wfbench.app.report.page.esc`, Pygments, or
the transcript reader's bounded text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from wfbench.app.report import fmt
from wfbench.app.report.diff import render_diff
from wfbench.app.report.links import Links
from wfbench.app.report.page import esc, page, status_class
from wfbench.app.report.transcript import Step, read_transcript
from wfbench.domain.ports import ArtifactLike, ArtifactSource
from wfbench.domain.sweep import layout

__all__ = ["ARTIFACT_LIMIT", "render_cell_page"]

ARTIFACT_LIMIT = 8 * 1024 * 1024
PATCH_LIMIT = 2 * 1024 * 1024
_FIELD_LIMIT = 4000


def _state_note(artifact: ArtifactLike, what: str) -> str:
    if artifact.state == "ok":
        return ""
    if artifact.state == "too-large":
        return (
            f'<p class="note">{esc(what)} is {artifact.size:,} bytes: showing the first '
            f"{len(artifact.data):,}.</p>"
        )
    if artifact.state == "missing":
        return (
            f'<p class="problem">{esc(what)} ({esc(artifact.path)}) is missing from the sweep directory.</p>'
        )
    why = f": {artifact.detail}" if artifact.detail else ""
    return (
        f'<p class="problem">{esc(what)} ({esc(artifact.path)}) was not read — '
        f"{esc(artifact.state)}{esc(why)}.</p>"
    )


def _yes_no(value: Any) -> str:
    return "n/a" if value is None else "yes" if value is True else "no" if value is False else str(value)


def _facts(row: Mapping[str, Any]) -> str:
    usage = " / ".join(
        fmt.count(row.get(n))
        for n in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    items = [
        ("cost", fmt.money(row.get("cost_usd"))),
        ("tokens in / out / cache read / cache write", usage),
        ("turns", fmt.count(row.get("num_turns"))),
        ("cell wall time", fmt.na(row.get("cell_wall_s"), ".2f") + " s"),
        ("agent-reported duration", fmt.na(row.get("duration_s"), ".2f") + " s"),
        ("skill invoked", _yes_no(row.get("skill_invoked"))),
        ("reused from an earlier sweep", _yes_no(row.get("reused", False))),
    ]
    return (
        '<div class="facts">'
        + "".join(f"<div><b>{esc(v)}</b><span>{esc(k)}</span></div>" for k, v in items)
        + "</div>"
    )


def _outcome(row: Mapping[str, Any]) -> str:
    kind = row.get("error_kind")
    detail = row.get("error_detail")
    parts = []
    if kind:
        parts.append(
            f'<p class="problem"><b>{esc(kind)}</b>'
            + (f": {esc(str(detail)[:_FIELD_LIMIT])}" if detail else "")
            + "</p>"
        )
    if row.get("review_evidence_detail"):
        parts.append(f'<p class="problem">review evidence: {esc(row["review_evidence_detail"])}</p>')
    verify = row.get("verify_output", row.get("authored_test_output"))
    passed = esc(_yes_no(row.get("authored_tests_passed")))
    shown = (
        f"<pre>{esc(verify[-_FIELD_LIMIT:])}</pre>"
        if isinstance(verify, str) and verify.strip()
        else '<p class="muted">verify printed nothing (or no output was recorded).</p>'
    )
    if row.get("kind") == "review":  # review tasks run neither verify nor an oracle
        return "".join(parts)
    parts.append(f"<h2>Verify (authored tests, model-visible)</h2><p>passed: <b>{passed}</b></p>{shown}")
    parts.append(
        f"<h2>Hidden oracle</h2><p>passed: <b>{esc(_yes_no(row.get('oracle_passed')))}</b> "
        '<span class="muted">(its output is never persisted, so it is never shown)</span></p>'
    )
    return "".join(parts)


def _oracle_outcome(row: Mapping[str, Any], source: ArtifactSource, links: Links) -> str:
    """The oracle's outcome class and, from the harness-only ``oracle.json``, why it failed and the
    expected ids that failed or were missing (for the task's author; never shown to an agent)."""
    outcome = row.get("oracle_outcome")
    if not outcome:
        return ""
    out = [f"<p>oracle outcome: <b>{esc(outcome)}</b>"]
    rel = row.get("oracle_outcome_artifact")
    ids: list[str] = []
    detail = None
    if isinstance(rel, str) and rel:
        artifact = source.artifact(rel, limit=64 * 1024)
        document = _json_object(artifact.text()) if artifact.readable else {}
        ids = [str(i) for i in document.get("failing_ids") or [] if isinstance(i, str)]
        detail = document.get("detail") if isinstance(document.get("detail"), str) else None
        out.append(f' · <a href="{esc(links.raw(rel))}">oracle.json</a>')
    out.append("</p>")
    if detail:
        out.append(f'<p class="problem">why: {esc(detail[:_FIELD_LIMIT])}</p>')
    if ids:
        out.append("<p>expected tests that failed or were missing:</p><ul>")
        out += [f"<li><code>{esc(i)}</code></li>" for i in ids[:50]]
        out.append("</ul>")
    return "".join(out)


def _json_object(text: str) -> Mapping[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _prompts(key: tuple[str, str, int], source: ArtifactSource, links: Links) -> str:
    """The prompt each phase sent, as the harness built it (the cell's ``prompts.json``)."""
    rel = f"{layout.cell_dir(*key)}/{layout.PROMPTS_NAME}"
    artifact = source.artifact(rel, limit=ARTIFACT_LIMIT)
    if artifact.state == "missing":
        return (
            '<h2>Prompts</h2><p class="muted">This cell kept no prompts.json (recorded before wfbench '
            "stored each phase's prompt).</p>"
        )
    out = ["<h2>Prompts</h2>", _state_note(artifact, "prompts.json")]
    phases = _json_object(artifact.text()).get("phases") if artifact.readable else None
    for entry in phases if isinstance(phases, list) else []:
        if not isinstance(entry, Mapping):
            continue
        tools = ", ".join(str(t) for t in entry.get("allowed_tools") or []) or "the agent's defaults"
        facts = (
            f"model {esc(entry.get('model'))} · expected skill {esc(entry.get('expected_skill'))} · "
            f"tools {esc(tools)}"
        )
        out.append(
            f'<details open class="prompt"><summary>{esc(entry.get("phase"))} phase '
            f'<span class="muted">({esc(entry.get("role"))})</span></summary><p class="muted">{facts}</p>'
            f"<pre>{esc(str(entry.get('prompt') or ''))}</pre></details>"
        )
    out.append(f'<p><a href="{esc(links.raw(rel))}">raw prompts.json</a></p>')
    return "".join(out)


def _finding_rows(findings: Sequence[Mapping[str, Any]], matched: Mapping[str, Mapping[str, Any]]) -> str:
    rows = []
    for finding in findings:
        fid = str(finding.get("id"))
        label = matched.get(fid)
        hit = (
            f'<span class="badge resolved">hit {esc(label.get("id"))}</span> {esc(label.get("severity"))} '
            f"{esc(label.get('path'))}:{esc(label.get('line_start'))}–{esc(label.get('line_end'))} "
            f"{esc(label.get('category'))}"
            if label is not None
            else '<span class="badge error">no label</span> false positive'
        )
        where = f"{finding.get('path')}:{finding.get('line')}–{finding.get('end_line')}"
        blocking = " (blocking)" if finding.get("blocking") else ""
        rows.append(
            f"<tr><td>{esc(fid)}</td><td>{esc(finding.get('severity'))}{blocking}</td>"
            f'<td class="mono">{esc(where)}</td><td>{esc(finding.get("category"))}</td>'
            f"<td>{esc(finding.get('scenario'))}<br><span "
            f'class="muted">{esc(finding.get("evidence"))}</span></td><td>{hit}</td></tr>'
        )
    return "".join(rows)


def _score_value(value: Any) -> str:
    return fmt.na(value, ".3f") if isinstance(value, float) else _yes_no(value)


_SCORE_KEYS = (
    "true_positives",
    "false_positives",
    "false_negatives",
    "precision",
    "recall",
    "weighted_f1",
    "blocker_recall",
    "verdict_correct",
)


def _review(row: Mapping[str, Any], source: ArtifactSource, links: Links) -> str:
    """The review section: the score, then the artifact's findings against the labels they matched."""
    if row.get("kind") != "review" and not row.get("review_artifact") and "review_score" not in row:
        return ""
    out = ["<h2>Review</h2>", _review_score(row)]
    name = row.get("review_artifact")
    if not isinstance(name, str) or not name:
        return "".join(out) + '<p class="muted">No review artifact was kept for this cell.</p>'
    artifact = source.artifact(name, limit=ARTIFACT_LIMIT)
    out.append(_state_note(artifact, "the review artifact"))
    if not artifact.readable:
        return "".join(out)
    try:
        document = json.loads(artifact.data)
    except ValueError:
        return (
            "".join(out) + '<p class="problem">The review artifact is not '
            f"JSON.</p><pre>{esc(artifact.text()[:_FIELD_LIMIT])}</pre>"
        )
    matching = row.get("label_matching") if isinstance(row.get("label_matching"), Mapping) else None
    out.append(_review_findings(document, matching, links.raw(name)))
    return "".join(out)


def _review_score(row: Mapping[str, Any]) -> str:
    score = row.get("review_score") if isinstance(row.get("review_score"), Mapping) else {}
    if not score:
        return '<p class="muted">no review score (the artifact was not usable evidence).</p>'
    return (
        "<p>"
        + " · ".join(f"{esc(k.replace('_', ' '))} {esc(_score_value(score.get(k)))}" for k in _SCORE_KEYS)
        + "</p>"
    )


def _review_findings(document: Any, matching: Mapping[str, Any] | None, raw_href: str) -> str:
    """The verdict, the findings with the label each matched, and the labels no finding matched."""
    findings = (
        [f for f in (document.get("findings") or []) if isinstance(f, Mapping)]
        if isinstance(document, Mapping)
        else []
    )
    labels = {
        str(label.get("id")): label
        for label in (matching or {}).get("labels") or []
        if isinstance(label, Mapping)
    }
    pairs = [p for p in (matching or {}).get("pairs") or [] if isinstance(p, Mapping)]
    matched = {str(p.get("finding")): labels.get(str(p.get("label")), {"id": p.get("label")}) for p in pairs}
    verdict = document.get("verdict") if isinstance(document, Mapping) else None
    out = [
        f"<p>verdict: <b>{esc(verdict)}</b> · {len(findings)} finding(s) · <a "
        f'href="{esc(raw_href)}">raw artifact</a></p>'
    ]
    if findings:
        out.append(
            "<table><thead><tr><th>finding</th><th>severity</th><th>where</th><th>category</th><th>scenario "
            "/ evidence</th><th>matched label</th></tr></thead>"
            f"<tbody>{_finding_rows(findings, matched)}</tbody></table>"
        )
    if matching is None:
        out.append(
            '<p class="muted">Which finding hit which label was not recorded for this row (written before '
            "wfbench kept the matching).</p>"
        )
    else:
        hit = {str(p.get("label")) for p in pairs}
        out.append(_missed_labels([label for lid, label in labels.items() if lid not in hit]))
    return "".join(out)


def _missed_labels(missed: Sequence[Mapping[str, Any]]) -> str:
    return (
        "<p><b>Missed labels (false negatives):</b> "
        + (
            ", ".join(
                f"{esc(lab.get('id'))} {esc(lab.get('severity'))} "
                f"{esc(lab.get('path'))}:{esc(lab.get('line_start'))}–{esc(lab.get('line_end'))} "
                f"{esc(lab.get('category'))}"
                for lab in missed
            )
            or "none"
        )
        + "</p>"
    )


def _patch(row: Mapping[str, Any], source: ArtifactSource, links: Links, key: tuple[str, str, int]) -> str:
    if row.get("kind") == "review":
        return ""
    out = ["<h2>Patch</h2>"]
    churn = (row.get("diff_files"), row.get("diff_insertions"), row.get("diff_deletions"))
    out.append(
        f"<p>{esc(fmt.na(churn[0]))} file(s), +{esc(fmt.na(churn[1]))} / −{esc(fmt.na(churn[2]))} lines"
    )
    if row.get("patch_truncated"):
        out.append(' · <span class="flag">truncated at the capture limit</span>')
    out.append("</p>")
    first = None
    for rel in layout.patch_candidates(*key, row.get("patch_artifact")):
        artifact = source.artifact(rel, limit=PATCH_LIMIT)
        if artifact.state != "missing":
            out.append(_state_note(artifact, "the patch"))
            if artifact.readable:
                out.append(
                    f'<p><a href="{esc(links.raw(rel))}">raw patch</a></p>' + render_diff(artifact.text())
                )
            return "".join(out)
        first = first or artifact
    if first is not None and row.get("diff_files") is not None:
        out.append(_state_note(first, "the patch"))
    else:
        out.append(
            '<p class="muted">No patch was captured for this cell (the session did not get that far).</p>'
        )
    return "".join(out)


def _step_html(step: Step) -> str:
    cls = (
        "error"
        if step.error
        else {"assistant": "assistant", "thinking": "assistant", "tool": "tool", "result": "result"}.get(
            step.kind, ""
        )
    )
    body = f"<pre>{esc(step.text)}</pre>" if step.text else ""
    if step.kind == "thinking":
        body = f"<details><summary>thinking</summary>{body}</details>"
    result = ""
    if step.result is not None:
        label = "result (error)" if step.result_error else "result"
        result = (
            f'<div class="ev {"error" if step.result_error else "result"}"><div '
            f'class="who">{esc(label)}</div><pre>{esc(step.result)}</pre></div>'
        )
    return f'<div class="ev {cls}"><div class="who">{esc(step.title)}</div>{body}{result}</div>'


def _transcripts(row: Mapping[str, Any], source: ArtifactSource, links: Links) -> str:
    entries = [e for e in row.get("transcript_artifacts") or [] if isinstance(e, Mapping)]
    out = ["<h2>Transcripts</h2>"]
    if row.get("transcript_missing"):
        out.append(
            '<p class="problem">transcript_missing: no locatable session transcript (skill invocation could '
            "not be verified).</p>"
        )
    if not entries:
        return "".join(out) + '<p class="muted">No transcript was recorded for this cell.</p>'
    for index, entry in enumerate(entries):
        rel = str(entry.get("path"))
        artifact = source.artifact(rel, limit=ARTIFACT_LIMIT)
        name = rel.rsplit("/", 1)[-1]
        steps = read_transcript(artifact.data, cut=artifact.state == "too-large") if artifact.readable else ()
        errors = sum(1 for s in steps if s.error or s.result_error)
        summary = f"{esc(name)} · {len(steps)} step(s)" + (
            f' · <span class="flag">{errors} error(s)</span>' if errors else ""
        )
        body = _state_note(artifact, "this transcript") + "".join(_step_html(s) for s in steps)
        out.append(
            f"<details{' open' if index == len(entries) - 1 else ''}><summary>{summary} · "
            f'<a href="{esc(links.raw(rel))}">raw</a></summary>{body}</details>'
        )
    return "".join(out)


def _diagnostics(row: Mapping[str, Any]) -> str:
    items = row.get("evidence_diagnostics")
    listed = items if isinstance(items, list) else []
    body = "".join(
        f"<li>{esc(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))}</li>"
        for item in listed
    )
    return "<h2>Evidence diagnostics</h2>" + (
        f"<ul>{body}</ul>"
        if body
        else '<p class="muted">none (no shadowing or over-limit file was reported).</p>'
    )


def _fields(row: Mapping[str, Any]) -> str:
    rows = []
    for key, value in row.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(text) > _FIELD_LIMIT:
            text = text[:_FIELD_LIMIT] + f"… ({len(text):,} characters)"
        rows.append(f'<tr><td class="mono">{esc(key)}</td><td class="mono">{esc(text)}</td></tr>')
    return (
        "<details><summary>Every field of the row "
        f"({len(rows)})</summary><table>{''.join(rows)}</table></details>"
    )


def render_cell_page(
    row: Mapping[str, Any] | None,
    key: tuple[str, str, int],
    *,
    source: ArtifactSource,
    links: Links,
    neighbours: tuple[int | None, int | None] = (None, None),
) -> str:
    """The page of cell ``key`` from its raw row (``None``: the row could not be read back)."""
    task, arm, run = key
    crumbs = (
        ("overview", links.overview()),
        (task, links.task(task)),
        (arm, links.group(task, arm)),
        (f"run {run}", None),
    )
    if row is None:
        body = (
            f'<h1>{esc(task)} · {esc(arm)} · run {run}</h1><p class="problem">This cell\'s row could not be '
            "read from results.jsonl.</p>"
        )
        return page(f"{task} {arm} run {run}", body, crumbs=crumbs)
    status = "resolved" if row.get("resolved") is True else str(row.get("error_kind") or "unresolved")
    prev, nxt = neighbours
    nav = " ".join(
        f'<a href="{esc(links.cell(task, arm, other))}">{label}</a>'
        for other, label in ((prev, f"← run {prev}"), (nxt, f"run {nxt} →"))
        if other is not None
    )
    body = (
        f'<h1>{esc(task)} · {esc(arm)} · run {run} <span class="badge '
        f'{status_class(status)}">{esc(status)}</span></h1>'
        f'<nav class="cellnav"><a href="{esc(links.task(task))}">all cells of {esc(task)}</a> {nav}</nav>'
        + _facts(row)
        + _outcome(row)
        + _oracle_outcome(row, source, links)
        + _prompts(key, source, links)
        + _review(row, source, links)
        + _patch(row, source, links, key)
        + _transcripts(row, source, links)
        + _diagnostics(row)
        + "<h2>Row</h2>"
        + _fields(row)
    )
    return page(f"{task} {arm} run {run}", body, crumbs=crumbs)
