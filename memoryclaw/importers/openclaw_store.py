"""Where an OpenClaw install keeps its memory, and reading it (never writing it).

Locations, as OpenClaw 2026.9 documents them (``docs/concepts/agent-workspace.md``,
``docs/reference/session-management-compaction/store.md``):

* state folder: ``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``; config ``openclaw.json`` in it
  (``$OPENCLAW_CONFIG_PATH`` overrides);
* an agent's workspace: ``agents.entries.<id>.workspace``; else, in a roster of several
  agents, ``<agents.defaults.workspace>/<id>`` or ``<state>/workspace-<id>``; else (the
  default or only agent) ``agents.defaults.workspace`` or ``<state>/workspace``.  It holds
  ``MEMORY.md``, ``USER.md`` and the daily notes ``memory/YYYY-MM-DD.md``;
* session transcripts: the per-agent SQLite store
  ``<state>/agents/<id>/agent/openclaw-agent.sqlite`` (tables ``session_windows``: session id
  -> session key, and ``transcript_events``: one JSON event per row), and, from older
  installs, ``<state>/agents/<id>/sessions/*.jsonl`` (one JSON event per line; the session
  keys in ``sessions.json`` beside them).  Both hold the same events: a ``session`` header,
  then ``message`` entries of role ``user``, ``assistant`` or ``toolResult``.

The SQLite store is opened read-only, so a running OpenClaw is never disturbed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..vault.inputs import bounded_lines, parse_json_line
from ..vault.naming import plural
from .parsers import daily_note_date, memory_items

DEFAULT_AGENT = "main"
STORE_FILE = "openclaw-agent.sqlite"
MEMORY_FILES = ("MEMORY.md", "USER.md")
_AGENT_ID_RE = re.compile(r"^[A-Za-z0-9][\w-]{0,63}$")


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """OpenClaw's state folder: ``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``."""
    env = os.environ if env is None else env
    explicit = env.get("OPENCLAW_STATE_DIR")
    return Path(explicit).expanduser() if explicit else Path("~/.openclaw").expanduser()


