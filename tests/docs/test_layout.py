"""The package's shape (issue 32): docs/layout.md names every module, no module over 700
lines, and no import circle among hatt's modules (function-level imports included)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hatt"
MAX_LINES = 700


def modules():
    """``{dotted name: path}`` of every module under hatt/ (packages as their __init__)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def top_level_imports(path, name, known):
    """The hatt modules ``path`` imports, at module level or inside functions (an import
    moved into a function to dodge a circle still closes it)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:  # `from hatt.x import y`: the submodule y if it is one
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    return {t for t in targets if t in known}


def import_graph():
    """Edges between concrete modules: a package's __init__ re-exports and is left out,
    as are imports of a module's own package (``import hatt`` for ``__version__``)."""
    known = modules()
    packages = {name for name, path in known.items() if path.name == "__init__.py"}
    graph = {}
    for name, path in known.items():
        if name in packages:
            continue
        graph[name] = top_level_imports(path, name, known) - packages
    return graph


def find_cycle(graph):
    """One import circle as a list of modules, or ``None``."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target, stack)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def test_layout_names_every_module():
    layout = (ROOT / "docs" / "layout.md").read_text()
    missing = [
        str(path.relative_to(ROOT))
        for path in modules().values()
        if path.name != "__init__.py" and path.name not in layout
    ]
    assert not missing, f"docs/layout.md does not name: {missing}"


@pytest.mark.parametrize("name,path", sorted(modules().items()))
def test_no_module_over_700_lines(name, path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it by concern"


def test_no_import_circle():
    assert find_cycle(import_graph()) is None, find_cycle(import_graph())


def test_the_cycle_finder_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a"}}) is None
