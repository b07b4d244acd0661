"""The authorizer: Kafka's ACL decision over an index kept for speed.

Decision (Kafka's StandardAuthorizerData.authorize, same as the ZooKeeper-era
AclAuthorizer) for ``principal`` from ``host`` doing ``operation`` on the
resource ``(resource_type, name)``:

1. A super user (``super.users``, see `parse_super_users`) is allowed.
2. The ACLs that apply are those of the literal pattern ``name``, of the
   wildcard pattern (LITERAL ``*``) and of every PREFIXED pattern ``name``
   starts with. If there are none, the answer is
   ``allow.everyone.if.no.acl.found`` (default false).
3. Of those, an ACL matches when its principal is ``principal`` or ``User:*``,
   its host is ``host`` or ``*``, and its operation is ``operation`` or ALL;
   an ALLOW ACL also matches through the implied operations: READ, WRITE,
   DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.
   A DENY implies nothing (DENY READ does not deny DESCRIBE; DENY ALL denies
   everything).
4. Any matching DENY denies; else any matching ALLOW allows; else denied
   (ACLs exist for the resource, just none for this caller).

Hosts are compared as strings: pass the client's address as Kafka prints it
(``getHostAddress``). Principals are ``Type:name`` strings.

Index, per resource type and per principal (``User:*`` is one too): a dict
from literal name (``*`` included) and one from prefix to the compiled ACLs of
that principal on that pattern, plus the sorted distinct lengths of the
prefixes. A decision looks at the caller's and ``User:*``'s indexes only: per
index two dict lookups (the name and ``*``) and one per distinct prefix length
not longer than the name; no scan. Compiled ACLs are operation bit masks,
``1 << code`` (DENY ones in the low 16 bits, ALLOW ones above), for host
``*`` and per host. Only with allow.everyone.if.no.acl.found set, and no ACL of
the caller deciding, does a decision also ask whether any ACL applies at all
(the same lookups in an index of all patterns). A change re-compiles just the
(pattern, principal) pairs it touches.

Not thread-safe: use it from the event loop only.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable
from typing import Generic, TypeVar

from broker.security.acls import (
    ANY_ACL,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate_binding,
)

Op = AclOperation
_ALL = 1 << Op.ALL
_ALLOWS = 16  # a compiled mask holds the DENY operations in bits 0-15, the ALLOW ones above
# Indexed by the requested operation's code: the bits of a compiled mask that decide it.
_DENY_BITS = [(1 << op) | _ALL for op in range(len(Op))]
_ALLOW_BITS = list(_DENY_BITS)
_ALLOW_BITS[Op.DESCRIBE] |= sum(1 << op for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER))
_ALLOW_BITS[Op.DESCRIBE_CONFIGS] |= 1 << Op.ALTER_CONFIGS
_ALLOW_BITS = [bits << _ALLOWS for bits in _ALLOW_BITS]

_DENY = AclPermissionType.DENY
_ALLOW = AclPermissionType.ALLOW
_LITERAL = PatternType.LITERAL
_PREFIXED = PatternType.PREFIXED
# authorize_any first asks about a resource of this name, as Kafka does.
_PROBE_NAME = "hardcode"

# One principal's ACLs on one pattern: (mask for host "*", {host: mask}).
_Masks = tuple[int, dict[str, int]]
V = TypeVar("V")


def parse_super_users(value: str) -> frozenset[str]:
    """Kafka's ``super.users``: principals separated by ``;``, e.g. ``User:admin;User:broker``."""
    users = frozenset(v.strip() for v in value.split(";") if v.strip())
    for user in users:
        if ":" not in user:
            raise ValueError(
                f"super.users: expected a string in format principalType:principalName but got {user}"
            )
    return users


def _compile(entries: Iterable[AccessControlEntry]) -> _Masks:
    any_host = 0
    by_host: dict[str, int] = {}
    for entry in entries:
        # UNKNOWN permissions never match (they still make the resource "have ACLs").
        if entry.permission == _DENY or entry.permission == _ALLOW:
            bit = 1 << entry.operation << (_ALLOWS if entry.permission == _ALLOW else 0)
            if entry.host == WILDCARD_HOST:
                any_host |= bit
            else:
                by_host[entry.host] = by_host.get(entry.host, 0) | bit
    return any_host, by_host


