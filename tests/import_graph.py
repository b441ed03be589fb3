"""The project's import graph, read from source with `ast` (nothing is imported).

Modules are named by their folders (`tasks.check.evaluate` for tasks/check/evaluate.py): the
import name's `kernel_bakeoff.` prefix (kernel_bakeoff/__init__.py) is the same on every one.

An edge A -> B means module A imports B, at module level or inside a function (a lazy import
still ties A to B: a circle of lazy imports is a circle of dependencies, only postponed), but not
under `if TYPE_CHECKING:` (never run) and not in a package's module-level `__getattr__` (a lazy
re-export: it runs only when a name of the package is asked for). An edge from a module to a
package above it is dropped: importing the module has imported that package already.

    python -m tests.import_graph          prints every circle (strongly connected component)
    python -m tests.import_graph --rooms  the rooms (tasks/<room>/, flows, scripts) that import
                                          each other, and the imports made inside functions
    python -m tests.import_graph --floor  the imports from a room to a room above it on FLOOR
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("flows", "tasks", "scripts")
PREFIX = "kernel_bakeoff."  # the installed import name of each of PACKAGES

# The orchestration floor, bottom to top: a room imports only the rooms below it, at module level
# or inside a function (tests/test_import_walls.py; a room not on it counts as above them all).
FLOOR = (
    "scripts",  # the harness: it runs on a bare GPU box and imports none of the rooms above
    "tasks",  # tasks/__init__.py: a docstring; it imports nothing, and any tasks room runs it
    "tasks.models",
    "tasks.search",
    "tasks.run",
    "tasks.backends",
    "tasks.check",
    "tasks.discover",
    "tasks.report",
    "tasks.history",
    "tasks.apply",
    "tasks.campaign",
    "tasks.engine",
    # The model's room, near the top: it is being made a leaf that nothing without a model
    # imports, so only flows (which start a model's lanes) stands above it.
    "tasks.agents",
    "flows",
)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def room(module: str) -> str:
    """A module's room: `tasks.<room>` inside tasks/, else its top-level package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "tasks" and len(parts) > 1 else parts[0]


def room_edges(graph: dict[str, set[str]] | None = None) -> dict[tuple[str, str], list]:
    """Every (room, other room) an import crosses, with the module edges that cross it."""
    graph = edges() if graph is None else graph
    out: dict[tuple[str, str], list] = {}
    for a, targets in graph.items():
        for b in targets:
            if room(a) != room(b):
                out.setdefault((room(a), room(b)), []).append((a, b))
    return out


def room_graph(graph: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Rooms as the nodes: room A -> room B when a module of A imports one of B."""
    rooms: dict[str, set[str]] = {}
    for a, b in room_edges(graph):
        rooms.setdefault(a, set()).add(b)
        rooms.setdefault(b, set())
    return rooms


def two_way_rooms(graph: dict[str, set[str]] | None = None) -> list[tuple[str, str]]:
    """The room pairs that import each other (a circle of rooms, if not of modules)."""
    crossing = room_edges(graph)
    return sorted((a, b) for a, b in crossing if a < b and (b, a) in crossing)


def arrows_up(graph: dict[str, set[str]] | None = None) -> list[tuple[str, str]]:
    """Each module edge (a, b) from a room to a room above it on FLOOR."""
    order = {name: i for i, name in enumerate(FLOOR)}
    return sorted(
        edge
        for (a, b), crossing in room_edges(graph).items()
        if order.get(b, len(FLOOR)) > order.get(a, len(FLOOR))
        for edge in crossing
    )


def function_imports() -> int:
    """Imports of the project's own modules made inside a function, over flows, tasks, scripts."""
    known = modules()
    count = 0
    for path in known.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom) and _own(inner):
                        count += 1
    return count


def unexplained_function_imports(prefix: str) -> list[str]:
    """`path:line` of each import of a project module inside a function of a module under
    `prefix` with no comment saying why it is there: on its line, or on the line above it or
    above the run of import (and blank) lines it stands in."""
    return [where for where, explained in imports_in_functions(prefix) if not explained]


