"""The vectors in tests/data/vectors agree with the independent sources they came from.

kafka-python's murmur2 and record batch builder are re-run here on every test
run; the Java hash codes of group_partition.tsv need a JDK's jshell and are
checked by ``python -m tests.data.vectors.regenerate --check``.
"""

from __future__ import annotations

import pytest

from tests.data import VECTORS
from tests.data.vectors import regenerate


@pytest.mark.parametrize(
    ("name", "make"),
    [("murmur2.tsv", regenerate.murmur2_tsv), ("record_batch.hex", regenerate.record_batch_hex)],
)
def test_vector_file_matches_its_source(name: str, make: object) -> None:
    assert (VECTORS / name).read_text(encoding="utf-8") == make()  # type: ignore[operator]
