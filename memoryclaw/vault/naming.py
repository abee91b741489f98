"""Text made from other text to name things: a slug for a file name, a short stable hash for
an id, and a counted noun for a message (``3 daily notes``).
"""

from __future__ import annotations

import re

_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(text: str, max_length: int = 48) -> str:
    """A lowercase ASCII slug safe in a file name (never empty, never ``..``)."""
    slug = _SLUG_RE.sub("-", text.lower()).strip("-")[:max_length].strip("-")
    return slug or "memory"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` with ``noun``, in the plural unless the count is one (``many``, else the
    noun plus an s): ``1 daily note``, ``3 daily notes``, ``0 entries``."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def short_hash(*parts: str, length: int = 12) -> str:
    """A stable hexadecimal digest of the given strings."""
    import hashlib  # here: a recall hashes nothing, and OpenSSL is slow to load

    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8"), usedforsecurity=False)
    return digest.hexdigest()[:length]
