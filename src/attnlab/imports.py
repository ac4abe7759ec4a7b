"""Which of the package's source files a job runs: the modules its entry point imports, directly or not.

Read from the source with `ast` (nothing is imported), so the Snakefile can make them a rule's code
inputs: editing a file reruns exactly the jobs that import it. An import inside a function counts (the
CLI imports each verb's modules lazily), and importing a module runs its packages' __init__ files too.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
NAME = PACKAGE.name


def module_path(module: str) -> Path | None:
    """The file of an attnlab module (a package's __init__.py), or None if it is not one."""
    parts = module.split(".")
    if parts[0] != NAME:
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every attnlab module an import statement in `tree` names."""
    here = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import submodule`
    return {name for name in found if module_path(name) is not None}


def _with_parents(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


@lru_cache(maxsize=None)
def direct(module: str) -> frozenset[str]:
    path = module_path(module)
    tree = ast.parse(path.read_text(), str(path))
    return frozenset(_names(tree, module, path.name == "__init__.py"))


def closure(*entries: str) -> set[str]:
    """`entries`, every attnlab module they import, directly or not, and the packages holding them."""
    seen, todo = set(), [m for e in entries for m in _with_parents(e)]
    while todo:
        module = todo.pop()
        if module in seen or module_path(module) is None:
            continue
        seen.add(module)
        todo.extend(m for name in direct(module) for m in _with_parents(name))
    return seen


def verb(name: str) -> set[str]:
    """The modules `python -m attnlab NAME` runs: the CLI itself and what its cmd_NAME function imports."""
    cli = module_path(f"{NAME}.cli")
    tree = ast.parse(cli.read_text())
    body = [n for n in tree.body  # the verb's function and the helpers every verb shares, not other verbs
            if not (isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_") and n.name != f"cmd_{name}")]
    if not any(isinstance(n, ast.FunctionDef) and n.name == f"cmd_{name}" for n in body):
        raise ValueError(f"attnlab.cli has no verb '{name}' (no function cmd_{name})")
    names = _names(ast.Module(body=body, type_ignores=[]), f"{NAME}.cli", False)
    return {NAME, f"{NAME}.__main__", f"{NAME}.cli"} | closure(*names)  # the CLI's own file, not all its verbs


def files(modules: set[str], root: Path | None = None) -> list[str]:
    """The source files of `modules`, relative to `root` (the project folder), sorted."""
    root = Path(root).resolve() if root else PACKAGE.parents[1]
    paths = [module_path(m) for m in modules]
    return sorted(str(p.relative_to(root)) if p.is_relative_to(root) else str(p) for p in paths)
