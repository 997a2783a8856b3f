#!/usr/bin/env python3
"""The module graph of every crate under crates/: which module uses which, and its circles.

A module is a source file; `crate::a::b` and `super::x` paths are resolved to the file that
defines the longest matching module. Prints, per crate, the modules, the uses between them and
every circle (a strongly connected group of more than one module), then the totals.
Usage: scripts/module-graph.py [--quiet] [--root DIR]   (DIR holds one folder per crate)
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
if "--root" in sys.argv:
    ROOT = sys.argv[sys.argv.index("--root") + 1]
PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super)::\{([^}]*)\}", re.S)


def modules_of(src):
    """Module path (tuple) -> file, for every .rs file of a crate's src/."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if rel and rel[0] == "bin":
                continue
            mods[tuple(rel)] = os.path.join(dirpath, name)
    return mods


def strip_tests(text):
    """The file without its `#[cfg(test)] mod tests { ... }` block (tests may use anything)."""
    i = text.find("#[cfg(test)]\nmod tests")
    return text if i < 0 else text[:i]


def resolve(mods, here, kind, parts):
    base = () if kind == "crate" else here[:-1]
    path = base + tuple(parts)
    while path:
        if path in mods:
            return path
        path = path[:-1]
    return None


def graph(src):
    mods = modules_of(src)
    edges = set()
    for mod, file in mods.items():
        text = strip_tests(open(file).read())
        text = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))
        found = [(k, p.strip(":").split("::")) for k, p in PATH.findall(text)]
        for kind, group in GROUP.findall(text):
            for item in group.split(","):
                item = item.strip().split(" as ")[0]
                if item and item != "self":
                    found.append((kind, re.split(r"::", item.split("::{")[0])))
        for kind, parts in found:
            target = resolve(mods, mod, kind, [p for p in parts if p])
            if target is not None and target != mod and not (mod[: len(target)] == target):
                edges.add((mod, target))
    return mods, edges


def circles(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    succ = {n: [b for a, b in edges if a == n] for n in nodes}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for n in nodes:
        if n not in index:
            visit(n)
    return out


def main():
    quiet = "--quiet" in sys.argv
    total_mods = total_edges = total_circles = 0
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src):
            continue
        mods, edges = graph(src)
        found = circles(list(mods), edges)
        total_mods += len(mods)
        total_edges += len(edges)
        total_circles += len(found)
        print(f"{crate}: {len(mods)} modules, {len(edges)} uses, {len(found)} circles")
        for comp in found:
            print("  circle: " + " <-> ".join("::".join(m) or "(root)" for m in comp))
        if not quiet:
            for a, b in sorted(edges):
                print(f"    {'::'.join(a) or '(root)'} -> {'::'.join(b) or '(root)'}")
    print(f"total: {total_mods} modules, {total_edges} uses, {total_circles} circles")


main()