def imports_in_functions(prefix: str) -> list[tuple[str, bool]]:
    """(`path:line`, whether a comment says why) of each import statement of a project module
    inside a function of a module under `prefix`."""
    found = []
    for name, path in sorted(modules().items()):
        if not (name == prefix or name.startswith(prefix + ".")):
            continue
        lines = path.read_text().splitlines()
        seen: set[int] = set()
        for node in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if not (isinstance(inner, ast.Import | ast.ImportFrom) and _own(inner)):
                    continue
                if inner.lineno in seen:
                    continue
                seen.add(inner.lineno)
                explained = _explained(lines, inner.lineno, inner.end_lineno)
                found.append((f"{path.relative_to(ROOT)}:{inner.lineno}", explained))
    return found


def _explained(lines: list[str], first: int, last: int) -> bool:
    if any("#" in lines[i - 1] for i in range(first, last + 1)):
        return True
    above = first - 1
    while above >= 1 and (
        lines[above - 1].strip().startswith(("from ", "import ")) or not lines[above - 1].strip()
    ):
        if "#" in lines[above - 1]:
            return True
        above -= 1
    return above >= 1 and lines[above - 1].strip().startswith("#")


def _short(name: str) -> str:
    return name.removeprefix(PREFIX)


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or _short(node.module or "").split(".")[0] in PACKAGES
    return any(_short(alias.name).split(".")[0] in PACKAGES for alias in node.names)


def bare_imports(root: Path = ROOT) -> list[str]:
    """`path:line` of each import, anywhere in the repository's Python, of `flows`, `tasks` or
    `scripts` by the bare name, which is not installed (kernel_bakeoff/__init__.py)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0].startswith(".") or rel.parts[0] in ("runs", "build", "test-artifacts"):
            continue
        try:
            tree = ast.parse(path.read_text(), str(path))
        except SyntaxError:  # a corpus file written to fail to parse
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(n.split(".")[0] in PACKAGES for n in names):
                found.append(f"{rel}:{node.lineno}")
    return found


def _imports(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """Every name an import in `tree` may bind to a module: `from a import b` yields both `a`
    and `a.b` (b may be a submodule); the caller keeps those that are modules."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if is_package and node is tree and getattr(child, "name", "") == "__getattr__":
                continue
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                out.update(_short(alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _short(child.module or "")
                if child.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                out.add(base)
                out.update(f"{base}.{alias.name}" for alias in child.names)
            visit(child)

    visit(tree)
    return out


def _resolve(target: str, known: dict[str, Path]) -> set[str]:
    """`a.b.c` imports `a`, `a.b` and `a.b.c` (each package's __init__ runs)."""
    parts = target.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & known.keys()


def edges() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = _imports(tree, name, path.name == "__init__.py")
        found = set().union(*(_resolve(t, known) for t in targets))
        graph[name] = {t for t in found if not (name + ".").startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph = edges() if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
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


if __name__ == "__main__":
    import sys

    if "--rooms" in sys.argv[1:]:
        crossing = room_edges()
        pairs = two_way_rooms()
        print(f"{len(pairs)} room pairs import each other")
        for a, b in pairs:
            print(f"  {a} -> {b}: {len(crossing[a, b])}; back: {crossing[b, a]}")
        print(f"circles of rooms: {circles(room_graph())}")
        print(f"{function_imports()} imports of the project's modules inside functions")
        for package in PACKAGES:
            found = imports_in_functions(package)
            bare = sum(not explained for _, explained in found)
            print(
                f"  {package}/: {len(found)} import statements, {bare} with no comment saying why"
            )
    elif "--floor" in sys.argv[1:]:
        up = arrows_up()
        print(f"{len(up)} imports from a room to a room above it on the floor")
        for a, b in up:
            print(f"  {a} -> {b}")
    else:
        for circle in circles():
            print(len(circle), " ".join(circle))
