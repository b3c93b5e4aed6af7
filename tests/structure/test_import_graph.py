"""The import structure: no circle (of modules, nor of folders) and no import from a higher layer (jobs > drivers >
partitioners > inference),
counting every import in a module (those inside functions too) and the modules the registry names by string
(``"module:Class"``, imported when first used), read from the source with ``ast``; and every one of those modules
imports, and the largest module stays under ~400 lines."""
from __future__ import annotations

import ast
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: highest first: a module may import its own layer and the layers below it
LAYERS = ("jobs", "drivers", "partitioners", "inference")
MAX_LINES = 400


def project_modules() -> dict:
    """module name -> source path, for every module of the four packages."""
    modules = {}
    for package in LAYERS:
        for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    modules[module.removesuffix(".__init__")] = path
    return modules


def registry_strings() -> list:
    """The "module:Class" entries of drivers/registry.py: every model (and its other inference modes) and family."""
    from drivers import registry

    entries = list(registry.FAMILIES.values())
    for spec in registry.MODELS.values():
        entries.append(spec.model)
        entries += [implementation for _, _, implementation in spec.engines]
    return entries


def imports_of(module: str, path: str, modules: dict) -> set:
    """The project modules ``module`` imports anywhere in its source: ``import a.b`` -> a.b, ``from a import b``
    -> a.b when that is a module, else a (relative imports resolved)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:       # import a.b.c of a package's attribute: the nearest module
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph() -> dict:
    modules = project_modules()
    graph = {module: imports_of(module, path, modules) for module, path in modules.items()}
    for entry in registry_strings():          # the registry imports what it names when it is first used
        graph["drivers.registry"].add(entry.partition(":")[0])
    return graph


def layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_every_module_and_every_registered_class_imports():
    """Every module of the four packages imports, and every "module:Class" of the registry names a class."""
    for module in project_modules():
        importlib.import_module(module)
    for entry in registry_strings():
        module, _, name = entry.partition(":")
        assert isinstance(getattr(importlib.import_module(module), name), type), entry


def test_no_import_circle_even_through_the_registry():
    """No circle among the imports the modules make (at the top and inside functions), also when the registry's
    "module:Class" strings count as imports of drivers/registry.py: nothing the registry names looks it up (a
    family is given it: ``ModelFamily.catalogue``)."""
    graph = import_graph()
    assert len(graph) > 150 and any(len(targets) > 5 for targets in graph.values())
    assert {"drivers.models.stm", "drivers.families.gibbs.family"} <= graph["drivers.registry"]
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)
    # the check can fail: a circle through a string of the registry is one
    assert circles({"drivers.registry": {"drivers.models.x"}, "drivers.models.x": {"drivers.families"},
                    "drivers.families": {"drivers.registry"}}) == [
        ["drivers.families", "drivers.models.x", "drivers.registry"]]


def test_no_import_from_a_higher_layer():
    graph = import_graph()
    upward = sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                    if layer(target) < layer(source))
    assert not upward, "imports from a higher layer: " + ", ".join(upward)


def folder(module: str) -> str:
    """The room a module stands in: its first-level folder (or module) of ``drivers`` and ``inference``
    (``drivers.store``, ``inference.gibbs``, ``inference.heldout``), else its package (``jobs``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in ("drivers", "inference") else parts[0]


def folder_graph(graph: dict) -> dict:
    """The imports between folders: ``a -> b`` when a module of folder a imports one of folder b."""
    folders = {}
    for source, targets in graph.items():
        for target in targets:
            if folder(source) != folder(target):
                folders.setdefault(folder(source), set()).add(folder(target))
    return folders


def test_no_circle_among_the_folders():
    """The folders are layers too: no two folders import each other, however indirectly (a store that reads the
    corpus format while the corpus readers check the store's publishing marker is such a circle, though no two
    modules make one), so every folder has a floor and every arrow between folders points down."""
    graph = import_graph()
    found = circles(folder_graph(graph))
    ties = [f"{source} -> {target}" for circle in found for source, targets in sorted(graph.items())
            for target in sorted(targets) if folder(source) in circle and folder(target) in circle
            and folder(source) != folder(target)]
    assert not found, "folder circles: " + "; ".join(" <-> ".join(c) for c in found) + " (" + ", ".join(ties) + ")"
    # the check can fail: two folders tied by modules that form no circle of modules
    modules = {"drivers.store.model_store": {"drivers.corpora.files"}, "drivers.corpora.bow": {"drivers.store.publish"}}
    assert not circles(modules)
    assert circles(folder_graph(modules)) == [["drivers.corpora", "drivers.store"]]


def test_imports_inside_functions_and_relative_ones_are_read(tmp_path):
    """The reader finds an import inside a function and resolves a relative one (so neither hides an arrow)."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from drivers.store import publish\n    from . import storage\n")
    modules = {"drivers.x": str(source), "drivers.store.publish": "", "drivers.storage": "", "drivers.store": ""}
    assert imports_of("drivers.x", str(source), modules) == {"drivers.store.publish", "drivers.storage"}


@pytest.mark.parametrize("package", LAYERS)
def test_every_module_is_under_the_size_of_one_idea(package):
    """Files of one idea: no module of the package above ~400 lines."""
    sizes = {module: sum(1 for _ in open(path, encoding="utf-8"))
             for module, path in project_modules().items() if module.split(".")[0] == package}
    assert sizes
    assert max(sizes.values()) <= MAX_LINES, sorted(sizes.items(), key=lambda item: -item[1])[:3]
