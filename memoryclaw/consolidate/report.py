"""What one consolidation run did: counts for ``--json``, the CLI and the run's commit message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..vault.files import Skipped
from ..vault.naming import plural


@dataclass
class ConsolidationReport:
    """What one consolidation run did."""

    logs_read: int = 0
    episodes: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # episodes that gained a source
    facts_added: int = 0
    facts_refreshed: int = 0
    pending: int = 0
    conflicts: int = 0
    promoted: int = 0
    skills_suggested: list[str] = field(default_factory=list)
    logs_processed: list[str] = field(default_factory=list)
    logs_deleted: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # logs of sessions still going on (not ended, a turn within sessionIdleMinutes): left
    # for a later run
    left_open: list[str] = field(default_factory=list)
    forgotten: int = 0  # turns blanked and facts left out: they were forgotten
    took_ms: float = 0.0
    commit: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "logs_read": self.logs_read,
            "episodes": self.episodes,
            "duplicates": self.duplicates,
            "facts_added": self.facts_added,
            "facts_refreshed": self.facts_refreshed,
            "pending": self.pending,
            "conflicts": self.conflicts,
            "promoted": self.promoted,
            "skills_suggested": self.skills_suggested,
            "logs_processed": self.logs_processed,
            "logs_deleted": self.logs_deleted,
            "skipped": [{"path": s.path, "reason": s.reason, "line": s.line} for s in self.skipped],
            "left_open": self.left_open,
            "forgotten": self.forgotten,
            "took_ms": round(self.took_ms, 1),
            "commit": self.commit,
        }

    def commit_message(self) -> str:
        """A git commit message that says what the run changed."""
        lines = [
            f"memoryclaw: consolidate {plural(self.logs_read, 'log')} into"
            f" {plural(len(self.episodes), 'episode')}",
            "",
            f"{plural(self.facts_added, 'fact')} added, {self.facts_refreshed} refreshed, "
            f"{self.promoted} promoted, {self.pending} pending, "
            f"{plural(self.conflicts, 'conflict')}, "
            f"{plural(len(self.skills_suggested), 'skill')} suggested",
            "",
        ]
        lines += [f"+ {path}" for path in self.episodes + self.skills_suggested]
        lines += [f"= {path} (said again in another log)" for path in self.duplicates]
        lines += [f"processed {path}" for path in self.logs_processed]
        lines += [f"deleted {path} (retention)" for path in self.logs_deleted]
        return "\n".join(lines)
