"""Rowid ranges as SQL filters the full-text planner does not take as its own constraints,
and the SQLite varint a full-text table's statistics begin with."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# Rowid ranges in one statement (two parameters each, well under SQLite's 32,766)
RANGES_PER_QUERY = 4096
LISTED_SPAN = 256  # see rowid_filters


def merged_spans(spans: Sequence[tuple[int, int]], gap: int = 64) -> list[tuple[int, int]]:
    """Sorted rowid ranges, those less than ``gap`` apart joined: one full-text query reads
    a range about as fast as a row, so fewer, slightly wider ranges cost less."""
    out: list[tuple[int, int]] = []
    for low, high in spans:
        if out and low - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def rowid_filters(spans: Sequence[tuple[int, int]]) -> list[tuple[str, list[Any]]]:
    """Conditions that a full-text row's rowid lies in one of ``spans``, with their
    parameters: one condition for up to ``RANGES_PER_QUERY`` long spans, each a statement.

    The unary ``+`` hides them from FTS5's planner: a rowid range it takes as its own
    constraint is a new cursor per range, and each cursor counts the table's BM25 statistics
    again; as a filter, one cursor reads the expression's doclists once and scores only the
    rows kept.  A short span's rowids are listed (one look-up per row read); longer ones are
    ranges, OR-ed as a balanced tree (SQLite limits an expression's depth)."""
    listed = [
        row for low, high in spans if high - low < LISTED_SPAN for row in range(low, high + 1)
    ]
    ranges = merged_spans(sorted((low, high) for low, high in spans if high - low >= LISTED_SPAN))
    out: list[tuple[str, list[Any]]] = []
    for start in range(0, max(len(ranges), 1), RANGES_PER_QUERY):
        chunk = ranges[start : start + RANGES_PER_QUERY]
        parts = ["+rowid BETWEEN ? AND ?"] * len(chunk)
        params: list[Any] = [value for low, high in chunk for value in (low, high)]
        if listed and not start:
            parts.insert(0, "+rowid IN (SELECT value FROM json_each(?))")
            params.insert(0, json.dumps(listed))
        while len(parts) > 1:
            parts = [f"({' OR '.join(parts[i : i + 2])})" for i in range(0, len(parts), 2)]
        if parts:
            out.append((parts[0], params))
    return out


def sqlite_varint(data: bytes) -> int | None:
    """The SQLite varint at the start of ``data`` (None when it is cut short)."""
    value = 0
    for position, byte in enumerate(data[:9]):
        if position == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None
