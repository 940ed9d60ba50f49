"""The package's folders are its layers: imports only go down, and no module imports itself back.

Every ``import`` and ``from ... import`` of a pystratum module is read from
the source, at any depth (an import inside a function is an edge too: it
is how circles used to be kept apart), so the check needs nothing imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pystratum"

# Bottom to top. A layer may import its own modules and any layer below;
# layers on one row are siblings and must not import each other.
LAYERS = (
    ("kernels",),          # optional compiled loops behind one gate
    ("base",),             # the argument-error shape
    ("streams",),          # random streams
    ("strata",),           # input forms -> codes, labels, member lists
    ("policies",),         # compositions: sizes -> cuts or slots
    ("plot",),             # figures of a counts table
    ("engine",),           # assembly, the plan, the lazy plan
    ("serving",),          # sources, EpochPass, epoch rule, resume envelope, sharding
    ("torch",),            # DataLoader samplers
    ("tree", "negatives", "shards"),  # the other sampler families; readers of sharded storage
    ("r",),                # rpy2 bindings
    ("integrations",),     # trainers
    ("(package)",),        # pystratum/__init__.py: the public names
    ("cli", "demo", "negatives_torch"),  # entry points, a kept import path
    ("__main__",),         # python -m pystratum
)
RANK = {name: rank for rank, row in enumerate(LAYERS) for name in row}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(package)"


def imported_modules(path: Path, modules: set) -> set:
    """The pystratum modules ``path`` imports (a name imported from a package may be a module)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "pystratum")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "pystratum":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return found


def import_graph() -> dict:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_modules(path, modules) - {module_name(path)}
            for path in paths}


GRAPH = import_graph()


def test_every_module_is_in_a_layer():
    unplaced = sorted({layer_of(m) for m in GRAPH} - set(RANK))
    assert not unplaced, f"place these folders/modules in LAYERS: {unplaced}"


def test_the_graph_is_read():
    # A reader that found nothing would pass every other test.
    assert "pystratum.engine._assemble" in GRAPH["pystratum.engine._plan"]
    assert "pystratum.kernels" in GRAPH["pystratum.streams._index"]
    assert len(GRAPH) > 60


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_only_go_down(module):
    here = layer_of(module)
    upward = sorted(target for target in GRAPH[module]
                    if layer_of(target) != here and RANK[layer_of(target)] >= RANK[here])
    assert not upward, (f"{module} (layer {here!r}) imports {upward}, which are not below it; "
                        f"move the shared piece down a layer")


def test_no_import_circle():
    # Tarjan's strongly connected components over every module.
    index, low, on_stack, stack, circles = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH.get(node, ()):
            if target not in GRAPH:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    assert not circles, f"import circles: {circles}"
