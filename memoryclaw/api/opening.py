"""A vault's place on disk: the folders, config and .gitignore ``init`` creates, and where its
index lives and whether that can be written."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidInputError
from ..vault.config import CONFIG_FILE, default_config_yaml
from ..vault.files import VAULT_FOLDERS, atomic_write, ensure_dir, owner_only_umask

INDEX_FILE = "index.db"
GITIGNORE = ".memoryclaw/\n"


def writable(path: Path) -> bool:
    """Whether ``path`` (and the folder holding it) can be written or created."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    return writable(path.parent) if path.parent != path else False


def create_files(root: Path, *, git: bool) -> None:
    """The folders, default config and .gitignore of a vault at ``root`` (existing files are
    kept), and with ``git`` its repository."""
    if root.exists() and not root.is_dir():
        raise InvalidInputError("path", f"{root} exists and is not a folder")
    ensure_dir(root)
    for folder in VAULT_FOLDERS:
        ensure_dir(root / folder)
    if not (root / CONFIG_FILE).exists():
        atomic_write(root / CONFIG_FILE, default_config_yaml())
    gitignore = root / ".gitignore"
    if not gitignore.exists():
        atomic_write(gitignore, GITIGNORE)
    elif ".memoryclaw/" not in gitignore.read_text(encoding="utf-8").split():
        atomic_write(
            gitignore, gitignore.read_text(encoding="utf-8").rstrip("\n") + "\n" + GITIGNORE
        )
    from ..share.sync import setup as setup_remote

    setup_remote(root)  # union merges for fact files, should the vault ever sync
    if git and not (root / ".git").exists():
        import shutil
        import subprocess

        if shutil.which("git") is None:
            raise InvalidInputError("--git", "git is not installed")
        # git's own files are private too, whatever the umask
        subprocess.run(["git", "init", "-q", str(root)], check=True, preexec_fn=owner_only_umask)
