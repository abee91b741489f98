"""A complete agent loop with memoryclaw's retrieval and logging hooks, standard library only.

Each user line goes through the retrieval hook (the ``<memoryclaw>`` block is put in front of
the message), then to any OpenAI-compatible chat endpoint, and the exchange goes through the
logging hook into the vault's raw log.  Both hooks fail open: with a missing or broken vault
the loop still answers, without memory, and a warning is printed.

    python plugins/python/agent_loop.py --vault ~/memoryclaw-vault \\
        --base-url http://127.0.0.1:11434/v1 --model llama3.2 --session demo
    python plugins/python/agent_loop.py ... -m "What is my dentist's phone number?"

Without ``-m`` it reads one message per line from stdin until end of input.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import urllib.request
from typing import Any

from memoryclaw import MemoryHooks

SYSTEM = (
    "You are a helpful assistant. A <memoryclaw> block, when present, holds what you "
    "remember about the user: facts with their age and past episodes. Use it when relevant."
)


def chat(base_url: str, model: str, api_key: str, messages: list[dict[str, Any]]) -> str:
    """One non-streaming chat completion; the assistant's text."""
    request = urllib.request.Request(
        f"{base_url.rstrip('/')}/chat/completions",
        data=json.dumps({"model": model, "messages": messages}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        body = json.load(response)
    return str(body["choices"][0]["message"]["content"] or "")


def turn(
    hooks: MemoryHooks, args: argparse.Namespace, history: list[dict[str, Any]], text: str
) -> str:
    """One exchange: recall, call the model, log; returns the reply."""
    memory = hooks.before_model(text)  # retrieval hook: None when there is nothing (or a failure)
    prompt = f"{memory}\n\n{text}" if memory else text
    messages = [
        {"role": "system", "content": SYSTEM},
        *history,
        {"role": "user", "content": prompt},
    ]
    reply = chat(args.base_url, args.model, args.api_key, messages)
    history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
    hooks.after_response(args.session, user=text, assistant=reply)  # logging hook
    return reply


def main(argv: list[str] | None = None) -> int:
    """Run the loop; exit code 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", help="vault folder (default: $MEMORYCLAW_VAULT)")
    parser.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    )
    parser.add_argument("--model", default=os.environ.get("MODEL", "llama3.2"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "none"))
    parser.add_argument("--session", default="agent-loop", help="session id for the raw log")
    parser.add_argument("--timeout", type=float, default=2.0, help="hook timeout in seconds")
    parser.add_argument("-m", "--message", help="one message, then exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    history: list[dict[str, Any]] = []
    with MemoryHooks(args.vault, timeout=args.timeout, channel="agent-loop") as hooks:
        lines = [args.message] if args.message is not None else sys.stdin
        for line in lines:
            if line.strip():
                print(turn(hooks, args, history, line.strip()), flush=True)
        hooks.end_session(args.session)
    return 0


if __name__ == "__main__":
    sys.exit(main())
