"""Remove secrets from text before it is written to the vault.

Patterns cover private key blocks, well-known API key and token formats, bearer tokens,
JSON Web Tokens, credentials in URLs and ``password=...``-style assignments.  A match is
replaced by ``[REDACTED:<kind>]`` so the reader still sees that something was there.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("api-key", re.compile(r"\b(?:sk|rk|pk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}")),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_-]{30,}")),
    ("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
    ("url-credentials", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
)
_KEYWORDS = (
    r"password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
    r"|client[_-]?secret|token"
)
# `password: x`, `api_key="x y"`, `token=x`: whatever follows is the secret (quoted values whole).
_ASSIGNMENT_RE = re.compile(
    rf"(?i)(?P<key>\b(?:{_KEYWORDS})\b[\"']?\s*[:=]\s*)"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"',;]{4,}))"
)
# `my password is X` is prose: the word after "is" is a secret unless it is an ordinary word.
_IS_RE = re.compile(
    rf"(?i)(?P<key>\b(?:{_KEYWORDS})\s+is\s+)(?P<bare>[^\s\"',;]{{4,}}?)(?=[.!?]*(?:\s|$))"
)
# A literal every pattern above needs (matched without case, so it finds more, never less):
# text without any of them is returned as it is, without running each pattern over it.
_MAYBE_SECRET_RE = re.compile(
    rf"(?i)-----BEGIN|eyJ|[srp]k-|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abposr]-|AIza|bearer"
    rf"|://|{_KEYWORDS}"
)
_PROSE_WORDS = frozenset(
    """
    also back been being broken changed correct different empty enough expired fine gone good
    hidden incorrect invalid just long lost missing needed never newer older only optional ready
    really required reset revoked right same saved secure shared short still stored strong sure
    that there this too unknown used valid very visible weak what where which wrong safe kept
    """.split()
)


def _replace_value(match: re.Match[str]) -> str:
    groups = match.groupdict()
    value = groups.get("dq") or groups.get("sq") or groups.get("bare") or ""
    if value.startswith("[REDACTED") or value.lower() in _PROSE_WORDS:
        return match.group(0)
    if match.groupdict().get("dq"):
        return f'{match.group("key")}"[REDACTED:secret]"'
    if match.groupdict().get("sq"):
        return f"{match.group('key')}'[REDACTED:secret]'"
    return f"{match.group('key')}[REDACTED:secret]"


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not _MAYBE_SECRET_RE.search(text):
        return text
    for kind, pattern in _PATTERNS:
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    text = _ASSIGNMENT_RE.sub(_replace_value, text)
    return _IS_RE.sub(_replace_value, text)
