"""Reviewing and stating facts through the facade: pending facts approved or rejected, a value
set by hand, and a fact's history."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError, NotFoundError
from ..share.history import is_repository, value_commits
from ..share.teams import refuse
from ..vault.facts import format_provenance
from ..vault.files import SEMANTIC_LOCK, file_lock
from ..vault.scopes import RecallContext
from ..vault.timestamps import now_utc

if TYPE_CHECKING:
    from ..consolidate.supersede import SupersedeReport
    from ..vault.pending import PendingFact
    from .vault import Vault


def _day(now: datetime | None) -> str:
    """``now``'s UTC date (default: today's), as a fact's dates are written."""
    moment = now or now_utc()
    return (
        (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc))
        .astimezone(timezone.utc)
        .date()
        .isoformat()
    )


def approve_pending(vault: Vault, ident: str, *, now: datetime | None = None) -> PendingFact:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.approve_pending`."""
    refuse(vault.teams, "pending approve", ident)
    from ..consolidate.review import approve

    with file_lock(vault.root, SEMANTIC_LOCK):  # the lines it marks stay where they were
        vault.refresh()
        entry = next((p for p in vault.pending() if p.id == ident), None)
        known: list[dict[str, Any]] = []
        if entry is not None and entry.mark == "CONFLICT":
            known = _current_facts(vault, entry.entity, entry.field)
        message = f"memoryclaw: approve {entry.entity} {entry.field}" if entry else ""
        with vault._committing(message):
            done = approve(vault.root, ident, known, _day(now))
    vault.refresh()
    return done


def _current_facts(vault: Vault, entity: str, field: str) -> list[dict[str, Any]]:
    """Index rows of the current (not superseded) values of ``entity``'s ``field``."""
    return vault.index.fact_rows(
        "lower(entity) = lower(?) AND lower(field) = lower(?) AND superseded = 0",
        [entity, field],
    )


def set_fact(
    vault: Vault, entity: str, field: str, value: str, *, now: datetime | None = None
) -> SupersedeReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.set_fact`."""
    from ..consolidate.review import replace_value
    from ..consolidate.supersede import check_fact

    entity, field, value = check_fact(entity, field, value)
    if vault.settings.privacy.redact_secrets:  # the same redactor every other writer passes
        from ..vault.redact import redact

        entity, field, value = redact(entity), field, redact(f"{field}: {value}")
        value = value.partition(": ")[2]
    day = _day(now)
    with file_lock(vault.root, SEMANTIC_LOCK):  # the lines it marks stay where they were
        vault.refresh()
        known = _current_facts(vault, entity, field)
        first = known[0] if known else {}
        provenance = format_provenance(
            "user", day, "high", agent=first.get("agent"), scope=first.get("scope")
        )
        paths = [str(row["path"]) for row in known]
        with vault._committing(f"memoryclaw: set {entity} {field}"):
            report = replace_value(vault.root, paths, entity, field, value, provenance, day)
    vault.refresh()
    return report


def fact_history(
    vault: Vault, entity: str, field: str | None = None, *, context: RecallContext | None = None
) -> dict[str, Any]:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.fact_history`."""
    if not entity.strip():
        raise InvalidInputError("entity", "must not be empty")
    vault.refresh()
    policy = vault.policy(context)
    where, params = "lower(entity) = lower(?)", [entity.strip()]
    if field is not None and field.strip():
        where, params = f"{where} AND lower(field) = lower(?)", [*params, field.strip()]
    rows = [
        r for r in vault.index.fact_rows(where, params) if policy.admit(r["agent"], r["scope"])[0]
    ]
    if not rows:
        raise NotFoundError("fact", f"{entity} {field or ''}".strip())
    from ..consolidate.supersede import fact_chain

    chain = fact_chain(rows)
    git = is_repository(vault.root)
    commits = (
        value_commits(vault.root, sorted({c.path for c in chain}), [c.value for c in chain])
        if git
        else []
    )
    return {
        "entity": chain[0].entity,
        "field": field.strip().lower() if field else None,
        "chain": [c.as_dict() for c in chain],
        "git": git,
        "commits": [c.as_dict() for c in commits],
    }


def reject_pending(vault: Vault, ident: str) -> PendingFact:
    """Drop a pending fact."""
    refuse(vault.teams, "pending reject", ident)
    from ..consolidate.review import reject

    with file_lock(vault.root, SEMANTIC_LOCK):
        return reject(vault.root, ident)
