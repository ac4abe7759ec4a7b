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


ENTRIES = (f"{NAME}.jobs", f"{NAME}.cli")  # the jobs' verbs, then the reader's, which run through the jobs' main


def _defines(module: str, function: str) -> bool:
    tree = ast.parse(module_path(module).read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body)


def _imported_by_verb(module: str, name: str) -> set[str]:
    """What `module` imports outside the functions of its other verbs (cmd_*): cmd_NAME's and its shared code's."""
    tree = ast.parse(module_path(module).read_text())
    body = [n for n in tree.body
            if not (isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_") and n.name != f"cmd_{name}")]
    return _names(ast.Module(body=body, type_ignores=[]), module, False)


def verb(name: str) -> set[str]:
    """The modules `python -m attnlab.jobs NAME` (a job's verb) or `python -m attnlab NAME` runs: its entry module
    (attnlab.cli's verbs run through attnlab.jobs' main, whose shared code counts) and what its cmd_NAME function
    and that shared code import; never another verb's imports."""
    return set(_verb(name))


@lru_cache(maxsize=None)
def _verb(name: str) -> frozenset[str]:  # read once per process, as direct() is
    owner = next((m for m in ENTRIES if _defines(m, f"cmd_{name}")), None)
    if owner is None:
        raise ValueError(f"attnlab has no verb '{name}' (no function cmd_{name} in {' or '.join(ENTRIES)})")
    through = ENTRIES[:ENTRIES.index(owner) + 1]
    names = set().union(*(_imported_by_verb(m, name) for m in through)) - set(through)
    main = {f"{NAME}.__main__"} if owner == f"{NAME}.cli" else set()
    return frozenset({NAME, *through, *main} | closure(*names))


def files(modules: set[str], root: Path | None = None) -> list[str]:
    """The source files of `modules`, relative to `root` (the project folder), sorted."""
    root = Path(root).resolve() if root else PACKAGE.parents[1]
    paths = [module_path(m) for m in modules]
    return sorted(str(p.relative_to(root)) if p.is_relative_to(root) else str(p) for p in paths)
