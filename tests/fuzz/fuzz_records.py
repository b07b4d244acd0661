"""atheris target: the RecordBatch v2 decoders (validation, recovery scan, full decode with codecs).

Only ProtocolError / CorruptRecordError may escape; decompression is bounded.
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports():
    from protocol.errors import CorruptRecordError, ProtocolError
    from protocol.records import decode_batch, scan_valid_prefix, validate_batches


def one_input(data: bytes) -> None:
    scan_valid_prefix(data)
    with contextlib.suppress(CorruptRecordError):
        validate_batches(data)
    with contextlib.suppress(ProtocolError):
        decode_batch(data, 0, max_decompressed=1 << 20, check_crc=False)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
