#!/usr/bin/env python3
"""Checks the documentation: every relative link of every tracked Markdown file resolves (the
file exists; an anchor names a heading of the target, with GitHub's slugs), and the README's C
example compiles against include/hetreward.h as C99 and as C++17. Lists every failure and exits
1 if there is one. Run from anywhere: python3 scripts/check-docs.py"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slugs(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6}\s+(.*)$", FENCE.sub("", open(path).read()), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1).strip())
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def bad_links():
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "*.md"], check=True,
                           capture_output=True, text=True).stdout.split()
    bad = []
    for f in files:
        path = os.path.join(ROOT, f)
        for m in re.finditer(r"\]\(([^)\s]+)\)", FENCE.sub("", open(path).read())):
            link = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", link):
                continue  # http:, https:, mailto:
            target, _, anchor = link.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(dest):
                bad.append(f"{f}: {link}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in slugs(dest):
                bad.append(f"{f}: {link}: no such heading")
    return bad


def c_example_compiles():
    readme = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"^```c\n(.*?)^```", readme, re.S | re.M)
    if len(blocks) != 1:
        print(f"README.md: expected one C example, found {len(blocks)}")
        return False
    with tempfile.NamedTemporaryFile("w", suffix=".c") as src:
        src.write(blocks[0])
        src.flush()
        inc = "-I" + os.path.join(ROOT, "include")
        for cmd in (["cc", "-std=c99", "-pedantic"], ["c++", "-std=c++17", "-x", "c++"]):
            run = subprocess.run(cmd + ["-Wall", "-Wextra", "-Werror", "-fsyntax-only", inc,
                                        src.name], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"README.md's C example does not compile ({cmd[0]}):\n{run.stderr}")
                return False
    return True


def main():
    bad = bad_links()
    for b in bad:
        print(b)
    ok = c_example_compiles()
    if bad or not ok:
        sys.exit(1)
    print("docs: every relative link resolves; the README's C example compiles")


if __name__ == "__main__":
    main()
