"""Who may see a memory: where each memory was made, and the rules that admit it to a recall.

Every memory carries the agent it was made by and the scope of the conversation it was made
in (frontmatter ``agent`` / ``scope`` of an episode, the provenance comment of a fact, the
frontmatter of a raw log or of a hand-written fact file).  A scope is one of:

``owner``
    Owner-level: hand-written notes, and every memory that has no scope (vaults made before
    scopes existed).  Recalled in the owner's direct conversations of every agent.
``direct``
    Made in a direct conversation with the owner (or a cron/automation run, or at the
    terminal).  Recalled in the owner's direct conversations and automation runs.
``group:<conversation>`` / ``thread:<conversation>`` / ``peer:<conversation>``
    Made where other people read: a group or channel, a thread, or a direct conversation
    with somebody who is not the owner (``scopes.ownerIds`` says who the owner is).
    ``<conversation>`` is the session key without its ``agent:<id>:`` head.  Recalled only
    in that same conversation.

A request comes with a :class:`RecallContext` (agent, session, kind).  With none of them it
is the owner at the terminal, who sees everything.  Memories of one agent are withheld from
another unless ``scopes.shareAcrossAgents``; a request that names no agent (neither given
nor in its session key) is agent ``main``, the agent a turn logged without one is filed
under.  :func:`admit` says, for one memory, whether it is admitted and by which rule;
:func:`sql_filter` is the same rule as an SQL condition.

A context fails closed.  An agent id that is empty, or holds spaces or control characters,
is refused (:class:`InvalidInputError`).  A session key is read folded (NFKC, look-alike
colons as colons: ``ａｇｅｎｔ：main：…`` is ``agent:main:…``), and one that does not parse
(empty, with control or invisible characters, too long, or one that starts like
``agent:<id>:<rest>`` and is not one, such as ``agent :main:…``) is the most restricted
requester: it is recalled what every requester may see, which is nothing, since a group sees
only its own conversation.  Any key, an OpenClaw key or another session id, one of whose
parts (split at colons and spaces) is ``group``/``channel`` or ``thread``/``topic``, whatever
its case and wherever it stands, the last part included, is a group or a thread, never a
direct conversation (``telegram:group:-100`` and ``agent:main:telegram:group`` are groups).
An explicit ``kind`` may narrow what the key allows, never widen it: a group or thread key
stays one with ``kind: direct``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..errors import InvalidInputError
from .inputs import label_problem, require_label, require_text

KINDS = ("direct", "group", "thread", "cron")
OWNER, DIRECT = "owner", "direct"
DEFAULT_AGENT = "main"  # the agent of a turn logged, or a request made, without one
MAX_CONVERSATION_CHARS = 400
_SHARED_KINDS = ("group", "thread", "peer")  # conversations other people read
# A conversation is a session id, which may hold spaces (not line breaks or other controls).
_SCOPE_RE = re.compile(
    rf"^(?:owner|direct|(?:group|thread|peer):\S[^\x00-\x1f\x7f\u2028\u2029]"
    rf"{{0,{MAX_CONVERSATION_CHARS - 1}}})$"
)
# OpenClaw's session keys: agent:<id>:<rest>; a group is <channel>:group:<id> or
# <channel>:channel:<id>, a thread appends :thread:<id> (Telegram topics :topic:<id>), a
# direct chat is <mainKey>, dm:<peer>, <channel>:dm:<peer> or <channel>:<account>:dm:<peer>.
# A key is read folded (NFKC, these look-alike colons as colons); the words that tell the
# kind are read whatever their case and wherever they stand, the last part included.
_AGENT_KEY_RE = re.compile(r"^agent:(?P<agent>[^:\s]+):(?P<rest>\S+)$", re.IGNORECASE)
_PEER_RE = re.compile(r"(?:^|:)dm:(?P<peer>[^:]+)$", re.IGNORECASE)
_COLONS = str.maketrans(
    dict.fromkeys("\u02f8\u0589\u05c3\u0703\u0704\u16ec\u1804\u205a\u2236\u2982\ua6f4\ua789", ":")
)
_PARTS_RE = re.compile(r"[:\s]+")  # a key's parts, for reading its kind and its head
_THREAD_WORDS, _GROUP_WORDS = frozenset({"thread", "topic"}), frozenset({"group", "channel"})


@dataclass(frozen=True)
class SessionInfo:
    """What a session key tells: its agent, the kind of conversation, and its identity."""

    agent: str | None
    kind: str
    conversation: str | None  # the key without "agent:<id>:"; None for the main session
    peer: str | None = None  # the other person of a direct chat, when the key names one
    problem: str | None = None  # why the key does not parse; such a key is a group of none


def fold_session(session: str) -> str:
    """``session`` as it is read: NFKC-folded (full-width ``ａｇｅｎｔ：`` is ``agent:``), with
    look-alike colons as colons.  The key itself is stored as given."""
    if session.isascii():
        return session
    return unicodedata.normalize("NFKC", session).translate(_COLONS)


def _parts(folded: str) -> list[str]:
    """The parts of a folded key, split at colons and spaces, in lower case."""
    return [part for part in _PARTS_RE.split(folded.casefold()) if part]


def session_problem(session: str) -> str | None:
    """Why ``session`` is not a session key (see the module docstring), or None."""
    problem = label_problem("session", session)
    if problem is not None:
        return problem
    if not session.isascii() and any(unicodedata.category(c) == "Cf" for c in session):
        # an invisible character could hide a kind ("gro\u200bup") from the parser
        return "holds an invisible formatting character"
    folded = fold_session(session)
    parts = _parts(folded)
    if parts[:1] == ["agent"]:
        match = _AGENT_KEY_RE.match(folded)
        if match is None or not _parts(match.group("rest")):
            return "starts with agent: but is not agent:<id>:<rest>"
    return None


def parse_session_key(session: str | None) -> SessionInfo:
    """Read a session key: an OpenClaw key (``agent:<id>:<rest>``) or any other session id,
    whose parts tell its kind the same way (a ``telegram:group:-100`` is a group); a key that
    does not parse is the most restricted one (a group no memory was made in)."""
    if session is None:
        return SessionInfo(None, "direct", None)
    problem = session_problem(session)
    if problem is not None:
        return SessionInfo(None, "group", None, problem=problem)
    folded = fold_session(session)
    match = _AGENT_KEY_RE.match(folded)
    agent, rest = (match.group("agent"), match.group("rest")) if match else (None, folded)
    parts = _parts(rest)
    if _THREAD_WORDS.intersection(parts):
        kind = "thread"
    elif _GROUP_WORDS.intersection(parts):
        kind = "group"
    elif match is not None and parts[0] in ("cron", "hook"):
        kind = "cron"
    else:
        kind = "direct"
    peer = _PEER_RE.search(rest)
    return SessionInfo(agent, kind, rest if match else None, peer.group("peer") if peer else None)


def session_kind(info: SessionInfo, kind: str | None) -> str:
    """The kind of a conversation: ``kind`` when given, except that it never widens what the
    key allows (a group or thread key with ``kind`` direct or cron stays a group or thread)."""
    if kind is None or (info.kind in ("group", "thread") and kind not in ("group", "thread")):
        return info.kind
    return kind


def check_kind(
    kind: str | None, *, source: str | None = None, line: int | None = None
) -> str | None:
    """``kind`` if it is a conversation kind, else :class:`InvalidInputError` (naming the
    ``source`` file and ``line`` it was read from, when given)."""
    if kind is not None and kind not in KINDS:
        problem = f"{kind!r} is not one of {', '.join(KINDS)}"
        raise InvalidInputError("kind", problem, source=source, line=line)
    return kind


SCOPE_PROBLEM = "expected owner, direct, or group:/thread:/peer: and a conversation"


def valid_scope(scope: str) -> bool:
    """Whether ``scope`` is written as a scope."""
    return _SCOPE_RE.match(scope) is not None


def conversation_scope(
    session: str | None, kind: str | None = None, owner_ids: tuple[str, ...] = ()
) -> str:
    """The scope of memories made in ``session`` (of ``kind``, when the caller knows it)."""
    info = parse_session_key(session)
    kind = session_kind(info, kind)
    # a group named by no session (or by a key that does not parse) is no conversation in
    # particular: it sees only its own
    conversation = info.conversation or (session if info.problem is None else None) or "?"
    if kind in ("group", "thread"):
        return f"{kind}:{conversation}"
    if info.peer is not None and owner_ids and info.peer not in owner_ids:
        return f"peer:{conversation}"
    return DIRECT


PARTICIPANT = "participant"  # the role of a turn by a person who is not the owner


def speaker_role(role: str, sender: str | None, kind: str, owner_ids: tuple[str, ...] = ()) -> str:
    """The role a turn is logged with: a ``user`` turn is the owner's in a direct
    conversation (unless ``owner_ids`` names others), and in a group or thread only when its
    sender is one of ``owner_ids``; anybody else's is a ``participant``'s."""
    if role != "user":
        return role
    if sender is not None and owner_ids:
        return role if sender in owner_ids else PARTICIPANT
    return PARTICIPANT if kind in ("group", "thread") else role


@dataclass(frozen=True)
class RecallContext:
    """Who is asking: the agent, its session and the kind of conversation.  All None: the
    owner at the terminal.  An agent id or kind that is not one is refused; a session key
    that does not parse is kept, and recalls nothing (:attr:`problem`)."""

    agent: str | None = None
    session: str | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        if self.agent is not None:
            require_label("agent", self.agent)
        if self.session is not None:
            require_text("session", self.session)
        check_kind(self.kind)

    @property
    def is_terminal(self) -> bool:
        """No context given: the owner at the terminal, who sees everything."""
        return self.agent is None and self.session is None and self.kind is None

    @property
    def problem(self) -> str | None:
        """Why this context's session key does not parse, or names another agent than the
        context does (it then recalls nothing), or None."""
        if self.session is None:
            return None
        parsed = parse_session_key(self.session)
        if parsed.problem is not None:
            return parsed.problem
        if self.agent and parsed.agent and self.agent.casefold() != parsed.agent.casefold():
            # one agent may not read another's memories by naming itself beside its key
            return f"it is agent {parsed.agent}'s, but the request names agent {self.agent}"
        return None

    def resolved_agent(self) -> str:
        """The asking agent: given, read from the session key, or :data:`DEFAULT_AGENT`."""
        return self.agent or parse_session_key(self.session).agent or DEFAULT_AGENT

    def scope(self, owner_ids: tuple[str, ...] = ()) -> str:
        """The scope this request's own conversation gives its memories."""
        return conversation_scope(self.session, self.kind, owner_ids)

    def as_dict(self) -> dict[str, str | None]:
        """A JSON-ready form."""
        return {"agent": self.agent, "session": self.session, "kind": self.kind}


