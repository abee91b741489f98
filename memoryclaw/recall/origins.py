"""Where a recalled memory came from, in OpenClaw's four origin classes.

OpenClaw's memory runtimes label every search hit with an origin class (its
``concepts/memory-architecture.md``): ``owner`` (typed by the owner), ``agent`` (derived by
the agent from the owner's content), ``untrusted`` (external content: other people in a group,
tool output, imported text) and ``system`` (scaffolding such as a scheduled run's prompt).
OpenClaw injects only ``owner`` and ``agent`` memories on its own.  memoryclaw reads the class
from what it already records, conservatively: anything it cannot place is ``untrusted``,
never ``owner``.

- A memory made where other people read (scope ``group:``/``thread:``/``peer:``), or of a
  team vault, is ``untrusted``, whoever said it.
- A fact: written by hand (``hand``), set by the owner (``user``) or approved in review
  (``review``) is ``owner``; consolidated from a conversation it is ``agent``, ``untrusted``
  at low confidence (a tool's output, a hedge); imported from a file it is ``untrusted``.
- An episode: written by hand (no source log, no session) is ``owner``; imported ``untrusted``;
  memoryclaw's summary of a conversation is ``agent``.
- A quoted line, by its speaker: the owner (``User``) is ``owner`` (``system`` in a scheduled
  run, whose prompt is scaffolding); the assistant is ``agent``; a ``System`` line is
  ``system``; anybody else (a participant, a tool, a labelled key point) is ``untrusted``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..vault.scopes import parse_session_key

OWNER, AGENT, UNTRUSTED, SYSTEM = "owner", "agent", "untrusted", "system"
ORIGINS = (OWNER, AGENT, UNTRUSTED, SYSTEM)
_OWNER_SOURCES = frozenset({"hand", "user", "review"})  # fact provenance the owner wrote
_SHARED_SCOPES = ("group:", "thread:", "peer:")  # conversations other people read


def _shared(scope: str | None, vault: str | None) -> bool:
    return vault is not None or (scope or "").startswith(_SHARED_SCOPES)


def fact_origin(source: str, scope: str | None, confidence: str, vault: str | None = None) -> str:
    """The origin class of a fact with this provenance ``source``, ``scope`` and confidence."""
    if _shared(scope, vault):
        return UNTRUSTED
    if source in _OWNER_SOURCES:
        return OWNER
    if source.startswith("logs/"):  # consolidated from a logged conversation
        return UNTRUSTED if confidence == "low" else AGENT
    return UNTRUSTED  # imported (``openclaw:MEMORY.md:3``) or a source memoryclaw never writes


def episode_origin(
    scope: str | None,
    source: str | None,
    session: str | None,
    tags: Iterable[str],
    vault: str | None = None,
) -> str:
    """The origin class of an episode made in ``scope`` from ``source`` (a raw log) and
    ``session``, with ``tags``."""
    if _shared(scope, vault) or "imported" in tags:
        return UNTRUSTED
    return OWNER if source is None and session is None else AGENT


def line_origin(
    speaker: str | None, scope: str | None, session: str | None, vault: str | None = None
) -> str:
    """The origin class of a quoted line said by ``speaker`` in ``scope`` and ``session``."""
    if _shared(scope, vault):
        return UNTRUSTED
    who = (speaker or "").casefold()
    if who == "user":
        return SYSTEM if parse_session_key(session).kind == "cron" else OWNER
    return {"assistant": AGENT, "system": SYSTEM}.get(who, UNTRUSTED)