def load_config(state: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """OpenClaw's config (``openclaw.json``); empty when there is none.  A config that is
    not plain JSON (OpenClaw also reads JSON5) leaves every location at its default."""
    env = os.environ if env is None else env
    path = Path(env.get("OPENCLAW_CONFIG_PATH") or state / "openclaw.json").expanduser()
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class AgentPlace:
    """One OpenClaw agent: its id, its workspace and its state folder."""

    agent: str
    workspace: Path
    state: Path  # <state>/agents/<id>


def _entries(config: Mapping[str, Any]) -> dict[str, Any]:
    agents = config.get("agents")
    entries = agents.get("entries") if isinstance(agents, dict) else None
    return entries if isinstance(entries, dict) else {}


def _default_workspace(config: Mapping[str, Any]) -> str | None:
    agents = config.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    value = defaults.get("workspace") if isinstance(defaults, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def workspace_for(agent: str, state: Path, config: Mapping[str, Any]) -> Path:
    """Where ``agent``'s workspace is, by OpenClaw's rules (see the module docstring)."""
    entries = _entries(config)
    entry = entries.get(agent)
    own = entry.get("workspace") if isinstance(entry, dict) else None
    if isinstance(own, str) and own.strip():
        return Path(own).expanduser()
    default = _default_workspace(config)
    defaults = [a for a, e in entries.items() if isinstance(e, dict) and e.get("default")]
    first = defaults[0] if defaults else DEFAULT_AGENT
    if len(entries) > 1 and agent != first:
        return Path(default).expanduser() / agent if default else state / f"workspace-{agent}"
    return Path(default).expanduser() if default else state / "workspace"


def agent_places(
    state: Path, config: Mapping[str, Any], only: str | None = None
) -> list[AgentPlace]:
    """Every agent OpenClaw knows (configured, or with a state folder), ``main`` first;
    just ``only`` when given."""
    found = {DEFAULT_AGENT, *_entries(config)}
    agents_dir = state / "agents"
    if agents_dir.is_dir():
        found |= {p.name for p in agents_dir.iterdir() if p.is_dir()}
    if only is not None:
        if only not in found:
            known = ", ".join(sorted(found))
            problem = f"{only!r} is not an agent of this OpenClaw (it has {known})"
            raise InvalidInputError("agent", problem, source=str(state))
        found = {only}
    ordered = sorted(found, key=lambda a: (a != DEFAULT_AGENT, a))
    places = []
    for agent in ordered:
        if _AGENT_ID_RE.match(agent):
            places.append(
                AgentPlace(agent, workspace_for(agent, state, config), agents_dir / agent)
            )
    return places


def memory_files(workspace: Path) -> list[str]:
    """The workspace's memory files (``MEMORY.md``, ``USER.md``, the undated notes of
    ``memory/``), as paths relative to it."""
    found = [name for name in MEMORY_FILES if (workspace / name).is_file()]
    return found + [
        rel for rel in _memory_folder(workspace) if daily_note_date(Path(rel).name) is None
    ]


def daily_notes(workspace: Path) -> list[str]:
    """The workspace's daily notes (``memory/YYYY-MM-DD*.md``), relative to it, oldest first."""
    return [rel for rel in _memory_folder(workspace) if daily_note_date(Path(rel).name) is not None]


def _memory_folder(workspace: Path) -> list[str]:
    folder = workspace / "memory"
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(
        f"memory/{p.name}"
        for p in folder.iterdir()
        if p.suffix == ".md" and p.is_file() and not p.is_symlink()
    )


@dataclass(frozen=True)
class StoredSession:
    """One session transcript: agent, session id and key, where it was read, its events
    (position in the store, event), and how many events could not be read."""

    agent: str
    session_id: str
    key: str
    origin: str
    events: tuple[tuple[int, dict[str, Any]], ...]
    unreadable: int = 0


def sessions(place: AgentPlace, skipped: list[str] | None = None) -> list[StoredSession]:
    """Every session transcript of the agent: the SQLite store's, then those only in
    legacy JSONL files.  A store row that is not what OpenClaw writes is left out, and why
    (naming the store file and the row) is added to ``skipped``."""
    found = _store_sessions(place, [] if skipped is None else skipped)
    known = {s.session_id for s in found}
    found += [s for s in _jsonl_sessions(place) if s.session_id not in known]
    return found


# Each value with its SQLite storage class, so that a row whose columns hold other types
# than OpenClaw writes (a text seq, a BLOB or NULL id) is told apart and left out by name.
_WINDOWS_SQL = (
    "SELECT session_id, typeof(session_id), session_key, typeof(session_key) "
    "FROM session_windows ORDER BY session_id"
)
_EVENTS_SQL = (
    "SELECT session_id, typeof(session_id), seq, typeof(seq), event_json, typeof(event_json) "
    "FROM transcript_events ORDER BY session_id, seq"
)


def _store_sessions(place: AgentPlace, skipped: list[str]) -> list[StoredSession]:
    path = place.state / "agent" / STORE_FILE
    if not path.is_file():
        return []
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InvalidInputError("transcripts", f"cannot open: {exc}", source=str(path)) from None
    # Text is decoded here, not by sqlite3, so a value that is not UTF-8 skips its row
    # instead of failing the whole store.
    connection.text_factory = bytes
    try:
        windows = connection.execute(_WINDOWS_SQL).fetchall()
        rows = connection.execute(_EVENTS_SQL).fetchall()
    except sqlite3.Error as exc:
        problem = f"not an OpenClaw session store this version reads ({exc})"
        raise InvalidInputError("transcripts", problem, source=str(path)) from None
    finally:
        connection.close()
    keys: dict[str, str] = {}
    broken: set[str] = set()  # sessions whose key cannot be read: their events are left out
    for number, (sid, sid_type, key, key_type) in enumerate(windows, start=1):
        window_id, key_text = _text(sid, sid_type), _text(key, key_type)
        if window_id is None or key_text is None or not key_text.strip():
            where = f"session_windows row {number} (session_id {_shown(sid, sid_type)})"
            what = "session_id" if window_id is None else "session_key"
            skipped.append(f"{path}: {where}: {what} is not text; its session is left out")
            if window_id is not None:
                broken.add(window_id)
            continue
        keys[window_id] = key_text
    grouped: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    unreadable: dict[str, int] = {}
    for number, (sid, sid_type, seq, seq_type, text, text_type) in enumerate(rows, start=1):
        event_session = _text(sid, sid_type)
        why = _event_row_problem(event_session, seq_type, text_type)
        if why is not None or event_session is None:
            where = f"transcript_events row {number} (session_id {_shown(sid, sid_type)}, "
            where += f"seq {_shown(seq, seq_type)})"
            skipped.append(f"{path}: {where}: {why or 'session_id is not text'}")
            continue
        if event_session in broken:
            continue
        event = _event(_text(text, text_type))
        if event is None:  # compressed (event_zstd) or broken: counted, never guessed at
            unreadable[event_session] = unreadable.get(event_session, 0) + 1
            continue
        grouped.setdefault(event_session, []).append((int(seq), event))
    return [
        StoredSession(
            place.agent,
            session_id,
            keys.get(session_id) or _fallback_key(place.agent, session_id),
            str(path),
            tuple(grouped.get(session_id, [])),
            unreadable.get(session_id, 0),
        )
        for session_id in sorted(set(grouped) | set(unreadable))
    ]


def _text(value: Any, kind: bytes | str) -> str | None:
    """A TEXT column's value as a string; None for any other type or bytes not UTF-8."""
    if _kind(kind) != "text" or not isinstance(value, bytes):
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _kind(kind: bytes | str) -> str:
    return kind.decode("ascii", "replace") if isinstance(kind, bytes) else kind


def _event_row_problem(
    session_id: str | None, seq_type: bytes | str, text_type: bytes | str
) -> str | None:
    if session_id is None:
        return "session_id is not text"
    if _kind(seq_type) != "integer":
        return f"seq is {_kind(seq_type)}, not an integer"
    if _kind(text_type) not in ("text", "null"):  # NULL: the event is in event_zstd
        return f"event_json is {_kind(text_type)}, not text"
    return None


def _shown(value: Any, kind: bytes | str) -> str:
    """A column value as a reason shows it: short, and a BLOB by its size only."""
    name = _kind(kind)
    if name == "blob":
        return f"a BLOB of {len(value)} bytes"
    if name == "null":
        return "NULL"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _event(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        value = parse_json_line(text)
    except InvalidInputError:
        return None
    return value if isinstance(value, dict) else None


def _fallback_key(agent: str, session_id: str) -> str:
    """The key OpenClaw gives a session run by id alone (``openclaw agent --session-id``)."""
    return f"agent:{agent}:explicit:{session_id}"


def _legacy_keys(folder: Path) -> dict[str, str]:
    """Session id -> session key, from a legacy ``sessions.json``."""
    try:
        value = json.loads((folder / "sessions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {
        str(entry["sessionId"]): str(key)
        for key, entry in value.items()
        if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str)
    }


def _jsonl_sessions(place: AgentPlace) -> list[StoredSession]:
    folder = place.state / "sessions"
    if not folder.is_dir():
        return []
    keys = _legacy_keys(folder)
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.is_symlink() or not path.is_file():
            continue
        events: list[tuple[int, dict[str, Any]]] = []
        unreadable = 0
        with path.open("rb") as handle:
            for number, line in enumerate(bounded_lines(handle), start=1):
                if line is None or not line.strip():
                    unreadable += line is None
                    continue
                event = _event(line.decode("utf-8", "replace"))
                if event is None:
                    unreadable += 1
                else:
                    events.append((number, event))
        header = next((e for _, e in events if e.get("type") == "session"), {})
        session_id = str(header.get("id") or path.stem)
        key = keys.get(session_id) or _fallback_key(place.agent, session_id)
        out.append(
            StoredSession(place.agent, session_id, key, str(path), tuple(events), unreadable)
        )
    return out


def existing_memory(state: Path, config: Mapping[str, Any]) -> list[str]:
    """What memory an OpenClaw install already holds, in words (empty: none)."""
    found = []
    for place in agent_places(state, config):
        files = [f for f in memory_files(place.workspace) if f != "USER.md" or _edited_user(place)]
        notes = daily_notes(place.workspace)
        stored = (place.state / "agent" / STORE_FILE).is_file() or any(
            (place.state / "sessions").glob("*.jsonl")
        )
        parts = files + ([plural(len(notes), "daily note")] if notes else [])
        parts += ["session transcripts"] if stored else []
        if parts:
            found.append(f"agent {place.agent}: {', '.join(parts)}")
    return found


def _edited_user(place: AgentPlace) -> bool:
    """Whether USER.md holds a directive (the template OpenClaw seeds holds only a placeholder)."""
    try:
        text = (place.workspace / "USER.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(memory_items(text, user_model=True))


def iter_sessions(places: list[AgentPlace]) -> Iterator[StoredSession]:
    """The session transcripts of every place, agent by agent."""
    for place in places:
        yield from sessions(place)
