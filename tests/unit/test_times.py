"""client.times.parse_time: what the commands and the console accept as a time."""

from __future__ import annotations

import datetime as dt

import pytest

from client.times import parse_time


def test_digits_are_milliseconds() -> None:
    assert parse_time(" 1500 ", local=False) == 1500
    assert parse_time("-5", local=True) == -5


def test_a_zone_is_taken_when_given_else_utc_or_local() -> None:
    assert parse_time("1970-01-01T00:00:01Z", local=True) == 1000
    assert parse_time("1970-01-01T01:00:01+01:00", local=True) == 1000
    assert parse_time("2026-01-02T03:04:05", local=False) == 1767323045000
    naive = dt.datetime(2026, 1, 2, 3, 4, 5).astimezone()
    assert parse_time("2026-01-02T03:04:05", local=True) == int(naive.timestamp() * 1000)


def test_anything_else_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_time("yesterday", local=False)
