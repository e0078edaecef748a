"""Figures of the package's structure: import cycles, hidden and private imports, long files,
benchmark workload names in core code, and imports that break the layer contract.

``python -m lazyarray.tools.house`` prints them; ``tests/test_house.py`` holds them to the
ceilings in ``CEILINGS`` so that no change makes the house worse (lower a ceiling when a
change makes a figure better). Read from the source with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
# the tools (the showcase among them) may name the benchmark workloads (nothing in the core
# imports them)
TOOLS = ("tools/", "__main__.py", "_coverage.py", "_visualize.py", "replay.py")
WORKLOAD = re.compile(r"\bW[1-9]\b")
LONG_FILE = 800

# The figures as they stand; a change may lower them, never raise them. First measured: 32
# modules in 3 cycles, 118 function-level and 104 private cross-module imports, 5 files over
# 800 lines, 63 workload names. The function-level imports left (dynamic ones counted) each
# say why: Numba's modules load at the first kernel (and in the compile worker after its
# job reader started), a backend at its first use, NumPy's submodule of a function is known
# at the call, the tools load lazyarray for their own runs.
CEILINGS = {
    "modules in cycles": 0,
    "cycles": 0,
    "function-level imports": 8,
    "private cross-module imports": 0,
    "files over 800 lines": 1,
    "workload names in core code": 0,
    "upward imports": 0,
}


# The layers, bottom first: a module imports only from its own layer and those below it
# (`upward imports` counts the others, module-level or not). A module belongs to the layer of
# the longest prefix that names it; what no prefix names is the namespace.
LAYERS = (
    ("facts", ("version", "config", "stats", "ops")),  # op table, dtype rules, options
    ("memory", ("graph.node", "storage", "runtime.pool", "runtime.threads",
                "runtime.thread_kernels")),  # nodes,
    # storages, the buffer pool and its copies on all threads
    ("graph and IR", ("graph", "ir", "passes", "_export_emit", "_export_math",
                      "_export_elementwise")),  # graph building, HLO, passes, StableHLO text
    ("kernels", ("codegen", "backends.numba_scalar", "backends.numba_fp", "backends.numba_exp",
                 "backends.numba_log", "backends.numba_trig", "backends.numba_loops",
                 "backends.numba_ufunc",
                 "backends.numba_cpu", "backends.cuda_scalar", "backends.vector_width")),
    # code generators and the scalar helpers their kernels call
    ("runtime", ("runtime", "debug", "replay")),  # executor, kernel cache, versions, BLAS
    ("backends", ("backends",)),  # CUDA and Dask: over the runtime's kernels
    ("scheduler", ("engine", "trace_tier")),  # what runs where, the trace front end
    ("array", ("array",)),  # the Array: views, writes, versions
    ("namespace", ("",)),  # NumPy's functions and submodules
    ("tools", ("tools", "__main__")),  # showcase, environment checks: out of the core
)


def layer_of(module: str) -> int:
    """The index in LAYERS of `module` (a dotted name under the package)."""
    rel = module.partition(".")[2] if "." in module else ""
    best, length = len(LAYERS) - 2, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (rel == p or rel.startswith(p + ".") or not p) and len(p) > length:
                best, length = i, len(p)
    return best


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, mod: str, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".")
    base = base[: len(base) - node.level + (1 if is_pkg else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, modules: set[str]):
    """(target module, imported name or None, inside a function?) per import of a package
    module in `path`; (None, None, True) per `importlib.import_module` or `__import__` call,
    whatever it loads."""
    mod = module_name(path)
    tree = ast.parse(path.read_text())
    out = []

    def visit(node, in_func: bool):
        for child in ast.iter_child_nodes(node):
            inner = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((a.name, None, in_func) for a in child.names if a.name in modules)
            elif isinstance(child, ast.Call) and _is_dynamic_import(child.func):
                out.append((None, None, True))  # importlib.import_module(...): counted, no arrow
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(child, mod, path.name == "__init__.py")
                for a in child.names:
                    sub = f"{target}.{a.name}"
                    if sub in modules:
                        out.append((sub, None, in_func))
                    elif target in modules:
                        out.append((target, a.name, in_func))
            visit(child, inner)

    visit(tree, False)
    return out


def _is_dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module"
            or isinstance(func, ast.Name) and func.id == "__import__")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(graph[w])))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def figures() -> dict:
    files = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    modules = {module_name(p) for p in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    hidden = private = workload = 0
    long_files, upward = [], []
    for p in files:
        mod = module_name(p)
        rel = p.relative_to(PACKAGE).as_posix()
        for target, name, in_func in imports(p, modules):
            if target is None:  # a dynamic import: a function-level import of its own
                hidden += 1
                continue
            if target != mod:
                graph[mod].add(target)
                if layer_of(target) > layer_of(mod):
                    upward.append((mod, target, in_func))
            hidden += in_func
            private += bool(name and name.startswith("_") and not name.startswith("__")
                            and target != mod)
        text = p.read_text()
        if len(text.splitlines()) > LONG_FILE:
            long_files.append((rel, len(text.splitlines())))
        if not rel.startswith(TOOLS):
            workload += len(WORKLOAD.findall(text))
    cycles = _cycles(graph)
    return {
        "modules in cycles": sum(map(len, cycles)),
        "cycles": len(cycles),
        "function-level imports": hidden,
        "private cross-module imports": private,
        "files over 800 lines": len(long_files),
        "workload names in core code": workload,
        "upward imports": len(upward),
        "_long": long_files,
        "_upward": upward,
        "_cycles": cycles,
    }


def main() -> None:
    f = figures()
    for k, v in f.items():
        if not k.startswith("_"):
            print(f"{k:32s} {v:5d}   (ceiling {CEILINGS[k]})")
    for rel, n in sorted(f["_long"], key=lambda x: -x[1]):
        print(f"  long: {rel} ({n} lines)")
    for mod, target, in_func in f["_upward"]:
        where = "in a function" if in_func else "module level"
        print(f"  upward: {mod} ({LAYERS[layer_of(mod)][0]}) -> {target} "
              f"({LAYERS[layer_of(target)][0]}), {where}")
    for c in f["_cycles"]:
        print(f"  cycle of {len(c)}: {', '.join(m.removeprefix('lazyarray.') for m in c)}")


if __name__ == "__main__":
    sys.exit(main())
