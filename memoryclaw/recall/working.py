"""Working memory (tier 1, primary design 2.1): what one live session is doing right now.

A long-lived process (the stdio server, a :class:`~memoryclaw.serve.hooks.MemoryHooks`) keeps one
:class:`WorkingMemory` per session in a :class:`WorkingMemories` store; nothing of it is
written to the vault.  It is updated deterministically:

- ``goal``: the current user request (the query of each retrieve, each logged user turn);
- ``plan``: the steps of the active skill when one matches the request, else the steps the
  assistant stated in this session (lines starting "Next", "Then", "I will", numbered or
  bulleted lines of its last reply that had any);
- ``facts``: the facts recalled for this session, keyed ``John email`` (a value or note
  with no field name of its own is keyed by its entity alone: ``Dentist``, never
  ``Dentist value``);
- ``recent_observations``: this session's latest tool calls, tool results and assistant
  replies, each as ``tool: short text``, newest first;
- ``active_skill``: the approved skill matched to the request, or null.

It is capped at ``workingMemory.maxTokens`` estimated tokens (characters / 4, as the payload
counts): the oldest observations go first, then the oldest facts, then the last plan steps,
then the goal is shortened.  The store holds at most ``workingMemory.maxSessions`` sessions,
dropping the least recently used; ``end_session`` clears a session's memory, and a forget
(in this process or any other) drops every session's, rebuilt then from its scrubbed log.

A process that meets a session it has not seen (a restarted server; OpenClaw's
``agent --local``, which runs every turn in a new process) rebuilds the session's goal, stated
plan and observations from the turns of its open raw log, so a session's working memory
outlives the process that built it; once the log is closed, nothing is left to rebuild.  The
facts recalled come back with the next retrieve.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MemoryclawError
from ..vault.config import WorkingMemorySettings
from ..vault.logformat import Turn
from ..vault.recalled import strip_recalled
from ..vault.scrub import FORGOTTEN
from ..vault.skillfiles import skill_steps
from .lines import shorten
from .payload import RetrievePayload, estimate_tokens
from .results import FactResult

GOAL_CHARS = 400  # a pasted document is not a goal: its start says what is asked
STEP_CHARS = 160
OBSERVATION_CHARS = 200
FACT_CHARS = 200
MAX_STEPS = 12
# Count bounds besides the token cap, so a large maxTokens still keeps each session small.
MAX_OBSERVATIONS = 40
MAX_FACTS = 40
LOG = logging.getLogger("memoryclaw.working")

# A stated step: a numbered or bulleted line, or one that says what comes next.
_LISTED_RE = re.compile(r"^(?:\d{1,2}[.)]|[-*•])\s+(?P<step>\S.*)$")
_NEXT_RE = re.compile(
    r"^(?:(?:next|then|after that|i will|i'll|i am going to|i'm going to)\b[\s:,-]*)+"
    r"(?P<step>\S.*)$",
    re.IGNORECASE,
)
_NAMELESS_FIELDS = {"value", "note", ""}  # a fact whose field says nothing about it
# Who asks: the owner, or in a group a participant (memoryclaw.vault.scopes.speaker_role).
_REQUEST_ROLES = {"user", "participant"}


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    return shorten(" ".join(text.split()), limit)


def _tool_output(tool: str, text: str) -> tuple[str, str]:
    """A tool result as it reads: the text parts of an MCP-style ``{"content": [{"type":
    "text", "text": …}]}`` result, and the inner tool's name and result when a host wraps
    them (OpenClaw's ``tool_call`` gives ``{"tool": {"name"}, "result": {…}}``); any other
    text as it is."""
    if not text.lstrip().startswith("{"):
        return tool, text
    try:
        data = json.loads(text)
    except ValueError:
        return tool, text  # cut at the log's size limit, or not JSON at all
    if not isinstance(data, dict):
        return tool, text
    inner = data.get("tool")
    if isinstance(inner, dict) and isinstance(inner.get("name"), str) and "result" in data:
        tool, data = inner["name"], data["result"]
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list):
        return tool, text
    parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return tool, " ".join(parts) if parts else text


def stated_steps(text: str) -> list[str]:
    """The next steps an assistant reply states, in order (at most :data:`MAX_STEPS`)."""
    steps: list[str] = []
    for raw in text.splitlines():
        line = raw.replace("**", "").replace("__", "").strip()  # bold "**Next:**" too
        found = _LISTED_RE.match(line) or _NEXT_RE.match(line)
        if found is None:
            continue
        step = _one_line(found.group("step"), STEP_CHARS)
        if step:
            steps.append(step)
        if len(steps) == MAX_STEPS:
            break
    return steps


def fact_key(fact: FactResult) -> str:
    """How a fact is named in working memory: ``John email``; ``Dentist`` for a plain value."""
    entity = " ".join(fact.entity.split())
    if fact.field in _NAMELESS_FIELDS:
        return entity
    return f"{entity} {' '.join(fact.field.split())}".strip()


@dataclass
class WorkingMemory:
    """One session's working memory; see the module doc for how each part is kept."""

    goal: str = ""
    facts: dict[str, str] = field(default_factory=dict)  # oldest first
    recent_observations: list[str] = field(default_factory=list)  # newest first
    active_skill: str | None = None
    skill_plan: list[str] = field(default_factory=list)
    stated_plan: list[str] = field(default_factory=list)

    @property
    def plan(self) -> list[str]:
        """The active skill's steps when it has any, else the assistant's stated steps."""
        return self.skill_plan if self.active_skill and self.skill_plan else self.stated_plan

    def as_dict(self) -> dict[str, Any]:
        """The ``{goal, plan, facts, recent_observations, active_skill}`` object."""
        return {
            "goal": self.goal,
            "plan": list(self.plan),
            "facts": dict(self.facts),
            "recent_observations": list(self.recent_observations),
            "active_skill": self.active_skill,
        }

    def _texts(self, *, goal: bool = True) -> Iterator[str]:
        if goal and self.goal:
            yield self.goal
        yield from self.plan
        for key, value in self.facts.items():
            yield f"{key} {value}"
        yield from self.recent_observations
        if self.active_skill:
            yield self.active_skill

    def tokens(self) -> int:
        """Estimated tokens of its text (goal, plan, facts, observations, skill)."""
        return estimate_tokens("\n".join(self._texts()))

    def set_goal(self, request: str) -> None:
        """Make ``request`` (a recalled block in it left out) the goal; blank text is ignored."""
        goal = _one_line(strip_recalled(request), GOAL_CHARS)
        if goal:
            self.goal = goal

    def observe(self, role: str, text: str, tool: str | None = None) -> None:
        """Take in one logged turn of this session (a forgotten one says nothing)."""
        if text == FORGOTTEN:
            return
        if role in _REQUEST_ROLES:
            self.set_goal(text)
            return
        if role == "assistant":
            steps = stated_steps(text)
            if steps:
                self.stated_plan = steps
            label = "assistant"
        elif role in {"tool_call", "tool_result", "tool"}:
            name = " ".join((tool or "tool").split())
            if role != "tool_call":
                name, text = _tool_output(name, text)
            label = f"{name} call" if role == "tool_call" else name
        else:
            return
        said = _one_line(text, OBSERVATION_CHARS)
        if said:
            self.recent_observations.insert(0, f"{label}: {said}")
            del self.recent_observations[MAX_OBSERVATIONS:]

    def recall(
        self,
        request: str,
        facts: Iterable[FactResult],
        skill: str | None,
        steps: Sequence[str] = (),
    ) -> None:
        """Take in what a retrieve for ``request`` found: its facts, its active skill."""
        self.set_goal(request)
        self.active_skill = skill
        self.skill_plan = [_one_line(s, STEP_CHARS) for s in steps][:MAX_STEPS] if skill else []
        for fact in facts:
            key, value = fact_key(fact), _one_line(fact.value, FACT_CHARS)
            if fact.field == "note":  # several notes of one entity are all kept
                number = 1
                while self.facts.get(key, value) != value:
                    number += 1
                    key = f"{fact_key(fact)} ({number})"
            self.facts.pop(key, None)  # re-recalled: newest again
            self.facts[key] = value
        while len(self.facts) > MAX_FACTS:
            del self.facts[next(iter(self.facts))]

    def fit(self, max_tokens: int) -> None:
        """Drop what is oldest until it holds at most ``max_tokens`` estimated tokens."""
        while self.tokens() > max_tokens and self.recent_observations:
            self.recent_observations.pop()
        while self.tokens() > max_tokens and self.facts:
            del self.facts[next(iter(self.facts))]
        while self.tokens() > max_tokens and self.plan:
            self.plan.pop()
        if self.tokens() <= max_tokens:
            return
        rest = "\n".join(self._texts(goal=False))
        room = max_tokens * 4 - (len(rest) + 1 if rest else 0)
        self.goal = shorten(self.goal, room) if room > 0 else ""
        if self.tokens() > max_tokens:
            self.goal = ""
        if self.tokens() > max_tokens:
            self.active_skill = None  # a skill name longer than the whole cap


class WorkingMemories:
    """Each live session's working memory, least recently used first; safe across threads."""

    def __init__(
        self,
        settings: WorkingMemorySettings | None = None,
        *,
        restore: Callable[[str], Iterable[Turn]] | None = None,
        forgets: Callable[[], object] | None = None,
    ) -> None:
        self.settings = settings or WorkingMemorySettings()
        # The logged turns of a session this store has not seen (its open raw log), if any.
        self.restore = restore
        # What changes with every forget of the vault (its tombstone files): when it does,
        # every session is rebuilt from its open log, which the forget scrubbed, and the
        # facts recalled before it are dropped (the next retrieve recalls what is left).
        self.forgets = forgets
        self._forgets_seen: object = None
        self._sessions: OrderedDict[str, WorkingMemory] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session: object) -> bool:
        return session in self._sessions

    def _restored(self, session: str) -> WorkingMemory:
        """A session's working memory rebuilt from its logged turns (fails open: empty)."""
        memory = WorkingMemory()
        if self.restore is None or not session:
            return memory
        try:
            turns = list(self.restore(session))
        except (MemoryclawError, OSError) as err:
            LOG.warning("memoryclaw: working memory of session %r not rebuilt: %s", session, err)
            return memory
        for turn in turns:
            memory.observe(turn.role, turn.content, turn.tool)
        memory.fit(self.settings.max_tokens)
        return memory

    def _drop_if_forgotten(self) -> None:
        """Drop every session's memory when the vault forgot something since the last look."""
        if self.forgets is None:
            return
        seen = self.forgets()
        if self._forgets_seen is not None and seen != self._forgets_seen:
            self._sessions.clear()
        self._forgets_seen = seen

    def _touch(
        self, session: str, settings: WorkingMemorySettings | None
    ) -> tuple[WorkingMemory, bool]:
        """The session's memory, now the most recently used, and whether it was rebuilt."""
        self._drop_if_forgotten()
        if settings is not None:
            self.settings = settings  # the vault's, which may have been edited since
        memory = self._sessions.pop(session, None)
        rebuilt = memory is None
        if memory is None:
            memory = self._restored(session)
        self._sessions[session] = memory
        while len(self._sessions) > self.settings.max_sessions:
            self._sessions.popitem(last=False)
        return memory, rebuilt

    def snapshot(
        self, session: str, settings: WorkingMemorySettings | None = None
    ) -> dict[str, Any]:
        """The session's working memory as an object (rebuilt from its open log when this
        store has not seen it; empty when there is none)."""
        with self._lock:
            self._drop_if_forgotten()
            if session not in self._sessions and (self.restore is None or not session):
                return WorkingMemory().as_dict()  # nothing to rebuild: keep no empty entry
            return self._touch(session, settings)[0].as_dict()

    def observe(
        self,
        session: str,
        role: str,
        text: str,
        tool: str | None = None,
        settings: WorkingMemorySettings | None = None,
    ) -> dict[str, Any]:
        """Take in a turn logged in ``session``; its working memory after."""
        with self._lock:
            memory, rebuilt = self._touch(session, settings)
            if not rebuilt or self.restore is None:  # else the turn came back with its log
                memory.observe(role, text, tool)
            memory.fit(self.settings.max_tokens)
            return memory.as_dict()

    def recall(
        self,
        session: str,
        request: str,
        facts: Iterable[FactResult],
        skill: str | None,
        steps: Sequence[str] = (),
        settings: WorkingMemorySettings | None = None,
    ) -> dict[str, Any]:
        """Take in what a retrieve in ``session`` found; its working memory after."""
        with self._lock:
            memory = self._touch(session, settings)[0]
            memory.recall(request, facts, skill, steps)
            memory.fit(self.settings.max_tokens)
            return memory.as_dict()

    def clear(self, session: str) -> bool:
        """Forget the session's working memory (its task is over); whether there was one."""
        with self._lock:
            return self._sessions.pop(session, None) is not None


def with_session(
    payload: RetrievePayload,
    store: WorkingMemories,
    session: str,
    root: Path,
    settings: WorkingMemorySettings,
) -> RetrievePayload:
    """``payload`` with the session's working memory, updated by what it recalled."""
    if payload.skipped is not None:
        # "thanks" recalled nothing and sets no goal: the session's task is what it was
        return dataclasses.replace(payload, working_memory=store.snapshot(session))
    skill = payload.working_memory.get("active_skill")
    skill = skill if isinstance(skill, str) else None
    steps = skill_steps(root, skill) if skill else []
    memory = store.recall(session, payload.query, payload.facts, skill, steps, settings)
    return dataclasses.replace(payload, working_memory=memory)
