"""How keys, values and headers are shown: text, JSON (pretty) or hex, bounded in length."""

from __future__ import annotations

import json

FORMATS = ("text", "json", "hex")
SHOWN_BYTES = 16 * 1024


def show(data: bytes | None, fmt: str) -> tuple[str | None, str]:
    """(text to show or None for a null, a note such as "not JSON" or "truncated")."""
    if data is None:
        return None, ""
    note = ""
    if len(data) > SHOWN_BYTES:
        note = f"first {SHOWN_BYTES:,} of {len(data):,} bytes"
        data = data[:SHOWN_BYTES]
    if fmt == "hex":
        return data.hex(" "), note
    text = data.decode("utf-8", errors="replace")
    if fmt == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False), note
        except ValueError:
            return text, "not JSON" + (f"; {note}" if note else "")
    return text, note


def contains(data: bytes | None, needle: bytes) -> bool:
    return data is not None and needle in data
