"""atheris target: zigzag and unsigned varint readers (bounded at 5/10 bytes)."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from protocol.errors import ProtocolError
    from protocol.varint import decode_uvarint, decode_varint, decode_varlong


def one_input(data: bytes) -> None:
    for decode in (decode_varint, decode_varlong, decode_uvarint):
        pos = 0
        try:
            while pos < len(data):
                _, new = decode(data, pos)
                assert new > pos and new - pos <= 10
                pos = new
        except ProtocolError:
            pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
