#!/usr/bin/env python3
"""Import circles of src/ (issue 19): the import graph at module (file) granularity, edges from
`crate::a::b`, `super::x` and a mod.rs's own `child::` paths (test code excluded: tests.rs files
and everything after `#[cfg(test)]`). Prints the strongly connected components (circles).

    python3 scripts/import-circles.py src [--up]

--up: a child's import of its ancestor module is listed apart (running back up), not a circle."""
import os, re, sys
root = [a for a in sys.argv[1:] if not a.startswith("--")][0]
mods = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith(".rs") or f == "tests.rs":
            continue
        p = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
        if p[-1] in ("mod", "lib"):
            p = p[:-1]
        mods["::".join(p)] = os.path.join(d, f)
def resolve(path):
    parts = path.split("::")
    for k in range(len(parts), 0, -1):
        m = "::".join(parts[:k])
        if m in mods:
            return m
    return None
edges = {m: set() for m in mods}
ups = set()
UP = "--up" in sys.argv
for m, f in mods.items():
    src = open(f).read()
    i = src.find("#[cfg(test)]")
    if i >= 0:
        src = src[:i]
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r"pub\(in crate::[A-Za-z_:]*\)", "pub", src)  # a visibility, not an import
    # `super::` inside an inline `mod x { ... }` names this file's own module, not its parent
    pos = 0
    while True:
        mm = re.compile(r"\bmod [a-z_0-9]+ \{").search(src, pos)
        if not mm:
            break
        depth, k = 0, mm.end() - 1
        while k < len(src):
            depth += {"{": 1, "}": -1}.get(src[k], 0)
            if depth == 0:
                break
            k += 1
        inner = src[mm.end():k].replace("super::", "inline_self::")
        src = src[:mm.end()] + inner + src[k:]
        pos = mm.end() + len(inner)
    # expand `use crate::{a, b::c}` groups
    refs = []
    for g in re.finditer(r"crate::\{([^}]*)\}", src):
        refs += [x.strip() for x in g.group(1).split(",")]
    refs += re.findall(r"crate::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)", src)
    parent = m.rsplit("::", 1)[0] if "::" in m else ""
    is_modrs = f.endswith("mod.rs") or f.endswith("lib.rs")
    selfmod = m
    supers = re.findall(r"\bsuper::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)", src)
    # `use super::{a, b::c}` names items of the parent itself (or of its children)
    for g in re.finditer(r"\bsuper::\{([^}]*)\}", src):
        supers += [x.strip() for x in g.group(1).split(",") if x.strip()]
    for s in supers:
        base = parent if not is_modrs else (m.rsplit("::", 1)[0] if "::" in m else "")
        refs.append((base + "::" + s) if base else s)
    if is_modrs:
        for c in re.findall(r"\bmod ([a-z_0-9]+);", src):
            for s in re.findall(r"(?<![:\w])" + c + r"::([A-Za-z_][A-Za-z0-9_:]*)", src):
                refs.append((m + "::" if m else "") + c + "::" + s)
    for r in refs:
        t = resolve(r)
        if t is not None and t != m and m != "":
            if UP and m.startswith(t + "::"):
                ups.add((m, t))
            else:
                edges[m].add(t)
# Tarjan
idx, low, st, on, out, c = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx:
            sc(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        out.append(comp)
sys.setrecursionlimit(10000)
for v in edges:
    if v not in idx: sc(v)
circles = [sorted(x) for x in out if len(x) > 1]
print(f"{len(circles)} circle(s)")
for comp in circles:
    s = set(comp)
    print("  {" + ", ".join(comp) + "}: " + "; ".join(f"{a} -> {b}" for a in comp for b in sorted(edges[a]) if b in s))
if UP:
    print(f"{len(ups)} import(s) of a child from its ancestor module (running back up):")
    for a, b in sorted(ups):
        print(f"  {a} -> {b}")
