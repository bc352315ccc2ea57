"""The layout's promises, checked on the source: fklir's modules import one another without a cycle, and
each layer imports only from the layers below it (docs/ARCHITECTURE.md, "Layers").

Every import counts, at the top of a module or inside a function (a lazy import is still a dependency),
so the graph is read from each module's AST rather than from what importing it happens to load.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fklir"

# layer -> the fklir packages it must not import from
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "fklir.dialects": (
        "fklir.passes",
        "fklir.frontend",
        "fklir.jit",
        "fklir.backend",
        "fklir.runtime",
        "fklir.interpreters",
    ),
    "fklir.passes": ("fklir.frontend", "fklir.jit", "fklir.backend", "fklir.runtime"),
    # descriptors -> IR: compiling and launching are the JIT driver's
    "fklir.frontend": ("fklir.jit", "fklir.backend", "fklir.runtime"),
    # the warm path touches no IR
    "fklir.runtime": ("fklir.dialects", "fklir.passes", "fklir.frontend", "fklir.jit", "fklir.interpreters"),
    # the reference the backend is checked against
    "fklir.interpreters": ("fklir.backend",),
}

# The backend's templates print a kernel's plan (backend/plan.py) and never see an op: the analysis and the
# rules that read the IR are theirs to call, not the other way round (issue 30).
TEMPLATES = ("fklir.backend.emit_cpp", "fklir.backend.sampling", "fklir.backend.emit_flat", "fklir.backend.plan")
IR_READERS = (
    "fklir.dialects.fkl",
    "fklir.backend.typed_ir",
    "fklir.backend.kernel_plan",
    "fklir.backend.chains",
    "fklir.backend.emit_rules",
    "fklir.backend.emit_compute",
    "fklir.backend.emit_geometry",
    "fklir.backend.emit_user",
)
FORBIDDEN |= dict.fromkeys(TEMPLATES, IR_READERS)

# (importer, imported) edges that break a rule above on purpose, each with its reason
EXEMPT: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int

    def __str__(self) -> str:
        path = PACKAGE.parent / (self.importer.replace(".", "/") + ".py")
        if not path.exists():
            path = path.with_suffix("") / "__init__.py"
        return f"{self.importer} -> {self.imported} ({path.relative_to(PACKAGE.parent)}:{self.line})"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names (relative imports resolved against the importer)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _edges(modules: dict[str, Path]) -> list[Edge]:
    edges: list[Edge] = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(name, is_package, node)
                # `from fklir.runtime import cuda_driver` imports the submodule, not just the package
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names
                ]
            else:
                continue
            edges += [Edge(name, target, node.lineno) for target in dict.fromkeys(targets) if target in modules]
    return [edge for edge in edges if edge.importer != edge.imported]


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _cycle(edges: list[Edge]) -> list[Edge] | None:
    """One import cycle, as its edges, or None."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, []).append(edge)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[Edge] = []

    def visit(module: str) -> list[Edge] | None:
        state[module] = 1
        for edge in graph.get(module, []):
            if state.get(edge.imported) == 1:
                start = next((i for i, e in enumerate(path) if e.importer == edge.imported), len(path))
                return [*path[start:], edge]
            if edge.imported not in state:
                path.append(edge)
                if (found := visit(edge.imported)) is not None:
                    return found
                path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_the_graph_reads_every_kind_of_import() -> None:
    """A guard on the reader itself: a lazy import inside a function and `from package import module` are edges."""
    edges = {(edge.importer, edge.imported) for edge in _edges(_modules())}
    assert ("fklir.jit.pipeline", "fklir.backend.build") in edges  # inside Pipeline._shared_plan
    assert ("fklir.jit.default_stream", "fklir.runtime.cuda_driver") in edges  # from fklir.runtime import cuda_driver
    assert ("fklir.runtime.device_buffer", "fklir.runtime.streams") in edges


def test_no_import_cycles() -> None:
    cycle = _cycle(_edges(_modules()))
    assert cycle is None, "import cycle:\n  " + "\n  ".join(str(edge) for edge in cycle or ())


def test_layers_import_only_downwards() -> None:
    broken = [
        str(edge)
        for edge in _edges(_modules())
        for layer, forbidden in FORBIDDEN.items()
        if _in(edge.importer, layer)
        and any(_in(edge.imported, package) for package in forbidden)
        and (edge.importer, edge.imported) not in EXEMPT
    ]
    assert not broken, "imports against the layer rule:\n  " + "\n  ".join(broken)


def test_exemptions_are_still_needed() -> None:
    edges = {(edge.importer, edge.imported) for edge in _edges(_modules())}
    stale = [f"{importer} -> {imported}" for importer, imported in EXEMPT if (importer, imported) not in edges]
    assert not stale, f"exempt imports that no longer exist: {stale}"


# What compose() and the first call of a chain whose plan is on disk load: no xDSL among them
# (issue 18; tests/runtime/test_fresh_process.py checks a real process). Lowering and emitting import it inside
# their functions, which these top-level imports do not follow.
WARM_ROOTS = ("fklir", "fklir.frontend.ops", "fklir.frontend.user_ops", "fklir.jit.pipeline", "fklir.backend.build")


def _top_level_imports(path: Path) -> list[tuple[str, int]]:
    """(module, line) of the imports a module runs when it is imported: outside functions and classes' methods,
    and outside `if TYPE_CHECKING:` blocks."""
    found: list[tuple[str, int]] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.extend((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.module, node.lineno))
                if node.module.startswith("fklir"):  # `from fklir.x import y` may import the submodule y
                    found.extend((f"{node.module}.{alias.name}", node.lineno) for alias in node.names)
            elif isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(ast.parse(path.read_text(), str(path)).body)
    return found


def test_the_warm_path_imports_no_xdsl() -> None:
    modules = _modules()
    seen: set[str] = set()
    pending = list(WARM_ROOTS)
    broken: list[str] = []
    while pending:
        name = pending.pop()
        if name in seen or name not in modules:
            continue
        seen.add(name)
        for imported, line in _top_level_imports(modules[name]):
            if imported == "xdsl" or imported.startswith("xdsl."):
                broken.append(f"{name} -> {imported} ({modules[name].relative_to(PACKAGE.parent)}:{line})")
            parts = imported.split(".")
            pending.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))  # packages run their __init__
    assert "fklir.backend.kernel_layout" in seen and "fklir.runtime.launch" in seen  # the walk reaches them
    assert not broken, "the warm path imports xDSL at module level:\n  " + "\n  ".join(broken)


def test_the_templates_import_no_xdsl() -> None:
    """The templates' own imports hold no xDSL (what they import of fklir is checked by the layer rule)."""
    modules = _modules()
    found = [
        f"{template}: {name}"
        for template in TEMPLATES
        for node in ast.walk(ast.parse(modules[template].read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
        if name.split(".")[0] == "xdsl"
    ]
    assert not found, f"templates importing xDSL: {found}"
