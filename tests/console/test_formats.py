"""How the console shows data and reads input: text/JSON/hex, sizes, durations, times, pages."""

from __future__ import annotations

import pytest

from console.formats import SHOWN_BYTES, show
from console.web import BadInput, human_duration, human_size, paginate, parse_time


def test_values_as_text_json_and_hex() -> None:
    assert show(None, "json") == (None, "")
    assert show(b'{"a": [1, 2]}', "json") == ('{\n  "a": [\n    1,\n    2\n  ]\n}', "")
    assert show(b"plain", "json") == ("plain", "not JSON")
    assert show(b"\x00\xffA", "hex") == ("00 ff 41", "")
    assert show(b"caf\xc3\xa9 \xff", "text") == ("café \ufffd", "")


def test_long_values_are_cut_and_say_so() -> None:
    text, note = show(b"x" * (SHOWN_BYTES + 5), "text")
    assert len(text or "") == SHOWN_BYTES and note == f"first {SHOWN_BYTES:,} of {SHOWN_BYTES + 5:,} bytes"


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        ("604800000", "7 d"),
        ("-1", "forever"),
        ("7200000", "2 h"),
        ("90000", "90 s"),
        ("1234", "1234 ms"),
        (None, "—"),
    ],
)
def test_durations(ms: str | None, shown: str) -> None:
    assert human_duration(ms) == shown


def test_sizes() -> None:
    assert [human_size(n) for n in (None, 512, 2048, 5 * 1024**3)] == ["—", "512 B", "2.0 KiB", "5.0 GiB"]


def test_times_from_forms() -> None:
    assert parse_time("1000") == 1000
    assert parse_time("1970-01-01T00:00:01") == 1000
    assert parse_time("1970-01-01T01:00:01+01:00") == 1000
    assert parse_time("1970-01-01T00:00:01Z") == 1000
    with pytest.raises(BadInput, match="is not a timestamp"):
        parse_time("last tuesday")


def test_pages_clamp_to_what_exists() -> None:
    page = paginate(list(range(120)), 9, 50)
    assert (page.number, page.pages, page.total, list(page.items)) == (3, 3, 120, list(range(100, 120)))
    assert paginate([], 1).pages == 1
