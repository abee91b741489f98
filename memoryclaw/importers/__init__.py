"""Bring existing memory in: OpenClaw workspaces, note folders, chat files."""