class _Patterns(Generic[V]):
    """Values by resource pattern, found by the name of a resource they apply to."""

    __slots__ = ("literal", "prefixed", "lengths", "_length_counts")

    def __init__(self) -> None:
        self.literal: dict[str, V] = {}
        self.prefixed: dict[str, V] = {}
        self.lengths: list[int] = []  # distinct lengths of the prefixes, ascending
        self._length_counts: dict[int, int] = {}

    def __bool__(self) -> bool:
        return bool(self.literal or self.prefixed)

    def set(self, pattern: ResourcePattern, value: V | None) -> None:
        """Set (None: remove) the value of ``pattern``."""
        if pattern.pattern_type != _PREFIXED:
            if value is not None:
                self.literal[pattern.name] = value
            else:
                self.literal.pop(pattern.name, None)
            return
        prefix, known = pattern.name, pattern.name in self.prefixed
        if value is not None:
            self.prefixed[prefix] = value
            if not known:
                count = self._length_counts.get(len(prefix), 0)
                self._length_counts[len(prefix)] = count + 1
                if count == 0:
                    insort(self.lengths, len(prefix))
        elif known:
            del self.prefixed[prefix]
            count = self._length_counts.pop(len(prefix)) - 1
            if count:
                self._length_counts[len(prefix)] = count
            else:
                self.lengths.remove(len(prefix))

    def applies(self, name: str) -> bool:
        """Whether some pattern applies to a resource called ``name``."""
        if name in self.literal or WILDCARD_RESOURCE in self.literal:
            return True
        return any(name[:length] in self.prefixed for length in self.lengths if length <= len(name))


def _mask(acls: _Patterns[_Masks], name: str, host: str) -> int:
    """The OR of the masks of ``acls`` (one principal's) on the patterns that apply to ``name``, from ``host``."""
    mask = 0
    found = acls.literal.get(name)
    if found is not None:
        mask = found[0] | found[1].get(host, 0)
    found = acls.literal.get(WILDCARD_RESOURCE)
    if found is not None:
        mask |= found[0] | found[1].get(host, 0)
    if acls.lengths:
        prefixed = acls.prefixed
        size = len(name)
        for length in acls.lengths:
            if length > size:
                break
            found = prefixed.get(name[:length])
            if found is not None:
                mask |= found[0] | found[1].get(host, 0)
    return mask


class _TypeIndex:
    """The ACLs of one resource type, indexed."""

    __slots__ = ("masks", "bindings", "patterns")

    def __init__(self) -> None:
        self.masks: dict[str, _Patterns[_Masks]] = {}  # by principal
        self.bindings: dict[str, dict[AclBinding, None]] = {}  # by principal, for authorize_any
        self.patterns: _Patterns[bool] = _Patterns()  # every pattern with ACLs


