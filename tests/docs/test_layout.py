"""The package's shape (issues 32 and 60), as docs/layout.md draws it.

docs/layout.md names every module; no module over 700 lines and no folder over 10 modules;
no import circle among hatt's modules (function-level imports included); each wing imports
only the wings below it; no module inside the package takes a name from the package face;
a model family's knowledge lives with the family (hatt/models/), not in string tests."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hatt"
MAX_LINES = 700
MAX_MODULES = 10  # a folder's modules, its __init__.py included


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


# === The house in wings ===============================================================

# Small top-level modules every wing may use: they import nothing of hatt's wings.
BASE = {"_version", "_startup", "names", "progress", "lock", "run_dir", "presets"}
# What each wing may import besides itself and BASE (docs/layout.md, "Who imports whom").
# The order, bottom to top: layers, models, data; training's settings, channel, starts,
# run, then the methods around a run; export; inspect; classifier; serve; the faces.
# a start may read a trained model through export's one loader (--init, a teacher)
STARTS = {"layers", "models", "data", "export", "training.settings"}
ALLOWED = {
    "layers": set(),
    "models": {"layers"},
    "data": set(),
    "training.settings": {"models", "data"},
    "training.channel": {"layers", "models", "data", "training.settings"},
    "training.starts": STARTS,
    "training.run": STARTS | {"training.channel", "training.starts"},
    "training": STARTS | {"training.channel", "training.starts", "training.run"},
    "export": {"layers", "models", "data"},
    "inspect": {"layers", "models", "data", "export"},
    "classifier": {"layers", "models", "data", "training", "export", "inspect"},
    "serve": {"layers", "models", "data", "export", "inspect"},
}
FACES = ("cli", "sklearn", "__main__")  # above everything: they may import any wing
FAMILIES = {"cnn", "rnn", "transformer", "han"}
MAX_FAMILY_STRINGS = 4


def wing(name):
    """``hatt.training.run.loop`` -> ``training.run``; ``hatt.training.adversarial`` ->
    ``training``; ``hatt.models.cnn`` -> ``models``; ``hatt.names`` -> ``names``."""
    parts = name.split(".")[1:]
    if not parts:
        return ""
    if parts[0] == "training" and len(parts) > 2:
        return f"training.{parts[1]}"
    return parts[0]


def test_no_folder_over_ten_modules():
    counts = {}
    for path in PACKAGE.rglob("*.py"):
        folder = str(path.parent.relative_to(ROOT))
        counts[folder] = counts.get(folder, 0) + 1
    wide = {folder: n for folder, n in counts.items() if n > MAX_MODULES}
    assert not wide, f"folders over {MAX_MODULES} modules (split them by concern): {wide}"


def test_wings_import_only_downwards():
    known = modules()
    wrong = []
    for name, path in known.items():
        own = wing(name)
        if own in FACES or own in BASE or not own:
            continue
        allowed = ALLOWED[own] | BASE | {own}
        for target in top_level_imports(path, name, known):
            theirs = wing(target)
            # "training" allows every wing of training/; a wing's own package is its face
            if theirs and not any(theirs == a or theirs.startswith(f"{a}.") for a in allowed):
                wrong.append(f"{name} imports {target}")
    assert not wrong, "imports against the wings' order (docs/layout.md):\n" + "\n".join(wrong)


def test_no_module_takes_a_name_from_the_package_face():
    """``import hatt`` (or ``from hatt import X`` for a non-module X) inside the package would
    climb back to the face: modules import the module that owns a name."""
    faces = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in (*FACES, "cli", "__init__.py", "sklearn.py", "__main__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name == "hatt" for a in node.names):
                faces.append(str(relative))
            if isinstance(node, ast.ImportFrom) and node.module == "hatt" and not node.level:
                for alias in node.names:
                    if (
                        not (PACKAGE / alias.name).is_dir()
                        and not (PACKAGE / f"{alias.name}.py").exists()
                    ):
                        faces.append(f"{relative}: {alias.name}")
    assert not faces, f"modules taking names from the package face: {faces}"


def test_family_knowledge_lives_with_the_family():
    """Outside hatt/models/ (and presets/, names.py) a family is asked through its spec, not
    compared by name: at most a few family-name literals remain (defaults, help texts)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ("models", "presets") or relative.name == "names.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in FAMILIES:
                found.append(f"{relative}:{node.lineno} {node.value!r}")
    assert len(found) <= MAX_FAMILY_STRINGS, f"family names compared outside models/: {found}"


def test_the_lazy_face_imports_no_tensorflow_for_a_help_request(tmp_path):
    """``hatt --help`` imports hatt's face but no TensorFlow, and the face names its public
    objects without importing them until used (checked in a fresh process)."""
    import subprocess
    import sys

    script = (
        "import sys; sys.argv = ['hatt', '--help']; import hatt; "
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; "
        "assert 'hatt.classifier' not in sys.modules, 'classifier imported'; "
        "assert 'TextClassifier' in dir(hatt); print(hatt.__version__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    from hatt._version import __version__

    assert done.stdout.strip() == __version__
