"""Filing a drafted fact under SPEC 2's rules: a value said again refreshes its line, another
value for a one-valued field is a conflict for review, a doubtful or low-confidence value
waits in pending until a second interaction corroborates it, and what a group participant
says is pending as untrusted until the owner approves it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..index.store import Index
from ..vault.config import ConsolidationSettings, Settings
from ..vault.facts import format_fact_line, format_provenance
from ..vault.files import PENDING_FILE, atomic_write, read_text, resolve_inside
from ..vault.logformat import RawLog
from ..vault.pending import MANY_VALUED, append_line, remove_lines, untrusted_note
from ..vault.scopes import PARTICIPANT
from ..vault.values import value_kind
from .extraction import FactDraft
from .report import ConsolidationReport
from .review import matching, same_value, target_file

_TOOL_OUTPUT_ROLES = frozenset({"tool", "tool_result"})


def _valid(fact: FactDraft) -> bool:
    """Values that claim a kind must be of that kind: an email looks like one, a date parses."""
    kind = value_kind(fact.value)
    if fact.field == "email":
        return kind == "email"
    dated = {"birthday", "deadline", "due", "appointment"}
    if fact.field in dated and re.match(r"^\d{4}-", fact.value):
        try:
            datetime.strptime(fact.value[:10], "%Y-%m-%d")
        except ValueError:
            return False
    if fact.field == "url":
        return kind == "url"
    return bool(fact.value.strip()) and "\n" not in fact.value


def doubtful(fact: FactDraft, rules: ConsolidationSettings) -> bool:
    """Whether ``fact`` is doubtful: of low confidence, or not what its field says (when
    ``consolidation.factValidation`` is on).  With ``consolidation.pendingReview`` such a fact
    waits in ``_pending.md`` until the owner approves it or a second interaction says it."""
    return (rules.fact_validation and not _valid(fact)) or fact.confidence == "low"


def file_fact(
    root: Path,
    settings: Settings,
    index: Index,
    fact: FactDraft,
    source: str,
    log: RawLog,
    report: ConsolidationReport,
    now: datetime,
) -> None:
    """Add one fact under SPEC 2's rules: dedup, conflicts and doubts to pending, provenance."""
    rules = settings.consolidation
    said = log.turns[fact.turn - 1] if 0 < fact.turn <= len(log.turns) else None
    # as of when it was said, not of the run that filed it: a log consolidated weeks later (or
    # imported) must not make its facts look newer than what was said since
    updated = min(said.timestamp, now).date().isoformat() if said else now.date().isoformat()
    if said is not None and said.role in _TOOL_OUTPUT_ROLES:
        fact = replace(fact, confidence="low")  # a tool's output is data, not the owner's word
    provenance = format_provenance(
        source, updated, fact.confidence, agent=log.agent, scope=log.scope
    )
    earlier = [p.line for p in matching(root, fact.entity, fact.field, fact.value)]
    if said is not None and said.role == PARTICIPANT:
        if not earlier:  # only the owner's approval or own word makes it a fact
            body = format_fact_line(fact.entity, fact.field, fact.value)[2:]
            by = untrusted_note(said.name, said.sender, log.scope or log.session or log.path)
            append_line(root, PENDING_FILE, "Pending", f"- UNTRUSTED {body}{by} {provenance}")
            report.pending += 1
        return
    same_key = index.fact_rows(  # a superseded value is history: neither a duplicate nor a conflict
        "lower(entity) = lower(?) AND lower(field) = lower(?) AND superseded = 0",
        [fact.entity, fact.field],
    )
    if any(same_value(row["value"], fact.value) for row in same_key):
        report.facts_refreshed += _refresh(root, same_key, fact, updated)
        return
    line = format_fact_line(fact.entity, fact.field, fact.value, provenance)
    if same_key and fact.field.lower() not in MANY_VALUED:
        was = ", ".join(sorted({str(row["value"]) for row in same_key}))
        if not earlier:
            body = format_fact_line(fact.entity, fact.field, fact.value)[2:]
            append_line(
                root, PENDING_FILE, "Pending", f"- CONFLICT {body} (was {was}) {provenance}"
            )
            report.conflicts += 1
        return
    held = doubtful(fact, rules)
    if earlier and all(source not in p and log.path not in p for p in earlier):
        remove_lines(root, PENDING_FILE, set(earlier))  # a second interaction corroborates
        report.promoted += 1
        held = False
    elif earlier:
        return  # already waiting for review from this same interaction
    if held and rules.pending_review:
        mark = "INVALID" if rules.fact_validation and not _valid(fact) else "LOW"
        append_line(root, PENDING_FILE, "Pending", f"- {mark} {line[2:]}")
        report.pending += 1
        return
    target, heading = target_file(fact.field)
    append_line(root, target, heading, line)
    report.facts_added += 1


def _refresh(root: Path, rows: Sequence[dict[str, Any]], fact: FactDraft, updated: str) -> int:
    """Bump ``updated`` on machine lines with this value (hand lines stay as they are); count."""
    bumped = 0
    for row in rows:
        if row["source"] == "hand" or not same_value(row["value"], fact.value):
            continue
        path = resolve_inside(root, row["path"])
        lines = read_text(root, row["path"]).split("\n")
        old = lines[row["line"] - 1]
        when = re.search(r"updated: ([0-9-]+)", old)
        if when and when.group(1) >= updated:  # said again, but not later than it was
            bumped += 1
            continue
        new = re.sub(r"updated: [0-9-]+", f"updated: {updated}", old, count=1)
        if new != old:
            lines[row["line"] - 1] = new
            atomic_write(path, "\n".join(lines))
        bumped += 1
    return bumped