class Authorizer:
    """Kafka's ACL authorizer over an in-memory set of ACLs (see the module docstring)."""

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._entries: dict[ResourcePattern, dict[AccessControlEntry, None]] = {}
        self._types: dict[int, _TypeIndex] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        index = self._types.get(resource_type)
        if index is None:
            return self.allow_everyone_if_no_acl_found
        mask = 0
        acls = index.masks.get(principal)
        if acls is not None:
            mask = _mask(acls, name, host)
        acls = index.masks.get(WILDCARD_PRINCIPAL)
        if acls is not None:
            mask |= _mask(acls, name, host)
        if mask & _DENY_BITS[operation]:
            return False
        if mask & _ALLOW_BITS[operation]:
            return True
        # No ACL decides: denied if any ACL applies to the resource, else the default.
        return self.allow_everyone_if_no_acl_found and not index.patterns.applies(name)

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether ``principal`` may do ``operation`` on at least one resource of ``resource_type``.

        Kafka's Authorizer.authorizeByResourceType: allowed if allowed on a
        resource named "hardcode" (so super users, and everyone when no ACL
        applies and allow.everyone.if.no.acl.found is set); else, over the
        caller's (and ``User:*``'s) ACLs of that type for this host and for
        ``operation`` or ALL, with no implied operations: denied by a DENY on
        the wildcard resource; allowed by an ALLOW on the wildcard resource,
        or on a literal name without a DENY of that name, or on a literal name
        or prefix none of whose prefixes has a PREFIXED DENY.
        """
        if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"authorize_any needs a concrete resource type, not {resource_type!r}")
        if operation in (Op.ANY, Op.UNKNOWN):
            raise ValueError(f"authorize_any needs a concrete operation, not {operation!r}")
        if self.authorize(principal, host, operation, resource_type, _PROBE_NAME):
            return True
        index = self._types.get(resource_type)
        if index is None:
            return False
        deny_literals: set[str] = set()
        deny_prefixes: set[str] = set()
        allow_literals: set[str] = set()
        allow_prefixes: set[str] = set()
        allow_wildcard = False
        for who in {principal, WILDCARD_PRINCIPAL}:
            for binding in index.bindings.get(who, ()):
                entry, pattern = binding.entry, binding.pattern
                if entry.host != host and entry.host != WILDCARD_HOST:
                    continue
                if entry.operation != operation and entry.operation != Op.ALL:
                    continue
                literal = pattern.pattern_type == _LITERAL
                if entry.permission == _DENY:
                    if literal and pattern.name == WILDCARD_RESOURCE:
                        return False
                    (deny_literals if literal else deny_prefixes).add(pattern.name)
                elif entry.permission == _ALLOW:
                    if literal and pattern.name == WILDCARD_RESOURCE:
                        allow_wildcard = True
                    else:
                        (allow_literals if literal else allow_prefixes).add(pattern.name)
        if allow_wildcard:
            return True

        def denied_by_prefix(name: str) -> bool:
            return any(name[:i] in deny_prefixes for i in range(1, len(name) + 1))

        if any(n not in deny_literals and not denied_by_prefix(n) for n in allow_literals):
            return True
        return any(not denied_by_prefix(n) for n in allow_prefixes)

    def bindings(self, filter: AclBindingFilter = ANY_ACL) -> list[AclBinding]:
        """The ACLs ``filter`` selects (DescribeAcls), grouped by pattern."""
        return [
            AclBinding(pattern, entry)
            for pattern in self._candidates(filter)
            if filter.matches_pattern(pattern)
            for entry in self._entries[pattern]
            if filter.matches_entry(entry)
        ]

    def add(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        """Add ACLs (CreateAcls): per binding None, or why it is invalid (see `validate_binding`).

        Invalid bindings are skipped; adding an ACL that exists already succeeds
        and changes nothing, as in Kafka.
        """
        results: list[str | None] = []
        added: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for binding in bindings:
            reason = validate_binding(binding)
            results.append(reason)
            if reason is None:
                added.setdefault(binding.pattern, []).append(binding.entry)
        for pattern, entries in added.items():
            self._change(pattern, entries, ())
        return results

    def remove(self, filter: AclBindingFilter) -> list[AclBinding]:
        """Remove the ACLs ``filter`` selects (one DeleteAcls filter) and return them."""
        removed: list[AclBinding] = []
        for pattern in self._candidates(filter):
            if filter.matches_pattern(pattern):
                gone = [entry for entry in self._entries[pattern] if filter.matches_entry(entry)]
                if gone:
                    self._change(pattern, (), gone)
                    removed.extend(AclBinding(pattern, entry) for entry in gone)
        return removed

    def replace_resource(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Make ``entries`` the ACLs of ``pattern`` (none: remove them), e.g. after its znode changed."""
        _check_indexable(pattern)
        new = dict.fromkeys(entries)
        old = self._entries.get(pattern, {})
        self._change(pattern, [e for e in new if e not in old], [e for e in old if e not in new])

    def replace_all(self, bindings: Iterable[AclBinding]) -> None:
        """Make ``bindings`` the whole set of ACLs (loading at start-up); nothing changes on error.

        Not validated like `add` (ACLs already stored are taken as they are),
        but each pattern must be LITERAL or PREFIXED of a resource type other
        than ANY, else ValueError.
        """
        grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for binding in bindings:
            _check_indexable(binding.pattern)
            grouped.setdefault(binding.pattern, []).append(binding.entry)
        self._entries = {}
        self._types = {}
        self._count = 0
        for pattern, entries in grouped.items():
            self._change(pattern, entries, ())

    def _candidates(self, filter: AclBindingFilter) -> list[ResourcePattern]:
        """The patterns ``filter`` may select: looked up when it names them exactly, else all."""
        kinds = {_LITERAL: (_LITERAL,), _PREFIXED: (_PREFIXED,), PatternType.ANY: (_LITERAL, _PREFIXED)}
        exact = kinds.get(filter.pattern_type)
        if (
            filter.name is None
            or exact is None
            or filter.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN)
        ):
            return list(self._entries)
        patterns = (ResourcePattern(filter.resource_type, filter.name, kind) for kind in exact)
        return [p for p in patterns if p in self._entries]

    def _change(
        self,
        pattern: ResourcePattern,
        added: Iterable[AccessControlEntry],
        removed: Iterable[AccessControlEntry],
    ) -> None:
        """Add and remove entries of ``pattern``, and re-index what that touches."""
        entries = self._entries.setdefault(pattern, {})
        index = self._types.get(pattern.resource_type)
        if index is None:
            index = self._types[pattern.resource_type] = _TypeIndex()
        touched: set[str] = set()
        for entry in removed:
            if entry in entries:
                del entries[entry]
                self._count -= 1
                touched.add(entry.principal)
                held = index.bindings[entry.principal]
                del held[AclBinding(pattern, entry)]
                if not held:
                    del index.bindings[entry.principal]
        for entry in added:
            if entry not in entries:
                entries[entry] = None
                self._count += 1
                touched.add(entry.principal)
                index.bindings.setdefault(entry.principal, {})[AclBinding(pattern, entry)] = None
        if touched:
            by_principal: dict[str, list[AccessControlEntry]] = {p: [] for p in touched}
            for entry in entries:
                if entry.principal in by_principal:
                    by_principal[entry.principal].append(entry)
            for principal, mine in by_principal.items():
                acls = index.masks.get(principal)
                if acls is None:
                    acls = index.masks[principal] = _Patterns()
                acls.set(pattern, _compile(mine) if mine else None)
                if not acls:
                    del index.masks[principal]
            index.patterns.set(pattern, True if entries else None)
        if not entries:
            del self._entries[pattern]
        if not index.patterns:
            del self._types[pattern.resource_type]


def _check_indexable(pattern: ResourcePattern) -> None:
    if pattern.pattern_type not in (_LITERAL, _PREFIXED) or pattern.resource_type == ResourceType.ANY:
        raise ValueError(f"not an ACL's resource pattern: {pattern}")
