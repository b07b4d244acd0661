"""A connection's session: the host its ACLs are matched against."""

from __future__ import annotations

from broker.security.session import java_host


def test_peer_addresses_take_javas_form_for_host_acls() -> None:
    assert java_host("127.0.0.1") == "127.0.0.1"
    assert java_host("::1") == "0:0:0:0:0:0:0:1"
    assert java_host("fe80::1%eth0") == "fe80:0:0:0:0:0:0:1%eth0"
    assert java_host("2001:db8::ff00:42:8329") == "2001:db8:0:0:0:ff00:42:8329"
