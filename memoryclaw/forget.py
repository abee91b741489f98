"""Forgetting: remove a memory from every place memoryclaw wrote it.

An episode goes with what was drawn from the same turns: its file; the facts (in the fact
files and ``_pending.md``) whose provenance names its source log and whose value those turns
or the episode hold; and the text of those turns in the processed log, replaced by
:data:`FORGOTTEN` so that every other episode's ``source_turns`` still point at its turns.
A fact goes by its line (a table fact by its cell).  The caller syncs the index, which drops
the rows and vectors, and commits in a git vault; git history keeps the old versions until
:func:`memoryclaw.history.purge_history` rewrites it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import MemoryclawError
from .index import Index
from .notes import TRAILING_COMMENT_RE, dump_log, parse_log, parse_provenance, table_cells
from .review import pending_facts, remove_lines
from .vault import (
    PENDING_FILE,
    PROCESSED_DIR,
    SEMANTIC_LOCK,
    atomic_write,
    file_lock,
    read_text,
    resolve_inside,
)

FORGOTTEN = "[forgotten]"


@dataclass
class Plan:
    """What forgetting removes: episode files, fact rows, pending lines and log turns."""

    episodes: dict[str, str] = field(default_factory=dict)  # vault path -> id
    facts: list[dict[str, Any]] = field(default_factory=list)  # index rows
    pending: set[str] = field(default_factory=set)  # exact lines of _pending.md
    turns: dict[str, set[int]] = field(default_factory=dict)  # processed log -> turn numbers

    def edited(self) -> list[str]:
        """The files edited (not deleted) when this plan is applied."""
        files = {row["path"] for row in self.facts} | set(self.turns)
        return sorted(files | ({PENDING_FILE} if self.pending else set()))


def plan(
    root: Path, index: Index, episodes: Sequence[Mapping[str, Any]], facts: Iterable[dict[str, Any]]
) -> Plan:
    """What to remove for these episode rows and fact rows, with what was drawn from them."""
    out = Plan(episodes={row["path"]: row["id"] for row in episodes}, facts=list(facts))
    known = {row["id"] for row in out.facts}
    for row in episodes:
        source, first, last = row["source"], row["turn_first"], row["turn_last"]
        held = [str(row["summary"]), str(row["details"])]
        if source and first and str(source).startswith(PROCESSED_DIR + "/"):
            numbers = set(range(int(first), int(last or first) + 1))
            held += _turn_texts(root, str(source), numbers)
            out.turns.setdefault(str(source), set()).update(numbers)
        if not source:
            continue
        text = "\n".join(held).casefold()
        for fact in index.fact_rows("source = ?", [source]):
            if fact["id"] not in known and str(fact["value"]).casefold() in text:
                out.facts.append(fact)
                known.add(fact["id"])
        for entry in pending_facts(root):
            comment = TRAILING_COMMENT_RE.search(entry.line)
            origin = parse_provenance(comment.group("body")).get("source") if comment else None
            if origin == source and entry.value.casefold() in text:
                out.pending.add(entry.line)
    return out


def _turn_texts(root: Path, rel: str, numbers: set[int]) -> list[str]:
    try:
        log = parse_log(read_text(root, rel), rel)
    except (MemoryclawError, OSError):  # a missing or broken log has no turns to forget
        return []
    return [turn.content for n, turn in enumerate(log.turns, 1) if n in numbers]


def apply(root: Path, todo: Plan) -> None:
    """Delete the episode files, remove the facts and pending lines, blank the log turns."""
    with file_lock(root, SEMANTIC_LOCK):
        for path in sorted(todo.episodes):
            resolve_inside(root, path).unlink(missing_ok=True)
        by_file: dict[str, list[dict[str, Any]]] = {}
        for row in todo.facts:
            by_file.setdefault(row["path"], []).append(row)
        for path, rows in sorted(by_file.items()):
            _remove_fact_lines(root, path, rows)
        if todo.pending:
            remove_lines(root, PENDING_FILE, todo.pending)
    # Taken after the semantic lock is released: consolidation takes these two the other way.
    with file_lock(root, "logs"):
        for path, numbers in sorted(todo.turns.items()):
            _blank_turns(root, path, numbers)


def _blank_turns(root: Path, rel: str, numbers: set[int]) -> None:
    """Replace these turns' text (and speaker and tool names) by :data:`FORGOTTEN`."""
    if not resolve_inside(root, rel).is_file():
        return
    log = parse_log(read_text(root, rel), rel)
    turns = [
        replace(turn, content=FORGOTTEN, name=None, tool=None) if n in numbers else turn
        for n, turn in enumerate(log.turns, 1)
    ]
    atomic_write(resolve_inside(root, rel), dump_log(log.meta, turns))


def _remove_fact_lines(root: Path, path: str, rows: list[dict[str, Any]]) -> None:
    """Delete bullet/nested fact lines; blank a table fact's cell (other cells stay)."""
    lines = read_text(root, path).split("\n")
    drop: set[int] = set()
    for row in rows:
        at = row["line"] - 1
        if not 0 <= at < len(lines):
            continue
        if row["form"] == "table":
            lines[at] = _blank_table_cell(lines[at], row["entity"], row["value"])
        else:
            drop.add(at)
    kept = [line for i, line in enumerate(lines) if i not in drop]
    atomic_write(resolve_inside(root, path), "\n".join(kept))


def _blank_table_cell(line: str, entity: str, value: str) -> str:
    match = TRAILING_COMMENT_RE.search(line)
    comment = match.group(0) if match else ""
    body = line[: match.start()] if match else line
    cells = table_cells(body)
    if cells and cells[0] == entity:
        cells = [cells[0], *("" if c == value else c for c in cells[1:])]
    return "| " + " | ".join(cells) + " |" + comment