@dataclass(frozen=True)
class Policy:
    """The recall rules of one vault for one request."""

    context: RecallContext
    share_across_agents: bool = False
    owner_ids: tuple[str, ...] = ()

    def admit(self, agent: str | None, scope: str | None) -> tuple[bool, str]:
        """Whether a memory made by ``agent`` in ``scope`` may be recalled here, and the rule
        that decided it, in words."""
        if self.context.is_terminal:
            return True, "the owner at the terminal sees everything"
        problem = self.context.problem
        if problem is not None:
            return False, f"the request's session key does not parse ({problem}); it sees nothing"
        asking = self.context.resolved_agent()
        if agent and agent != asking and not self.share_across_agents:
            return False, f"made by agent {agent}; scopes.shareAcrossAgents is off"
        scope = scope or OWNER
        here = self.context.scope(self.owner_ids)
        if here != DIRECT:  # others read this conversation
            if scope == here:
                return True, "made in this conversation"
            if scope in (OWNER, DIRECT):
                return False, f"{_private(scope)}; not recalled where other people read"
            return False, f"made in another conversation ({scope})"
        if scope == OWNER:
            return True, "owner-level memory, recalled in the owner's direct conversations"
        if scope == DIRECT:
            return True, "made in a direct conversation with the owner"
        return False, f"made in {scope}; recalled only there"

    def sql_filter(
        self, agent_column: str = "agent", scope_column: str = "scope"
    ) -> tuple[str, list[str]]:
        """:meth:`admit` as an SQL condition and its parameters (``"1"`` when all pass)."""
        if self.context.is_terminal:
            return "1", []
        if self.context.problem is not None:
            return "0", []
        clauses: list[str] = []
        params: list[str] = []
        if not self.share_across_agents:
            clauses.append(f"({agent_column} IS NULL OR {agent_column} = '' OR {agent_column} = ?)")
            params.append(self.context.resolved_agent())
        here = self.context.scope(self.owner_ids)
        if here == DIRECT:
            clauses.append(f"coalesce({scope_column}, '') IN ('', '{OWNER}', '{DIRECT}')")
        else:
            clauses.append(f"{scope_column} = ?")
            params.append(here)
        return " AND ".join(clauses), params


def _private(scope: str) -> str:
    return "owner-level memory" if scope == OWNER else "made in a direct conversation"
