"""The package layering of ARCHITECTURE.md, checked on the source: imports point down, and none go round.

protocol/ imports nothing of ours; storage/ only protocol/; broker/ only
storage/ and protocol/; client/ only protocol/ (the ``minikafka`` command in
broker/cli.py hands client commands to client/cli.py); console/ only client/ and
protocol/ (it talks to clusters through the bundled client only). Inside broker/ and
storage/ no module reaches itself again through its imports, type-only
imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {
    "protocol": {"protocol"},
    "storage": {"storage", "protocol"},
    "broker": {"broker", "storage", "protocol"},
    "client": {"client", "protocol"},
    "console": {"console", "client", "protocol"},
}
# the `minikafka` command dispatches client and console subcommands
EXCEPTIONS = {("broker/cli.py", "client.cli"), ("broker/cli.py", "console.cli")}
CYCLE_FREE = ("broker", "storage")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    """Modules ``path`` imports: ``from pkg import mod`` counts as ``pkg.mod``, not the package."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            submodules = {m for m in submodules if _is_module(m)}
            found.update(submodules or {node.module})
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _graph(package: str) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in (REPO / package).rglob("*.py")}
    return {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down(package: str) -> None:
    wrong = []
    for path in (REPO / package).rglob("*.py"):
        for target in _imports(path):
            top = target.split(".")[0]
            where = str(path.relative_to(REPO))
            if top in ALLOWED and top not in ALLOWED[package] and (where, target) not in EXCEPTIONS:
                wrong.append(f"{path.relative_to(REPO)} imports {target}")
    assert not wrong


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize("package", CYCLE_FREE)
def test_no_import_cycles(package: str) -> None:
    assert _cycles(_graph(package)) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
