"""Differential checks of a fast decoder against the schema decoder, shared by the fast-path tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from protocol.errors import ProtocolError


def outcome(fn: Callable[[bytes], Any], body: bytes) -> Any:
    """What ``fn(body)`` gives: its result, or the ProtocolError class if it raised one."""
    try:
        return fn(body)
    except ProtocolError:
        return ProtocolError


def agree_on_variants(agree: Callable[[bytes], None], body: bytes, data: st.DataObject) -> None:
    """``agree`` (which asserts both decoders give the same outcome) on ``body``, with trailing
    bytes, cut short at a drawn point, and with one drawn byte replaced."""
    agree(body)
    agree(body + b"trailing")
    cut = data.draw(st.integers(0, max(0, len(body) - 1)))
    agree(body[:cut])
    at = data.draw(st.integers(0, len(body) - 1))
    mutated = bytearray(body)
    mutated[at] = data.draw(st.integers(0, 255))
    agree(bytes(mutated))
