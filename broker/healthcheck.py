"""`python -m broker.healthcheck [--host H] [--port P]`: exit 0 if a broker answers ApiVersions.

Used by the Docker image's HEALTHCHECK; also handy in scripts. Prints one line
on failure. Uses only the standard library and `protocol/`.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys

from protocol.errors import ProtocolError
from protocol.headers import encode_request_header
from protocol.messages import decode_response

API_VERSIONS = 18


def check(host: str, port: int, timeout: float) -> str | None:
    """None if healthy, else the reason."""
    request = encode_request_header(API_VERSIONS, 0, 1, "healthcheck")
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(struct.pack(">i", len(request)) + request)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return "connection closed before an answer"
                data += chunk
    except OSError as exc:
        return f"cannot reach {host}:{port}: {exc}"
    try:
        resp = decode_response(API_VERSIONS, 0, data[8:])
    except ProtocolError as exc:
        return f"malformed ApiVersions answer: {exc}"
    return None if resp.error_code == 0 else f"ApiVersions answered error {resp.error_code}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m broker.healthcheck")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9092)
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args(argv)
    reason = check(args.host, args.port, args.timeout)
    if reason is not None:
        print(f"unhealthy: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
