"""What every command shares: the vault it works on, JSON and one-line output, a
step's line on a terminal, the options that name the conversation asking."""

from __future__ import annotations

import json
import sys
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..api import Vault
from ..vault.scopes import KINDS, RecallContext

# Characters that would break a message's line or hide or reorder its text on a terminal:
# controls, line and paragraph separators, invisible formatting, lone surrogates.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _one_line(text: str) -> str:
    """``text`` as one printable line: each character that would break the line or hide
    text (a newline in a session key, an escape sequence in a file name) written as its
    Python escape (``\\n``, ``\\x1b``, ``\\u202e``); messages quote outside values so."""
    if text.isprintable():
        return text
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _UNSHOWN else c for c in text)


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, sort_keys=False))


@contextmanager
def _step(what: str, as_json: bool) -> Iterator[None]:
    """On a terminal, one line on stderr for a step that can take a while: what runs, then
    how long it took.  Never with ``--json``, and never off a terminal, where stderr holds
    only the one line of an error."""
    if as_json or not sys.stderr.isatty():
        yield
        return
    click.echo(f"{what}…", nl=False, err=True)
    started = time.monotonic()
    try:
        yield
    except BaseException:
        click.echo(" failed", err=True)
        raise
    click.echo(f" done ({time.monotonic() - started:.1f} s)", err=True)


def _vault(ctx: click.Context) -> Vault:
    vault = Vault.open(ctx.find_root().obj)
    ctx.call_on_close(vault.close)
    return vault


def _as_text(data: bytes) -> str:
    # As Python does for argv: a byte that is not UTF-8 becomes a lone surrogate, which
    # require_text (or the vault, for a turn) then names in a one-line error.
    return data.decode("utf-8", "surrogateescape")


def _context_options(func: Any) -> Any:
    """``--agent``, ``--session`` and ``--kind``: recall as that conversation would."""
    func = click.option(
        "--kind",
        type=click.Choice(KINDS),
        help="Kind of conversation asking (default: from the session key).",
    )(func)
    func = click.option(
        "--session", "session_key", help="Session asking (an OpenClaw session key)."
    )(func)
    return click.option("--agent", help="Agent asking (default: none, the owner sees all).")(func)


def _context(agent: str | None, session_key: str | None, kind: str | None) -> RecallContext | None:
    if agent is None and session_key is None and kind is None:
        return None
    return RecallContext(agent=agent, session=session_key, kind=kind)
