"""Tombstones: what was forgotten, kept as keyed hashes so that it stays forgotten.

Each ``forget`` writes one file under ``semantic/_forgotten/`` (tracked, so a forget travels
with a sync to every device) holding a random key and the keyed SHA-256 of each forgotten
line, turn text, fact line and episode id, never their text (nor the words of the query,
which a dictionary would give back).  Whatever a sync merges in and whatever an importer is
about to write is checked against them (:class:`Tombstones`): a line, turn or fact whose
normalised text hashes to a tombstone, or an episode whose id does, is dropped again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .files import SEMANTIC_DIR, atomic_write, ensure_dir, resolve_inside
from .words import composed

TOMBSTONE_DIR = f"{SEMANTIC_DIR}/_forgotten"
MAX_STONE_BYTES = 8 * 1024 * 1024
_HEADER = "# memoryclaw: hashes of forgotten memories (no text); a sync carries them along"
_WORD_RE = re.compile(r"[^\W_]+")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:#\d{1,7}\s+)?")
_SUFFIXES = ("ing", "ed", "es", "s")


def normalise(text: str) -> str:
    """A line as compared: case folded, whitespace collapsed, a list marker and the closing
    punctuation of a sentence dropped (the same sentence said again ends as it likes).  Other
    punctuation stays: it tells a fact's line (``Ana: x``) from a table cell (``Ana | x``)."""
    return " ".join(_BULLET_RE.sub("", text).casefold().split()).rstrip(" .!?,;…")


_TURN_LINE_RE = re.compile(r"^\s*[-*+]\s+#\d{1,7}\s+(?:[^\s:#*`\[][^:\n]{0,39}?:\s+)?(?=\S)")


_REVIEW_MARK_RE = re.compile(
    r"^\s*[-*+]\s+(?:LOW|CONFLICT|INVALID|UNTRUSTED)(?:\s+\([^)]{0,40}\))?\s+(?=\S)"
)


# Typographic quotes and hyphens as a keyboard or an editor turns them, to their plain letter.
_PLAIN = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2212", "-"),
    }
)


def _forms(norm: str) -> set[str]:
    """A normalised line, and the same with its accents composed and its quotes and hyphens
    plain (the same words typed on another keyboard); both, so tombstones written before
    the plain form was compared still match."""
    if norm.isascii():
        return {norm}
    return {norm, composed(norm).translate(_PLAIN)}


def line_forms(text: str) -> set[str]:
    """The forms a line is compared in: normalised, and for an episode's detail line quoting
    a turn (``- #3 Caroline: text``) also the turn's own text; each also with its accents
    composed and its quotes and hyphens plain."""
    norm = normalise(text)
    if not norm:
        return set()
    marked = _REVIEW_MARK_RE.match(text)  # a line waiting for review quotes what was said
    if marked:
        return {*_forms(norm), *line_forms("- " + text[marked.end() :])} - {""}
    quoted = _TURN_LINE_RE.match(text)
    said = _forms(normalise(text[quoted.end() :])) if quoted else set()
    return {*_forms(norm), *said} - {""}


def _stem(word: str) -> str:
    """A crude stem, the same on both sides (a query for "sail" forgets "sailing")."""
    word = word.removesuffix("'s")
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    """The stemmed, case-folded words of ``text``, its accents composed: "café" typed as "e"
    and a combining accent is the same word (and the accent alone no word break)."""
    return {_stem(w) for w in _WORD_RE.findall(composed(text).casefold())}


def query_terms(keywords: Iterable[str]) -> set[str]:
    """The words a query's keywords consist of: a text matches when it holds all of them."""
    out: set[str] = set()
    for keyword in keywords:
        out |= words(keyword)
    return out


def holds_terms(text: str, terms: set[str]) -> bool:
    """Whether ``text`` holds every one of ``terms`` (none: never)."""
    return bool(terms) and terms <= words(text)


