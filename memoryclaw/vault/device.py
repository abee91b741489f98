"""This device's id, which the raw logs it creates carry in their names.

Two devices syncing one vault (:mod:`memoryclaw.share.sync`) must never make the same log
file: ``sync.deviceId``, else a short id made once on the first sync and kept in
``.memoryclaw/device`` (local state, never synced), goes into each new log's name.
"""

from __future__ import annotations

import re
from pathlib import Path

from .config import Settings
from .files import STATE_DIR, atomic_write, ensure_dir

DEVICE_FILE = f"{STATE_DIR}/device"
DEVICE_RE = re.compile(r"[a-z0-9]{1,16}")


def device_id(root: Path, settings: Settings) -> str:
    """This device's short id: ``sync.deviceId``, else one made once and kept locally."""
    known = log_device(root, settings)
    if known:
        return known
    import secrets  # here: made once a device, and slow to import for every process

    made = secrets.token_hex(3)
    ensure_dir(root / STATE_DIR)
    atomic_write(root / DEVICE_FILE, made + "\n")
    return made


def log_device(root: Path, settings: Settings) -> str:
    """The device id new raw log names carry: empty in a vault that has never synced, whose
    log names stay ``YYYY-MM-DD_HH-MM-SS_<channel>_raw.md``."""
    if settings.sync.device_id:
        return settings.sync.device_id
    try:
        known = (root / DEVICE_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""
    return known if DEVICE_RE.fullmatch(known) else ""
