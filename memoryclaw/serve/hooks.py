"""Hooks for any Python agent loop: retrieval before the model call, logging after it.

Both fail open: an error, a missing vault or a call slower than ``timeout`` seconds means no
memory for that turn and a warning on the ``memoryclaw.hooks`` logger — never an exception
in the agent's turn.  Work runs on one worker thread that owns the vault (SQLite connections
stay on the thread that opened them), so a timed-out call can finish in the background
without blocking the agent.

    hooks = MemoryHooks("~/.openclaw/workspace/memoryclaw", agent="main")
    context = hooks.before_model(user_message, session=session)   # str to prepend, or None
    ...
    hooks.after_response(session, user=user_message, assistant=reply, tool_calls=calls)

Recall names who asks (``agent``, the session, ``kind``; see :mod:`memoryclaw.vault.scopes`), so a
hook in one agent's group chat gets neither another agent's memories nor direct-conversation
ones.  Hooks made with no agent, session or kind are the owner at the terminal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ..api import Vault
from ..recall.payload import RetrievePayload
from ..recall.working import WorkingMemories, with_session
from ..vault.config import resolve_vault_path
from ..vault.rawlogs import session_turns
from ..vault.scopes import RecallContext, check_kind
from ..vault.tombstones import forgets_so_far

DEFAULT_TIMEOUT = 2.0
LOG = logging.getLogger("memoryclaw.hooks")
_T = TypeVar("_T")


class MemoryHooks:
    """Retrieval and logging hooks over one vault, each bounded by ``timeout`` seconds."""

    def __init__(
        self,
        vault_path: str | Path | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        channel: str | None = None,
        agent: str | None = None,
        kind: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.vault_path = resolve_vault_path(vault_path, env)
        self.timeout = timeout
        self.channel = channel
        self.agent = agent
        self.kind = check_kind(kind)
        self._env = env
        self._vault: Vault | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryclaw")
        # Each live session's working memory (memoryclaw.recall.working): this hook object's own,
        # rebuilt from a session's open log when it meets one it has not seen.
        self.working = WorkingMemories(
            restore=partial(session_turns, self.vault_path),
            forgets=partial(forgets_so_far, self.vault_path),
        )

    # ------------------------------------------------------------------ plumbing

    def _open(self) -> Vault:  # runs on the worker thread only
        if self._vault is None:
            self._vault = Vault(self.vault_path, env=self._env)
        return self._vault

    def _call(self, what: str, work: Callable[[Vault], _T]) -> _T | None:
        def job() -> _T:
            try:
                return work(self._open())
            except BaseException:
                if self._vault is not None:  # reopen next time: the vault may have changed
                    self._vault.close()
                    self._vault = None
                raise

        future: Future[_T] = self._worker.submit(job)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            LOG.warning(
                "memoryclaw %s took over %.1fs; continuing without memory", what, self.timeout
            )
        except Exception as exc:
            LOG.warning("memoryclaw %s failed; continuing without memory: %s", what, exc)
        return None

    def close(self) -> None:
        """Finish queued work and close the vault."""

        def shut() -> None:
            if self._vault is not None:
                self._vault.close()
                self._vault = None

        self._worker.submit(shut)
        self._worker.shutdown(wait=True)

    def __enter__(self) -> MemoryHooks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --------------------------------------------------------------------- hooks

    def recall_context(self, session: str | None = None) -> RecallContext:
        """Who asks when this hook recalls in ``session``: its agent and kind."""
        return RecallContext(agent=self.agent, session=session, kind=self.kind)

    def retrieve(self, message: str, *, session: str | None = None) -> RetrievePayload | None:
        """The full payload for ``message`` (context, working memory, results) of what this
        hook's agent may see in ``session``, or None."""

        def recall(vault: Vault) -> RetrievePayload:
            context = self.recall_context(session)  # a bad agent id fails here, not the turn
            if not session:
                return vault.retrieve(message, context=context)
            settings = vault.settings.working_memory
            before = self.working.snapshot(session, settings)
            payload = vault.retrieve(message, context=context, working=before)
            return with_session(payload, self.working, session, vault.root, settings)

        return self._call("retrieve", recall)

    def working_memory(self, session: str) -> dict[str, Any]:
        """The session's working memory ``{goal, plan, facts, recent_observations,
        active_skill}``, rebuilt from its open log for a session this hook has not seen."""
        return self.working.snapshot(session)

    def before_model(self, message: str, *, session: str | None = None) -> str | None:
        """The ``<memoryclaw>`` block to prepend to the prompt, or None when there is none."""
        payload = self.retrieve(message, session=session)
        return payload.context if payload is not None and payload.context else None

    def after_response(
        self,
        session: str,
        *,
        user: str | None = None,
        assistant: str | None = None,
        tool_calls: Iterable[Mapping[str, Any]] = (),
        user_name: str | None = None,
        sender: str | None = None,
    ) -> bool:
        """Log one exchange: the user's message, each tool call and result, the reply.

        ``tool_calls`` items are ``{"name", "arguments"?, "result"?}``; ``sender`` is the id
        of who wrote the user's message (in a group, whether it is the owner's words).
        Returns whether it was written.
        """
        turns: list[dict[str, Any]] = []
        if user:
            turns.append({"role": "user", "text": user, "name": user_name})
        for call in tool_calls:
            name = str(call.get("name") or "tool")
            arguments = call.get("arguments", {})
            turns.append({"role": "tool_call", "tool": name, "text": _as_text(arguments)})
            if "result" in call:
                turns.append(
                    {"role": "tool_result", "tool": name, "text": _as_text(call["result"])}
                )
        if assistant:
            turns.append({"role": "assistant", "text": assistant})

        def write(vault: Vault) -> bool:
            for turn in turns:
                logged = vault.log_turn(
                    session,
                    turn["role"],
                    turn["text"],
                    name=turn.get("name"),
                    tool=turn.get("tool"),
                    channel=self.channel,
                    agent=self.agent,
                    kind=self.kind,
                    sender=sender if turn["role"] == "user" else None,
                )
                entry = logged.entry  # as written: redacted, role as seen in a group
                if entry is not None:
                    settings = vault.settings.working_memory
                    self.working.observe(session, entry.role, entry.content, entry.tool, settings)
            return True

        return bool(turns) and self._call("logging", write) is True

    def end_session(self, session: str) -> bool:
        """Close the session's raw log so consolidation can take it; its working memory
        is cleared (its task is over)."""
        self.working.clear(session)
        return (
            self._call("end_session", lambda vault: bool(vault.end_session(session)) or True)
            is True
        )


def _as_text(value: Any) -> str:
    return (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )
