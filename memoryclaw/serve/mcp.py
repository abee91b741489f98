"""``memoryclaw mcp``: the vault's memory as tools for MCP clients, over stdio.

Five tools, each a thin call into the handler ``serve --stdio`` uses for the same request
(:data:`memoryclaw.serve.stdio.METHODS`), so arguments are checked and answered exactly as there:
``memory_search``, ``memory_get``, ``memory_profile`` (what the user said of themselves,
and the standing instructions and preferences in force), ``memory_log`` and
``memory_forget``.  A memoryclaw error comes back as a tool error (``isError``) carrying
the one-line message the command line would print (after the SDK's ``Error executing tool
NAME:``), and the server keeps serving.

A server may be started for one conversation (``memoryclaw mcp --agent A --session KEY
--kind K``; see :mod:`memoryclaw.vault.scopes`): then memory_search and memory_get answer only what
that conversation may see, memory_log logs as that agent, into that session, and
memory_forget deletes only memories it may see, by id.  No tool argument reaches past that
context.  Started without one, the server is the owner's and sees everything.

The MCP SDK (the ``mcp`` extra, ``mcp`` 2.x) is imported only when a server is built, so the
rest of memoryclaw neither needs it nor pays for importing it.

Every line that is not a JSON-RPC message gets a JSON-RPC error reply with ``id`` null:
-32700 when it is not JSON (not UTF-8, nested deeper than 64, a lone surrogate ...), -32600
when it is JSON but not a request, notification or response, or longer than
:data:`~memoryclaw.vault.inputs.MAX_REQUEST_BYTES`.  The SDK's stdio transport answers nothing to
such a line and reads lines of any length, so :func:`run_stdio` hands it a stdin that passes on
only lines that pass the checks ``serve --stdio`` makes, and answers the others on the SDK's
own write stream.  ``MCPServer`` has no public way to run on given streams, so this reaches
for its ``_lowlevel_server`` as its own ``run_stdio_async`` does.
"""

# No ``from __future__ import annotations`` here: the SDK reads each tool's parameter types
# with ``inspect.signature(eval_str=True)``, which cannot see names imported inside
# ``build_server``; annotations evaluated at definition time need no lookup.

import importlib.metadata
import sys
from collections import deque
from typing import IO, TYPE_CHECKING, Annotated, Any, cast

from .. import __version__
from ..api import Vault
from ..errors import ConfigError, InvalidInputError, MemoryclawError
from ..vault.inputs import MAX_REQUEST_BYTES, bounded_lines, parse_json_line, text_problem
from ..vault.scopes import RecallContext
from .stdio import BAD_ID, INVALID_REQUEST, METHODS, PARSE_ERROR, is_request_id

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

SERVER_NAME = "memoryclaw"
MCP_CHANNEL = "mcp"  # the channel of turns memory_log writes when the client names none
INSTRUCTIONS = (
    "Long-term memory kept as markdown files: episodes (summaries of past conversations) and "
    "facts (contacts, preferences, projects). Call memory_search before answering anything "
    "that may depend on earlier conversations, memory_get for an episode's full details, "
    "memory_profile for what the user said of themselves and their standing instructions and "
    "preferences (follow those in every answer), and memory_log to record a turn worth remembering."
)


def _missing_sdk_message() -> str:
    try:
        found = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return "the MCP server needs the MCP SDK: pip install 'memoryclaw[mcp]'"
    return f"the MCP server needs mcp 2.x, found mcp {found}: pip install -U 'memoryclaw[mcp]'"


def _scope_params(context: RecallContext | None) -> dict[str, str]:
    """The ``agent``/``session``/``kind`` params of the server's context (none: the owner)."""
    if context is None:
        return {}
    return {key: value for key, value in context.as_dict().items() if value is not None}


def build_server(vault: Vault, context: RecallContext | None = None) -> "MCPServer[Any]":
    """An MCP server whose tools work on ``vault`` (which the caller keeps open and closes),
    for the conversation ``context`` names (None: the owner, who sees everything).

    Raises :class:`ConfigError` naming ``pip install 'memoryclaw[mcp]'`` when the SDK is missing.
    """
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
        from pydantic import Field
    except ImportError:
        raise ConfigError(None, "mcp", _missing_sdk_message()) from None

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        # Tool errors are answers to the client, not server trouble worth a line on stderr.
        log_level="WARNING",
    )

    # The tools are coroutines that call the vault directly: the SDK would run plain functions
    # in worker threads, and the index's SQLite connection belongs to the thread that opened
    # it.  Calls are short, and one at a time they also cannot race each other.
    scope = _scope_params(context)

    def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = METHODS[method](vault, params)
        except MemoryclawError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # the server must outlive any one bad call
            vault.close()  # the vault may have moved or its index broken: reopen it next call
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc
        return result

    @server.tool(
        name="memory_search",
        title="Search memory",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def memory_search(
        query: Annotated[
            str, Field(description="What to look for, in plain words (e.g. 'email John').")
        ],
        limit: Annotated[
            int | None,
            Field(ge=0, description="Most episodes to return (default: the vault's setting)."),
        ] = None,
    ) -> dict[str, Any]:
        """Search long-term memory by keywords.

        Returns ranked episodes (summaries of past conversations: id, summary, tags, timestamp,
        score, the keywords each matched) and facts about the people and things the query
        names (entity, field, value, age in days). Search before answering anything that may
        depend on earlier conversations; read an episode's details with memory_get.
        """
        # the agent's own search reaches the archive too; only automatic recall leaves it out
        return call("search", {"query": query, "limit": limit, "all": True, **scope})

    @server.tool(
        name="memory_get",
        title="Read one memory",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def memory_get(
        id: Annotated[
            str,
            Field(description="An episode id (ep-...) or a fact id, as memory_search returns."),
        ],
    ) -> dict[str, Any]:
        """Read one memory by id.

        An episode comes with its summary, details, tags, entities, timestamp and the raw log
        it was made from; a fact with its entity, field, value, file and line.
        """
        return call("get", {"id": id, **scope})

    @server.tool(
        name="memory_profile",
        title="Who the user is, their standing instructions and preferences",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def memory_profile() -> dict[str, Any]:
        """What the user said of themselves ("about": their age, job, home, allergies, coffee
        order ...) and their standing instructions ("always ...", "never ...", "whenever I ask
        about X, ...") and preferences in force ("standing", newest first, each with its topic
        and date).

        Read it at the start of a conversation and follow them in every answer: they apply
        whether or not a question mentions them.
        """
        return call("profile", dict(scope))

    @server.tool(
        name="memory_log",
        title="Record a conversation turn",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False
        ),
    )
    async def memory_log(
        session: Annotated[
            str, Field(description="Conversation id; a session's turns go to one raw log.")
        ],
        role: Annotated[
            str, Field(description="Who spoke: user, assistant, tool_call, tool_result, system.")
        ],
        content: Annotated[str, Field(description="The turn's text.")],
        name: Annotated[str | None, Field(description="Speaker name, e.g. Caroline.")] = None,
        channel: Annotated[
            str | None,
            Field(description="Where the conversation happens (telegram ...); default mcp."),
        ] = None,
        tool: Annotated[
            str | None, Field(description="Tool name, for tool_call and tool_result turns.")
        ] = None,
    ) -> dict[str, Any]:
        """Append one conversation turn to the session's raw log in the vault.

        Logs are consolidated into searchable episodes later; secrets in the text are redacted
        when the vault is configured to. Returns the log's path and the turn's number.
        """
        # A server for one conversation writes only there: a turn logged into another
        # session would be recalled where this conversation's readers have no say.
        if context is not None and context.session is not None and session != context.session:
            raise ToolError(f"session: this server logs only to session {context.session!r}")
        return call(
            "log_turn",
            {
                **scope,
                "session": session,
                "role": role,
                "content": content,
                "name": name,
                # a new log is named for where its turns came from: ..._mcp_raw.md
                "channel": channel or MCP_CHANNEL,
                "tool": tool,
            },
        )

    @server.tool(
        name="memory_forget",
        title="Delete memories",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    async def memory_forget(
        query: Annotated[
            str | None,
            Field(description="Delete every episode and fact this search finds (needs confirm)."),
        ] = None,
        episode_id: Annotated[str | None, Field(description="Delete this one episode.")] = None,
        fact_id: Annotated[str | None, Field(description="Delete this one fact.")] = None,
        dry_run: Annotated[
            bool, Field(description="Only report what would be deleted; delete nothing.")
        ] = False,
        confirm: Annotated[
            bool, Field(description="Must be true to delete by query (not needed with dry_run).")
        ] = False,
    ) -> dict[str, Any]:
        """Delete memories from the vault's files and index; this cannot be undone.

        Give exactly one of query, episode_id or fact_id. Deleting by query removes every
        search hit, so it needs confirm=true; run it with dry_run=true first to see what
        would go. Returns the ids removed and the files deleted or edited.
        """
        return call(
            "forget",
            {
                "query": query,
                "episode_id": episode_id,
                "fact_id": fact_id,
                "dry_run": dry_run,
                "confirm": confirm,
                **scope,  # held to the server's context: it forgets only what it may see
            },
        )

    return server


def run_stdio(vault: Vault, context: RecallContext | None = None) -> None:
    """Serve ``vault``'s memory tools, for ``context``, over stdin/stdout until the client
    disconnects."""
    import anyio

    anyio.run(_serve_checked, build_server(vault, context))


_Refusal = tuple[int, str]


class _CheckedStdin:
    """Standard input for the SDK's line reader: each line that passes the checks as it is,
    a blank line (which the SDK turns into one error item) in place of each that does not.

    ``refusals`` gets one entry per line handed over, in order: ``None``, or the code and
    message of its refusal.
    """

    def __init__(self, stdin: IO[bytes]) -> None:
        self._lines = bounded_lines(stdin, MAX_REQUEST_BYTES)
        self.refusals: deque[_Refusal | None] = deque()

    def readline(self) -> str:
        """The next line for the SDK; ``""`` at end of input."""
        for line in self._lines:
            if line is None:
                refusal: _Refusal | None = (INVALID_REQUEST, f"line over {MAX_REQUEST_BYTES} bytes")
            elif not line.strip():
                continue
            else:
                refusal = _refusal(line)
            self.refusals.append(refusal)
            return "\n" if refusal is not None or line is None else line.decode("utf-8")
        return ""


def _refusal(line: bytes) -> _Refusal | None:
    try:
        message = parse_json_line(line)
    except InvalidInputError as exc:
        return PARSE_ERROR, exc.problem
    problem = text_problem(message)
    if problem is not None:
        return PARSE_ERROR, problem
    # The SDK would take a message with an id of another type for a notification, unanswered.
    if isinstance(message, dict) and not is_request_id(message.get("id")):
        return INVALID_REQUEST, BAD_ID
    return None


async def _serve_checked(server: "MCPServer[Any]") -> None:
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    stdin = _CheckedStdin(sys.stdin.buffer)
    lowlevel = server._lowlevel_server
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def relay(read: Any, write: Any) -> None:
        async with send:
            async for item in read:
                refusal = stdin.refusals.popleft()
                if not isinstance(item, Exception):
                    await send.send(item)
                    continue
                code, message = refusal or (
                    INVALID_REQUEST,
                    "not a JSON-RPC 2.0 request, notification or response",
                )
                error = JSONRPCError(
                    jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message)
                )
                await write.send(SessionMessage(error))

    async with (
        stdio_server(stdin=anyio.wrap_file(cast("IO[str]", stdin))) as (read, write),
        anyio.create_task_group() as group,
    ):
        group.start_soon(relay, read, write)
        await lowlevel.run(receive, write, lowlevel.create_initialization_options())
