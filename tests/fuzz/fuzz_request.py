"""atheris target: the request decoder (header + body of every api/version we serve).

Run with `make fuzz` (seeded with the frames captured from real clients in
tests/data/frames). Only ProtocolError may escape the decoder.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from protocol.errors import ProtocolError
    from protocol.headers import parse_request_header
    from protocol.messages import MODULES, decode_request


def one_input(data: bytes) -> None:
    try:
        header = parse_request_header(data)
        module = MODULES.get(header.api_key)
        if module is None or header.api_version not in module.REQUEST:
            return
        decode_request(header.api_key, header.api_version, data[header.size :])
    except ProtocolError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