@dataclass
class Stone:
    """One forget's tombstones: a key and the keyed hashes."""

    key: bytes
    lines: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)

    def digest(self, text: str) -> str:
        """The keyed hash of ``text``."""
        # one-shot: a writer checks every turn and line it writes against every forget
        import hmac  # here, as secrets below: a vault with nothing forgotten hashes nothing

        return hmac.digest(self.key, text.encode("utf-8", "surrogatepass"), "sha256").hex()

    def add_line(self, text: str) -> None:
        """Tombstone a line, turn or fact text (by its normalised forms)."""
        self.lines.update(self.digest(form) for form in line_forms(text))

    def add_id(self, ident: str) -> None:
        """Tombstone an episode id or an import's source key."""
        if ident.strip():
            self.ids.add(self.digest("id:" + ident.strip()))

    def empty(self) -> bool:
        """Whether nothing is tombstoned."""
        return not (self.lines or self.ids)

    def render(self) -> str:
        """The file's text."""
        rows = [_HEADER, f"key {self.key.hex()}"]
        rows += [f"id {h}" for h in sorted(self.ids)]
        rows += [f"line {h}" for h in sorted(self.lines)]
        return "\n".join(rows) + "\n"


def new_stone() -> Stone:
    """An empty tombstone set with a fresh key."""
    import secrets

    return Stone(secrets.token_bytes(16))


def parse(text: str) -> list[Stone]:
    """The stones of one tombstone file: each ``key`` line starts one, and the ``line`` and
    ``id`` hashes after it are its own (hashes before any key, or after a key that is not
    hex, belong to no stone)."""
    stones: list[Stone] = []
    stone: Stone | None = None
    for raw in text.splitlines():
        kind, _, value = raw.strip().partition(" ")
        if kind == "key":
            try:
                stone = Stone(bytes.fromhex(value.strip()))
            except ValueError:
                stone = None
                continue
            stones.append(stone)
        elif stone is None:
            continue
        elif kind == "line":
            stone.lines.add(value.strip())
        elif kind == "id":
            stone.ids.add(value.strip())
    return stones


def _hashes(data: bytes) -> set[tuple[bytes, str, str]]:
    return {
        (stone.key, kind, digest)
        for stone in parse(data.decode("utf-8", errors="replace"))
        for kind, digests in (("line", stone.lines), ("id", stone.ids))
        for digest in digests
    }


def keeps_every_stone(old: bytes, new: bytes) -> bool:
    """Whether a tombstone file's ``new`` content still forgets all that its ``old`` one did:
    every hash under the same key, and small enough to be read (:data:`MAX_STONE_BYTES`)."""
    if new == old:
        return True
    if len(new) > MAX_STONE_BYTES:
        return False
    return _hashes(old) <= _hashes(new)


@dataclass
class Tombstones:
    """Every tombstone of a vault, asked whether a text or id was forgotten."""

    stones: list[Stone] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any(not s.empty() for s in self.stones)

    def line(self, text: str) -> bool:
        """Whether this line, turn text or fact line was forgotten."""
        stones = [s for s in self.stones if s.lines]
        if not stones:
            return False
        forms = line_forms(text)
        return any(s.digest(f) in s.lines for s in stones for f in forms)

    def ident(self, ident: str | None) -> bool:
        """Whether this episode id or import source key was forgotten."""
        if not ident or not ident.strip():
            return False
        return any(s.digest("id:" + ident.strip()) in s.ids for s in self.stones if s.ids)

    def speaker(self, name: str) -> bool:
        """Never: a tombstone keeps what was said forgotten, not who said it (a forgotten
        speaker's turns are tombstoned as turns)."""
        return False


def load(root: Path) -> Tombstones:
    """The vault's tombstones (an unreadable file is skipped)."""
    folder = root / TOMBSTONE_DIR
    out = Tombstones()
    if not folder.is_dir() or folder.is_symlink():
        return out
    for path in sorted(folder.glob("*.txt")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_STONE_BYTES:
            continue  # a huge one (from a remote) is not read whole on every check
        try:
            out.stones += parse(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return out


def forgets_so_far(root: Path) -> frozenset[str]:
    """The names of the vault's tombstone files: one more with every forget, here or synced
    from another device (what a process holding memories in memory checks them against)."""
    try:
        return frozenset(n for n in os.listdir(root / TOMBSTONE_DIR) if n.endswith(".txt"))
    except OSError:
        return frozenset()


def tombstone_path(now: datetime | None = None) -> str:
    """A new tombstone file's vault path (one per forget: two devices never edit one file)."""
    import secrets

    moment = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S")
    return f"{TOMBSTONE_DIR}/{moment}-{secrets.token_hex(4)}.txt"


def write(root: Path, rel: str, stone: Stone) -> None:
    """Write one forget's tombstones (durably: the forget relies on them to finish)."""
    path = resolve_inside(root, rel)
    ensure_dir(path.parent)
    atomic_write(path, stone.render())
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
