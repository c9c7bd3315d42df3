"""Print the import cycles among cudadoctor's modules; exit 1 when there is one.

Every import counts, also those inside functions (a lazy import still ties two modules together) and
those under ``if TYPE_CHECKING:``. A cycle is a strongly connected component of the module graph with more
than one module. Run from the repository root: ``python tools/import_cycles.py [--edges]``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "cudadoctor"


def modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every .py file of the package."""
    found: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules that ``module`` imports (a ``from X import name`` counts X.name when it is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path.name == "__init__.py", node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    return {t for t in targets if t in known and t != module}


def graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def components(edges: dict[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    yield sorted(component)


def main(argv: list[str]) -> int:
    edges = graph(Path.cwd())
    cycles = [c for c in components(edges) if len(c) > 1]
    total = sum(len(targets) for targets in edges.values())
    print(f"{len(edges)} modules, {total} imports, {len(cycles)} cycle(s)")
    for number, members in enumerate(sorted(cycles), 1):
        print(f"cycle {number}: {len(members)} modules")
        inside = set(members)
        for member in members:
            within = sorted(edges[member] & inside)
            print(f"  {member} -> {', '.join(within)}" if "--edges" in argv else f"  {member}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
