"""Which outside files an import reads, and how: the notes of a folder (never a vault's own),
their text with every secret redacted, and the agent and scope a copied vault note keeps.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..vault.config import CONFIG_FILE
from ..vault.files import MAX_FILE_BYTES, SEMANTIC_DIR
from ..vault.inputs import label_problem
from ..vault.redact import redact
from ..vault.scopes import KINDS, OWNER, SCOPE_PROBLEM, conversation_scope, valid_scope
from .parsers import memory_items, written_by_memoryclaw

if TYPE_CHECKING:
    from ..api import Vault

NOTE_FILE_NAMES = frozenset(
    {"memory.md", "user.md", "claude.md", "agents.md", "gemini.md", "memory_summary.md"}
)
SKIPPED_FOLDERS = frozenset({".git", ".obsidian", ".trash", "node_modules", ".memoryclaw"})


def read_outside(path: Path) -> str:
    """A file outside the vault, as text with every secret redacted (line numbers kept); one
    too big to be a note is refused by name.  This is where imported text enters: everything
    an import writes (episodes, facts, pending lines, file names) is made from it, or from a
    name passed through :func:`outside_name`."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        problem = f"{size} bytes, over the {MAX_FILE_BYTES} limit of one note"
        raise InvalidInputError("file", problem, source=str(path))
    return redact(_note_text(path.read_bytes(), path), keep_lines=True)


def _note_text(data: bytes, path: Path) -> str:
    """A note's bytes as text; a binary file (a NUL byte) or one that is not UTF-8 is
    refused by name: stored, it would be an episode the index refuses."""
    nul = data.find(b"\0")
    if nul >= 0:
        problem = f"a binary file, not a note (a NUL byte at offset {nul})"
        raise InvalidInputError("file", problem, source=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        raise InvalidInputError("file", problem, source=str(path)) from None


def outside_name(text: str) -> str:
    """A name from outside (a note's path, an agent id) as an import writes it: redacted,
    since it becomes a ``source``, a heading, a file name and a commit message."""
    return redact(text)


def refuse_inside_vault(vault: Vault, folder: Path) -> None:
    """Refuse to import a vault's own files (this vault's, or another's: a team vault, an old
    one): imported again they would lose their scope (a group's episode filed as the owner's)
    and their review state (a pending or untrusted line filed as a fact).  A folder holding a
    vault is fine: :func:`note_files` leaves the vault out."""
    inside, root = folder.resolve(), vault.root.resolve()
    for place in (inside, *inside.parents):
        if place == root or _is_vault(place):
            problem = f"inside the vault {place}; import notes from a folder outside it"
            raise InvalidInputError("folder", problem, source=str(folder))


def _is_vault(folder: Path) -> bool:
    """Whether ``folder`` is a memoryclaw vault (its configuration and fact folder)."""
    return (folder / CONFIG_FILE).is_file() and (folder / SEMANTIC_DIR).is_dir()


def note_files(folder: Path, vault_root: Path) -> list[Path]:
    """The markdown notes of ``folder`` (recursively), leaving out hidden and tool folders,
    symbolic links, and the vault (or any other) when it lies inside."""
    out: list[Path] = []
    vault = vault_root.resolve()
    stack = [folder]
    while stack:
        current = stack.pop()
        if current.resolve() == vault or _is_vault(current):
            continue
        for entry in sorted(current.iterdir()):
            if entry.is_symlink() or entry.name in SKIPPED_FOLDERS:
                continue
            if entry.is_dir():
                if not entry.name.startswith("."):
                    stack.append(entry)
            elif entry.suffix.lower() == ".md" and entry.is_file():
                out.append(entry)
    return sorted(out)


def kept_scope(meta: dict[str, Any]) -> tuple[str | None, str] | None:
    """The agent and scope a note memoryclaw wrote keeps (None: not such a note); one whose
    scope or agent an import cannot keep is refused by name."""
    if not written_by_memoryclaw(meta):
        return None
    agent, scope, session = meta.get("agent"), meta.get("scope"), meta.get("session")
    if agent is not None and (not isinstance(agent, str) or label_problem("agent", agent)):
        problem = f"its frontmatter agent {agent!r} is not an agent id an import can keep"
        raise InvalidInputError("note", problem)  # the caller names the file
    if scope is None:  # written before scopes: the conversation it was made in says
        kind = meta.get("kind") if meta.get("kind") in KINDS else None
        scope = conversation_scope(session, kind) if isinstance(session, str) and session else OWNER
    if not isinstance(scope, str) or not valid_scope(scope):
        problem = f"its frontmatter scope {scope!r} is not one an import can keep ({SCOPE_PROBLEM})"
        raise InvalidInputError("note", problem)
    return (outside_name(agent) if agent else None), scope


def timestamp_day(meta: dict[str, Any]) -> date | None:
    """The day of an episode's ``timestamp``."""
    value = meta.get("timestamp")
    if isinstance(value, datetime):
        return value.date()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def modified_day(path: Path) -> date:
    """The UTC day ``path`` last changed."""
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date()


def is_fact_note(path: Path, text: str) -> bool:
    """A note whose items become facts: a known memory file, or one mostly made of list items."""
    if path.name.lower() in NOTE_FILE_NAMES:
        return True
    items = memory_items(text)
    bullets = sum(1 for line in text.split("\n") if line.lstrip().startswith(("- ", "* ", "+ ")))
    return bool(items) and bullets * 2 >= len(items)
