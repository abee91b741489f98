"""``memoryclaw serve --stdio``: one long-lived JSON-lines RPC process for agent plugins.

Each request is one line ``{"id", "method", "params"}``; each response is one line
``{"id", "result"}`` or ``{"id", "error": {"code", "message"}}``.  A malformed or failing
request gets an error response and the process lives on.

Error codes follow JSON-RPC where one fits: -32700 not JSON (or not UTF-8, or nested too
deep), -32600 not a request (or an ``id`` that is not a string, number or null, or a line
over :data:`~memoryclaw.vault.inputs.MAX_REQUEST_BYTES`), -32601 no such method, -32602 bad params
(text that is not valid Unicode included), -32000 unexpected failure; 1 is a memoryclaw error
(bad input, missing vault, unknown id ...), whose message is the one-line text the CLI would
print.  When the request's ``id`` cannot be read, the error's ``id`` is null.

A request's ``agent``, ``session`` and ``kind`` are who asks (:class:`RecallContext`):
``retrieve``, ``search``, ``get``, ``fact_history`` and ``forget`` answer as that context
(a ``forget`` removes only what it may see, by id); ``log_turn`` files the turn under them;
any other method acts for the owner on the whole vault and refuses them (-32602) rather than
ignore them.  A yes/no param (``confirm``, ``dry_run``, ``all``...) is a JSON boolean.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import IO, Any

from .. import __version__
from ..api import Vault
from ..errors import InvalidInputError, MemoryclawError, NotFoundError
from ..recall import metrics as recall_metrics
from ..recall.plan import check_query
from ..recall.working import WorkingMemories, with_session
from ..vault.inputs import MAX_REQUEST_BYTES, bounded_lines, parse_json_line, text_problem
from ..vault.logformat import Turn
from ..vault.rawlogs import LoggedTurn, session_turns
from ..vault.scopes import RecallContext
from ..vault.timestamps import now_utc
from ..vault.tombstones import forgets_so_far

PARSE_ERROR, INVALID_REQUEST, NO_METHOD, BAD_PARAMS, INTERNAL = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32000,
)
MEMORY_ERROR = 1
BAD_ID = '"id" must be a number, null or a string of valid Unicode text'

_Handler = Callable[[Vault, Mapping[str, Any]], Any]
CONTEXT_KEYS = ("agent", "session", "kind")  # who asks, for retrieve, search, get and forget
# The methods that answer as a context, and those whose params of these names mean something
# else (the turn's own, the session acted on).  Any other method acts for the owner on the
# whole vault: a context given to it is refused, never silently ignored.
_CONTEXT_METHODS = frozenset({"fact_history", "forget", "get", "profile", "retrieve", "search"})
_OWN_KEYS = {
    "log_turn": frozenset(CONTEXT_KEYS),
    "end_session": frozenset({"session"}),
    "working_memory": frozenset({"session"}),
}


def _text(params: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = params.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(
            key, "required, and must be a string" if required else "must be a string"
        )
    return value


def _context(params: Mapping[str, Any]) -> RecallContext | None:
    """Who asks: ``agent``, ``session`` and ``kind`` params; none of them, the owner."""
    agent, session, kind = (_text(params, key, required=False) for key in CONTEXT_KEYS)
    if agent is None and session is None and kind is None:
        return None
    return RecallContext(agent=agent, session=session, kind=kind)  # it checks the kind


def _retrieve(vault: Vault, params: Mapping[str, Any]) -> Any:
    return vault.retrieve(_text(params, "query") or "", context=_context(params)).as_dict()


def _search(vault: Vault, params: Mapping[str, Any]) -> Any:
    """``search`` (MCP's memory_search too): a query over the length limit is refused."""
    query = _text(params, "query") or ""
    check_query(query)
    return vault.search(
        query,
        limit=_whole(params, "limit", 0),
        context=_context(params),
        explain_scope=_flag(params, "explain_scope"),
        include_archived=_flag(params, "all"),
    ).as_dict()


def _flag(params: Mapping[str, Any], key: str) -> bool:
    """A yes/no param: JSON ``true`` or ``false`` (absent or null: false); anything else,
    ``"yes"`` or ``1`` included, is refused."""
    value = params.get(key)
    if value is not None and not isinstance(value, bool):
        raise InvalidInputError(key, f"must be true or false, got {json.dumps(value)[:40]}")
    return value is True


def _unused_context(method: str, params: Mapping[str, Any]) -> str | None:
    """The first context param ``method`` would not honour, or None."""
    if method in _CONTEXT_METHODS:
        return None
    own = _OWN_KEYS.get(method, frozenset())
    return next((k for k in CONTEXT_KEYS if k not in own and params.get(k) is not None), None)


def _whole(params: Mapping[str, Any], key: str, least: int = 1) -> int | None:
    value = params.get(key)
    whole = isinstance(value, int) and not isinstance(value, bool)
    if value is not None and not (whole and value >= least):
        raise InvalidInputError(key, f"must be a whole number >= {least}")
    return value


def _get(vault: Vault, params: Mapping[str, Any]) -> Any:
    """An episode or fact by ``id``, or lines of a vault file by ``path`` (``from``, ``lines``)."""
    context = _context(params)
    if "path" in params:
        start = _whole(params, "from") or 1
        path = _text(params, "path") or ""
        return vault.read(path, start, _whole(params, "lines"), context=context)
    return vault.get(_text(params, "id") or "", context=context)


def _log_turn(vault: Vault, params: Mapping[str, Any]) -> Any:
    return _logged(_write_turn(vault, params))


def _logged(logged: LoggedTurn) -> dict[str, Any]:
    return {"path": logged.path, "turn": logged.turn, "session": logged.session}


def _write_turn(vault: Vault, params: Mapping[str, Any]) -> LoggedTurn:
    content = params.get("content", params.get("text"))
    if not isinstance(content, str):
        raise InvalidInputError("content", "required, and must be a string")
    return vault.log_turn(
        _text(params, "session") or "",
        _text(params, "role") or "",
        content,
        name=_text(params, "name", required=False),
        channel=_text(params, "channel", required=False),
        timestamp=_text(params, "timestamp", required=False),
        tool=_text(params, "tool", required=False),
        agent=_text(params, "agent", required=False),
        kind=_text(params, "kind", required=False),  # checked with the rest of the turn
        sender=_text(params, "sender", required=False),
    )


def _consolidate(vault: Vault, params: Mapping[str, Any]) -> Any:
    return vault.consolidate(all_logs=_flag(params, "all")).as_dict()


def _end_session(vault: Vault, params: Mapping[str, Any]) -> Any:
    return {"closed": vault.end_session(_text(params, "session") or "")}


def _forget(vault: Vault, params: Mapping[str, Any]) -> Any:
    """Forget by query (``confirm: true`` unless ``dry_run``) or by id; a request with a
    context forgets only what that context may see, by id (see :func:`check_forget`)."""
    query = _text(params, "query", required=False)
    confirm, dry_run = _flag(params, "confirm"), _flag(params, "dry_run")
    if query is not None and not confirm and not dry_run:
        raise InvalidInputError("confirm", 'forgetting by query needs "confirm": true')
    episode_id = _text(params, "episode_id", required=False)
    fact_id = _text(params, "fact_id", required=False)
    check_forget(vault, _context(params), query, {"episode": episode_id, "fact": fact_id})
    report = vault.forget(query, episode_id=episode_id, fact_id=fact_id, dry_run=dry_run)
    return report.as_dict()


def check_forget(
    vault: Vault, context: RecallContext | None, query: str | None, ids: dict[str, str | None]
) -> None:
    """Refuse a forget reaching past ``context``: by query (which searches the whole vault),
    or of a memory the context may not see (to it, that memory does not exist)."""
    if context is None or context.is_terminal:
        return
    if query is not None:
        raise InvalidInputError(
            "query", "forgetting by query is for the owner (a request with no agent/session/kind)"
        )
    for kind, ident in ids.items():
        if ident is not None:
            try:
                vault.get(ident, context=context)
            except NotFoundError:
                raise NotFoundError(kind, ident) from None


def _fact_history(vault: Vault, params: Mapping[str, Any]) -> Any:
    """Every value an entity's ``field`` (every field, without one) has had, and its commits."""
    return vault.fact_history(
        _text(params, "entity") or "",
        _text(params, "field", required=False),
        context=_context(params),
    )


def _profile(vault: Vault, params: Mapping[str, Any]) -> Any:
    """What the owner said of themselves, and the standing instructions and preferences in
    force, for the context asking (the ``profile --json`` document)."""
    context = _context(params)
    about = vault.about_owner(context=context)
    standing = vault.profile(context=context)
    return {"about": [f.as_dict() for f in about], "standing": [f.as_dict() for f in standing]}


def _working_memory(vault: Vault, params: Mapping[str, Any]) -> Any:
    """A session's working memory as its open log rebuilds it (no live process keeps one)."""
    store = WorkingMemories(restore=partial(session_turns, vault.root))
    return store.snapshot(_text(params, "session") or "", vault.settings.working_memory)


def _sync(vault: Vault, params: Mapping[str, Any]) -> Any:
    """Sync the vault with its git remote (see :meth:`Vault.sync_remote`)."""
    return vault.sync_remote(setup=_flag(params, "setup")).as_dict()


def _status(vault: Vault, params: Mapping[str, Any]) -> Any:
    return {"version": __version__, **vault.stats()}


def _recall_failed(vault: Vault, params: Mapping[str, Any]) -> Any:
    """Count a recall the agent went on without (the plugin's timeout, or an error): a
    failure the plugin saw, so the plugin reports it; ``stats`` shows it."""
    _text(params, "reason", required=False)  # why, for the caller's log; must be text
    counts = recall_metrics.DayCounts(recall_failures=1)
    keep_days = vault.settings.metrics.keep_days
    counted = keep_days > 0 and recall_metrics.record(vault.root, now_utc(), keep_days, counts)
    return {"counted": counted}


def _stats(vault: Vault, params: Mapping[str, Any]) -> Any:
    """What ``stats --json`` prints: ``days`` (default 7) or ``since`` (YYYY-MM-DD)."""
    return vault.stats(days=_whole(params, "days"), since=_text(params, "since", required=False))


METHODS: dict[str, _Handler] = {
    "consolidate": _consolidate,
    "end_session": _end_session,
    "fact_history": _fact_history,
    "forget": _forget,
    "get": _get,
    "log_turn": _log_turn,
    "profile": _profile,
    "recall_failed": _recall_failed,
    "retrieve": _retrieve,
    "search": _search,
    "stats": _stats,
    "status": _status,
    "sync": _sync,
    "working_memory": _working_memory,
}


class StdioServer:
    """Answers JSON-lines requests against one vault, opened on first use and after failures."""

    def __init__(self, vault_path: str | Path, *, env: Mapping[str, str] | None = None) -> None:
        self.vault_path = Path(vault_path)
        self.env = env
        self._vault: Vault | None = None
        # Each live session's working memory: this process's, kept across vault reopens.
        self.working = WorkingMemories(
            restore=self._session_turns, forgets=lambda: forgets_so_far(self._open().root)
        )
        self._stateful: dict[str, _Handler] = {
            "end_session": self._end_session,
            "log_turn": self._log_turn,
            "retrieve": self._retrieve,
            "working_memory": self._working_memory,
        }

    def _retrieve(self, vault: Vault, params: Mapping[str, Any]) -> Any:
        """The payload; in a session, with its working memory (updated by what it found)."""
        context = _context(params)
        query = _text(params, "query") or ""
        if context is None or not context.session:
            return vault.retrieve(query, context=context).as_dict()
        settings = vault.settings.working_memory
        before = self.working.snapshot(context.session, settings)
        payload = vault.retrieve(query, context=context, working=before)
        return with_session(payload, self.working, context.session, vault.root, settings).as_dict()

    def _log_turn(self, vault: Vault, params: Mapping[str, Any]) -> Any:
        """Log the turn, then take it into its session's working memory as written (redacted)."""
        logged = _write_turn(vault, params)
        entry, session = logged.entry, _text(params, "session") or ""
        if entry is not None:  # as the log has it: redacted, role as seen in a group
            settings = vault.settings.working_memory
            self.working.observe(session, entry.role, entry.content, entry.tool, settings)
        return _logged(logged)

    def _end_session(self, vault: Vault, params: Mapping[str, Any]) -> Any:
        """Close the session's log; its task is over, so its working memory goes too."""
        self.working.clear(_text(params, "session") or "")
        return _end_session(vault, params)

    def _working_memory(self, vault: Vault, params: Mapping[str, Any]) -> Any:
        """The session's working memory (rebuilt from its open log when this process has not
        seen it)."""
        session = _text(params, "session") or ""
        return self.working.snapshot(session, vault.settings.working_memory)

    def _session_turns(self, session: str) -> tuple[Turn, ...]:
        return session_turns(self._open().root, session)

    def _open(self) -> Vault:
        if self._vault is None:
            self._vault = Vault(self.vault_path, env=self.env)
        return self._vault

    def close(self) -> None:
        """Close the vault's index."""
        if self._vault is not None:
            self._vault.close()
            self._vault = None

    def handle(self, line: str | bytes) -> dict[str, Any]:
        """One request line in, one response object out; never raises."""
        try:
            request = parse_json_line(line)
        except InvalidInputError as exc:
            return _error(None, PARSE_ERROR, exc.problem)
        if not isinstance(request, dict):
            return _error(None, INVALID_REQUEST, "a request is a JSON object")
        ident = request.get("id")
        if not is_request_id(ident):
            return _error(None, INVALID_REQUEST, BAD_ID)
        method, params = request.get("method"), request.get("params", {})
        if not isinstance(method, str):
            return _error(ident, INVALID_REQUEST, 'missing "method"')
        handler = METHODS.get(method)
        if handler is not None:
            handler = self._stateful.get(method, handler)
        if handler is None:
            known = ", ".join(sorted(METHODS))
            return _error(ident, NO_METHOD, f"unknown method {method!r} (known: {known})")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(ident, BAD_PARAMS, '"params" must be an object')
        problem = text_problem(params)
        if problem is not None:
            return _error(ident, BAD_PARAMS, problem)
        unused = _unused_context(method, params)
        if unused is not None:
            return _error(
                ident,
                BAD_PARAMS,
                f"{unused}: {method} acts for the owner on the whole"
                " vault and takes no agent, session or kind",
            )
        try:
            return {"id": ident, "result": handler(self._open(), params)}
        except InvalidInputError as exc:
            return _error(ident, BAD_PARAMS, str(exc))
        except MemoryclawError as exc:
            return _error(ident, MEMORY_ERROR, str(exc))
        except (OSError, sqlite3.Error) as exc:
            self.close()  # the vault may have moved or its index broken: reopen next time
            return _error(ident, MEMORY_ERROR, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # the process must outlive any one bad request
            self.close()
            return _error(ident, INTERNAL, f"{type(exc).__name__}: {exc}")

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Read requests until end of input, answering each on its own line.  A reader gone
        before its answers (an agent process that exited) stops the answers, not the work:
        the turns it sent are still logged, the recall failure it reported still counted."""
        answering = True
        try:
            for line in bounded_lines(stdin, MAX_REQUEST_BYTES):
                if line is None:
                    response = _error(None, INVALID_REQUEST, f"line over {MAX_REQUEST_BYTES} bytes")
                elif not line.strip():
                    continue
                else:
                    response = self.handle(line)
                if answering:
                    try:
                        stdout.write(encode_reply(response))
                        stdout.flush()
                    except (BrokenPipeError, ValueError):  # closed by the other end, or here
                        answering = False
                        _discard(stdout)
        finally:
            self.close()


def _discard(stream: IO[bytes]) -> None:
    """Point ``stream``'s descriptor at the null device, so what is still buffered for a
    reader that is gone is dropped at exit instead of failing it."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a file (a test's buffer): nothing is flushed at exit


def encode_reply(response: Mapping[str, Any]) -> bytes:
    """One JSON line for a response; never raises, whatever text or values the result holds."""
    try:
        text = json.dumps(response, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        ident = response.get("id")
        text = json.dumps(_error(ident, INTERNAL, f"unserialisable result: {exc}"))
    # A lone surrogate can only sit inside a JSON string, where its \uXXXX escape is exact.
    return text.encode("utf-8", "backslashreplace") + b"\n"


def is_request_id(value: Any) -> bool:
    """Whether ``value`` may be a JSON-RPC request's ``id``: a number, null or valid text."""
    if isinstance(value, str):
        return text_problem(value) is None
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"id": ident, "error": {"code": code, "message": message}}
