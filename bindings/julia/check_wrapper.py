#!/usr/bin/env python3
"""Checks the Julia wrapper (Hetreward/src/Hetreward.jl) against the C header.

Julia cannot be installed on the CI machines, so the wrapper is never executed there; this
checker is what stands between a header change and a wrapper that passes wrong arguments. It
parses include/hetreward.h and the Julia source and fails if

* an exported C function has no ``@ccall libhetreward.NAME(...)`` in the wrapper, or a
  ``@ccall`` names a function the header does not have;
* a ``@ccall`` has a different number of arguments, or an argument or return type that is not
  the Julia spelling of the C type (double -> Cdouble, float -> Cfloat, size_t -> Csize_t,
  uint32_t -> UInt32 (or an alias of it such as hetreward_status), int64_t -> Int64,
  bool -> Bool, T * -> Ptr{T}, const char * -> Cstring, void * / function pointers ->
  Ptr{Cvoid}, pointers to opaque structs -> Ptr{that struct} or Ptr{Cvoid});
* a C struct with fields has no Julia ``struct`` of the same name with the same fields, in
  the same order, of the same types (a wrong field shifts the layout of every later one);
* an integer constant of the header (#define or enum value) is missing or has another value;
* a handle's pointer can be freed under a call (issue 32): ``live(h)`` (the pointer passed to
  C) used outside an ``in_use(..., h, ...)`` block, a C free function called anywhere but a
  ``free_now!`` method, or a handle type whose finalizer is not ``free_now!`` or whose
  ``close`` does not go through ``close_handle!``;
* an option family of the header (HETREWARD_OPTION_*) has no table in the wrapper's
  ``OPTION_TABLES`` (each an empty ``Dict{Symbol,UInt32}()`` filled in ``__init__`` from the
  library's hetreward_option_at), or an option table is written as a literal
  (``Dict(:name => HETREWARD_<FAMILY>_...)``), i.e. the names are spelled a second time.

Usage:
    check_wrapper.py [--header H] [--wrapper W]   # check (exit 1 on any problem)
    check_wrapper.py --self-test                  # prove the checker catches broken wrappers
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_HEADER = REPO / "include" / "hetreward.h"
DEFAULT_WRAPPER = HERE / "Hetreward" / "src" / "Hetreward.jl"

# A canonical type: (base, pointer depth). base is a scalar name ("double", "uint32_t", ...),
# "void", "char", "fnptr", or a struct name.
Canon = Tuple[str, int]

SCALARS = {"double", "float", "size_t", "uint8_t", "uint32_t", "uint64_t", "int64_t", "int32_t",
           "int", "bool", "char", "void"}


@dataclass
class Header:
    functions: Dict[str, Tuple[str, List[Tuple[str, str]]]] = field(default_factory=dict)
    typedefs: Dict[str, str] = field(default_factory=dict)  # alias -> C type text
    structs: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)  # with fields
    opaque: set = field(default_factory=set)
    constants: Dict[str, int] = field(default_factory=dict)

    def canon(self, ctype: str) -> Canon:
        """Canonical form of a C type spelling, typedefs resolved."""
        t = ctype.replace("const", " ")
        depth = t.count("*")
        t = " ".join(t.replace("*", " ").split())
        t = re.sub(r"^(struct|enum)\s+", "", t)
        seen = set()
        while t in self.typedefs and t not in seen:
            seen.add(t)
            target = self.typedefs[t]
            if target == "fnptr":
                return ("fnptr", depth)
            inner = target.replace("const", " ")
            depth += inner.count("*")
            t = " ".join(inner.replace("*", " ").split())
            t = re.sub(r"^(struct|enum)\s+", "", t)
        return (t, depth)


def strip_c_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse_header(text: str) -> Header:
    h = Header()
    src = strip_c_comments(text)
    for m in re.finditer(r"^\s*#define\s+(HETREWARD_\w+)\s+(-?\d+)\s*$", src, flags=re.M):
        h.constants[m.group(1)] = int(m.group(2))
    # Preprocessor lines (the enum's C23 / C++ guards) are not needed below.
    body = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith("#"))
    # enum NAME : uint32_t? { A = 0, ... };  -> constants, and NAME resolves to its type.
    for m in re.finditer(r"enum\s+(\w+)\s*(?::\s*(\w+))?\s*\{(.*?)\}\s*;", body, flags=re.S):
        name, underlying, members = m.groups()
        h.typedefs.setdefault(name, underlying or "int")
        for mm in re.finditer(r"(HETREWARD_\w+)\s*=\s*(-?\d+)", members):
            h.constants[mm.group(1)] = int(mm.group(2))
    body = re.sub(r"enum\s+\w+\s*\{.*?\}\s*;", " ", body, flags=re.S)
    # typedef struct NAME { fields } NAME;
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", body, flags=re.S):
        name, fields_text, alias = m.groups()
        fields = []
        for decl in fields_text.split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            fm = re.match(r"(.*?[\s\*])(\w+)$", decl)
            if not fm:
                raise ValueError(f"cannot parse field {decl!r} of struct {name}")
            fields.append((fm.group(2), fm.group(1).strip()))
        h.structs[name] = fields
        if alias != name:
            h.typedefs[alias] = name
    body = re.sub(r"typedef\s+struct\s+\w+\s*\{.*?\}\s*\w+\s*;", " ", body, flags=re.S)
    # typedef RET (*NAME)(ARGS);  -> function pointer
    for m in re.finditer(r"typedef\s+[^;()]*\(\s*\*\s*(\w+)\s*\)\s*\([^;]*\)\s*;", body):
        h.typedefs[m.group(1)] = "fnptr"
    body = re.sub(r"typedef\s+[^;()]*\(\s*\*\s*\w+\s*\)\s*\([^;]*\)\s*;", " ", body)
    # typedef struct NAME NAME;  (opaque) and typedef TYPE NAME;
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", body):
        h.opaque.add(m.group(1))
        if m.group(2) != m.group(1):
            h.typedefs[m.group(2)] = m.group(1)
    body = re.sub(r"typedef\s+struct\s+\w+\s+\w+\s*;", " ", body)
    for m in re.finditer(r"typedef\s+([\w\s\*]+?)\s*\b(\w+)\s*;", body):
        target, alias = " ".join(m.group(1).split()), m.group(2)
        if target == f"enum {alias}":
            continue  # the C23 spelling of the status typedef; the enum entry has its type
        # The header typedefs hetreward_status twice under #if; both are uint32_t in effect.
        h.typedefs[alias] = target
    # Function prototypes: RET NAME(ARGS);
    for m in re.finditer(r"([A-Za-z_][\w\s\*]*?)\b(hetreward_\w+)\s*\(([^;{}]*?)\)\s*;", body,
                         flags=re.S):
        ret, name, args = m.groups()
        ret = " ".join(ret.split())
        if ret.startswith("typedef"):
            continue
        params = []
        args = " ".join(args.split())
        if args and args != "void":
            for a in args.split(","):
                a = a.strip()
                am = re.match(r"(.*?[\s\*])(\w+)$", a)
                if not am:
                    raise ValueError(f"cannot parse parameter {a!r} of {name}")
                params.append((am.group(2), am.group(1).strip()))
        h.functions[name] = (ret, params)
    return h


# ------------------------------------------------------------------------------------ Julia

JULIA_SCALARS = {
    "Cdouble": "double", "Float64": "double",
    "Cfloat": "float", "Float32": "float",
    "Csize_t": "size_t", "UInt": "size_t",
    "UInt8": "uint8_t", "Cuchar": "uint8_t",
    "UInt32": "uint32_t", "Cuint": "uint32_t",
    "UInt64": "uint64_t", "Culonglong": "uint64_t",
    "Int64": "int64_t", "Clonglong": "int64_t",
    "Int32": "int32_t",
    "Cint": "int",
    "Bool": "bool",
    "Cchar": "char",
    "Cvoid": "void", "Nothing": "void",
}


@dataclass
class CCall:
    name: str
    args: List[Tuple[str, str]]  # (expression, Julia type)
    ret: str
    line: int


@dataclass
class Wrapper:
    ccalls: List[CCall] = field(default_factory=list)
    aliases: Dict[str, str] = field(default_factory=dict)  # const NAME = TYPE
    structs: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)
    constants: Dict[str, int] = field(default_factory=dict)


def strip_julia_comments(text: str) -> str:
    """Removes #= =# blocks, # comments and docstrings, keeping line numbers."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    text = re.sub(r'"""(.*?)"""', blank, text, flags=re.S)
    text = re.sub(r"#=.*?=#", blank, text, flags=re.S)
    out = []
    for line in text.split("\n"):
        in_str = False
        for i, ch in enumerate(line):
            if ch == '"':
                in_str = not in_str
            elif ch == "#" and not in_str:
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def split_top(s: str, sep: str = ",") -> List[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def parse_wrapper(text: str) -> Wrapper:
    w = Wrapper()
    src = strip_julia_comments(text)
    for m in re.finditer(r"@ccall\s+libhetreward\s*\.\s*(\w+)\s*\(", src):
        name, start = m.group(1), m.end()
        depth, i = 1, start
        while depth:
            if i >= len(src):
                raise ValueError(f"unbalanced parentheses in the @ccall of {name}")
            depth += {"(": 1, ")": -1}.get(src[i], 0)
            i += 1
        args_text = src[start:i - 1]
        rm = re.match(r"\s*::\s*([\w{}.]+(?:\{[^\n]*?\})?)", src[i:])
        if not rm:
            raise ValueError(f"the @ccall of {name} has no ::ReturnType")
        args = []
        for a in split_top(" ".join(args_text.split())):
            if "::" not in a:
                raise ValueError(f"argument {a!r} of the @ccall of {name} has no ::Type")
            expr, typ = a.rsplit("::", 1)
            args.append((expr.strip(), typ.replace(" ", "")))
        line = src.count("\n", 0, m.start()) + 1
        w.ccalls.append(CCall(name, args, rm.group(1).replace(" ", ""), line))
    for m in re.finditer(r"^\s*const\s+(\w+)\s*=\s*(.+?)\s*$", src, flags=re.M):
        name, value = m.groups()
        cm = re.fullmatch(r"(?:\w+\()?(-?\d+)\)?", value)
        if cm and name.startswith("HETREWARD_"):
            w.constants[name] = int(cm.group(1))
        else:
            w.aliases[name] = value.replace(" ", "")
    lines = src.split("\n")
    i = 0
    while i < len(lines):
        sm = re.match(r"^\s*(?:mutable\s+)?struct\s+(\w+)(.*)$", lines[i])
        i += 1
        if not sm:
            continue
        name, rest = sm.groups()
        fields = []
        if not re.search(r"\bend\b", rest):  # not a one-line `struct X end`
            # Fields are the `name::Type` lines up to the first line that starts with `end`
            # or `function` (an inner constructor, only in the Julia-side handle types).
            while i < len(lines) and not re.match(r"^\s*(end|function)\b", lines[i]):
                fm = re.match(r"^\s*(\w+)\s*::\s*(\S+)\s*$", lines[i])
                if fm:
                    fields.append((fm.group(1), fm.group(2)))
                i += 1
        w.structs[name] = fields
    return w


def julia_canon(typ: str, w: Wrapper, h: Header) -> Optional[Canon]:
    """Canonical form of a Julia type spelling, or None if unknown."""
    seen = set()
    while typ in w.aliases and typ not in seen:
        seen.add(typ)
        typ = w.aliases[typ]
    if typ == "Cstring":
        return ("char", 1)
    pm = re.fullmatch(r"Ptr\{(.+)\}", typ)
    if pm:
        inner = julia_canon(pm.group(1), w, h)
        return None if inner is None else (inner[0], inner[1] + 1)
    if typ in JULIA_SCALARS:
        return (JULIA_SCALARS[typ], 0)
    if typ in h.structs or typ in h.opaque:
        return (typ, 0)
    return None


def compatible(c: Canon, j: Optional[Canon], h: Header) -> bool:
    if j is None:
        return False
    if c == j:
        return True
    # const char * may also be Ptr{UInt8}.
    if c == ("char", 1) and j == ("uint8_t", 1):
        return True
    # Function pointers and untyped / opaque pointers may be Ptr{Cvoid}.
    if c[0] == "fnptr" and c[1] == 0 and j == ("void", 1):
        return True
    if c[0] in h.opaque and j == ("void", c[1]):
        return True
    return False


def spell(c: Canon) -> str:
    return c[0] + " " + "*" * c[1] if c[1] else c[0]


def check(header_text: str, wrapper_text: str) -> Tuple[List[str], str]:
    """Returns (problems, summary)."""
    h = parse_header(header_text)
    w = parse_wrapper(wrapper_text)
    problems = []
    if not h.functions:
        problems.append("no functions found in the header (parser out of date?)")
    by_name: Dict[str, List[CCall]] = {}
    for c in w.ccalls:
        by_name.setdefault(c.name, []).append(c)
        if c.name not in h.functions:
            problems.append(f"line {c.line}: @ccall of {c.name}, which the header does not export")
    for name, (ret, params) in sorted(h.functions.items()):
        calls = by_name.get(name)
        if not calls:
            problems.append(f"{name}: exported by the header, not wrapped (no @ccall)")
            continue
        for c in calls:
            where = f"line {c.line}: {name}"
            if len(c.args) != len(params):
                problems.append(f"{where}: {len(c.args)} arguments, the header has {len(params)}")
                continue
            for i, ((pname, ptype), (expr, jtype)) in enumerate(zip(params, c.args)):
                want = h.canon(ptype)
                if not compatible(want, julia_canon(jtype, w, h), h):
                    problems.append(f"{where}: argument {i + 1} ({pname}) is ::{jtype}, "
                                    f"the C type is {ptype} ({spell(want)})")
            want = h.canon(ret)
            if not compatible(want, julia_canon(c.ret, w, h), h):
                problems.append(f"{where}: returns ::{c.ret}, the C type is {ret} ({spell(want)})")
    for name, fields in sorted(h.structs.items()):
        jf = w.structs.get(name)
        if jf is None:
            problems.append(f"struct {name}: no Julia struct of that name")
            continue
        if [f for f, _ in jf] != [f for f, _ in fields]:
            problems.append(f"struct {name}: Julia fields {[f for f, _ in jf]}, "
                            f"C fields {[f for f, _ in fields]}")
            continue
        for (fname, ctype), (_, jtype) in zip(fields, jf):
            want = h.canon(ctype)
            if not compatible(want, julia_canon(jtype, w, h), h):
                problems.append(f"struct {name}: field {fname} is ::{jtype}, the C type is "
                                f"{ctype} ({spell(want)})")
    for name in sorted(h.opaque):
        if name not in w.structs:
            problems.append(f"opaque struct {name}: no Julia type of that name")
    for name, value in sorted(h.constants.items()):
        if name not in w.constants:
            problems.append(f"constant {name} = {value}: missing from the wrapper")
        elif w.constants[name] != value:
            problems.append(f"constant {name}: {w.constants[name]} in the wrapper, {value} in C")
    problems += check_option_tables(h, wrapper_text)
    problems += check_handle_guard(wrapper_text)
    summary = (f"{len(h.functions)} functions ({len(w.ccalls)} @ccall sites), "
               f"{len(h.structs)} structs, {len(h.opaque)} opaque types, "
               f"{len(h.constants)} constants")
    return problems, summary


HANDLES = ("Dataset", "Fitter", "Model")


def check_handle_guard(wrapper_text: str) -> List[str]:
    """Every pointer passed to C is taken inside a use of its handle (in_use), and only the
    guard frees: close goes through close_handle!, the finalizer and the last use through
    free_now!, the only place that calls a C free function."""
    problems = []
    lines = strip_julia_comments(wrapper_text).split("\n")
    stack: List[Tuple[int, set]] = []  # open `in_use(...) do` blocks: (indent, handles)
    function = None  # the top-level function (or one-line method) the line is in
    for n, line in enumerate(lines, 1):
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        while stack and stripped == "end" and indent == stack[-1][0]:
            stack.pop()
        m = re.match(r"(?:function\s+)?([A-Za-z_][\w.!]*)\(.*?(?:\)\s*=|$)", line)
        if indent == 0 and m and (line.startswith("function ") or re.search(r"\)\s*=", line)):
            function = m.group(1)
        m = re.search(r"\bin_use\(([\w, ]+)\) do\s*$", line)
        if m:
            stack.append((indent, {x.strip() for x in m.group(1).split(",")}))
            continue
        if line.startswith("function live("):
            continue
        inline = set()
        m = re.search(r"\bin_use\(\(\) ->.*,\s*([\w, ]+)\)\)?\s*$", line)
        if m:
            inline = {x.strip() for x in m.group(1).split(",")}
        held = set().union(inline, *(hs for _, hs in stack))
        for x in re.findall(r"\blive\((\w+)\)", line):
            if x not in held:
                problems.append(f"line {n}: live({x}) outside in_use (its C object may be "
                                f"freed by a close in another task during the call)")
        for name in re.findall(r"\b(hetreward_(?:dataset|fitter|model)_free)\(", line):
            if "@ccall" in line or re.match(rf"{name}\(\w+\) =", line):
                continue
            if function != "free_now!":
                problems.append(f"line {n}: {name} called in {function}, not in free_now! "
                                f"(a free outside the use guard)")
    text = strip_julia_comments(wrapper_text)
    for t in HANDLES:
        body = re.search(rf"^mutable struct {t}\b(.*?)^end$", text, re.S | re.M)
        if body is None or "finalizer(free_now!," not in body.group(1):
            problems.append(f"{t}: its finalizer is not free_now!")
        close = re.search(rf"(?:function Base\.close\(\w+::{t}\)(?:.*\n)*?end|"
                          rf"Base\.close\(\w+::{t}\) = [^\n]*)", text)
        if close is None or "close_handle!" not in close.group(0):
            problems.append(f"{t}: Base.close does not go through close_handle!")
    return problems


def check_option_tables(h: Header, wrapper_text: str) -> List[str]:
    """The option tables come from the library: one per family of the header, declared empty
    and filled in __init__; no literal table of an option family's constants."""
    src = strip_julia_comments(wrapper_text)
    families = sorted(k[len("HETREWARD_OPTION_"):] for k in h.constants
                      if k.startswith("HETREWARD_OPTION_"))
    problems = []
    if not families:
        return ["no HETREWARD_OPTION_* family in the header (parser out of date?)"]
    m = re.search(r"^\s*const\s+OPTION_TABLES\s*=\s*\((.*?)\)\s*$", src, flags=re.M | re.S)
    if not m:
        return ["no `const OPTION_TABLES = (TABLE => HETREWARD_OPTION_X, ...)`: the option "
                "tables are not built from the library"]
    tables = {}
    for entry in split_top(" ".join(m.group(1).split())):
        em = re.fullmatch(r"(\w+)\s*=>\s*HETREWARD_OPTION_(\w+)", entry)
        if not em:
            problems.append(f"OPTION_TABLES: cannot read the entry {entry!r}")
            continue
        tables[em.group(2)] = em.group(1)
    for f in families:
        if f not in tables:
            problems.append(f"option family HETREWARD_OPTION_{f}: no table in OPTION_TABLES")
    for f, table in sorted(tables.items()):
        if f not in families:
            problems.append(f"OPTION_TABLES: {table} => HETREWARD_OPTION_{f}, a family the "
                            f"header does not have")
        if not re.search(rf"^\s*const\s+{table}\s*=\s*Dict\{{Symbol,\s*UInt32\}}\(\)\s*$",
                         src, flags=re.M):
            problems.append(f"option table {table}: not declared `const {table} = "
                            f"Dict{{Symbol,UInt32}}()` (empty, filled from the library)")
    init = re.search(r"^function\s+__init__\(\)(.*?)^end\b", src, flags=re.M | re.S)
    if not init or "OPTION_TABLES" not in init.group(1) or "option_table(" not in init.group(1):
        problems.append("__init__ does not fill OPTION_TABLES with option_table(family)")
    member = "|".join(re.escape(f) for f in families if f != "OPTION")
    for dm in re.finditer(r"Dict\s*\(", src):
        depth, i = 1, dm.end()
        while depth and i < len(src):
            depth += {"(": 1, ")": -1}.get(src[i], 0)
            i += 1
        body = src[dm.end():i - 1]
        if re.search(rf"=>\s*HETREWARD_(?:{member})_\w+|HETREWARD_(?:{member})_\w+\s*=>", body):
            line = src.count("\n", 0, dm.start()) + 1
            problems.append(f"line {line}: a literal option table (Dict(... => HETREWARD_...)): "
                            f"fill it from the library through OPTION_TABLES")
    return problems


# ------------------------------------------------------------------------------- self-test

# Each mutation: (description, old, new, expected fragment of a problem). Applied to the real
# wrapper, each must make the check fail with that problem; the real wrapper must pass.
MUTATIONS = [
    ("a function not wrapped",
     "@ccall libhetreward.hetreward_fitter_cancel(", "@ccall libhetreward.hetreward_fitter_cancel_x(",
     "hetreward_fitter_cancel: exported by the header, not wrapped"),
    ("an argument dropped",
     "alpha::Cdouble,\n        out_rewards::Ptr{hetreward_reward}",
     "out_rewards::Ptr{hetreward_reward}",
     "hetreward_model_score: 5 arguments, the header has 6"),
    ("size_t passed as UInt32",
     "hetreward_model_theta(model::Ptr{hetreward_model},\n        out_values::Ptr{Cdouble}, len::Csize_t)",
     "hetreward_model_theta(model::Ptr{hetreward_model},\n        out_values::Ptr{Cdouble}, len::UInt32)",
     "argument 3 (len) is ::UInt32"),
    ("float passed as double",
     "hetreward_model_score(model::Ptr{hetreward_model}, phi::Ptr{Cfloat}",
     "hetreward_model_score(model::Ptr{hetreward_model}, phi::Ptr{Cdouble}",
     "argument 2 (phi) is ::Ptr{Cdouble}"),
    ("a missing level of indirection",
     "hetreward_model_load(path::Cstring,\n        out_model::Ptr{Ptr{hetreward_model}})",
     "hetreward_model_load(path::Cstring,\n        out_model::Ptr{hetreward_model})",
     "argument 2 (out_model) is ::Ptr{hetreward_model}"),
    ("a wrong return type",
     "hetreward_dataset_n(dataset::Ptr{hetreward_dataset})::Csize_t",
     "hetreward_dataset_n(dataset::Ptr{hetreward_dataset})::Cint",
     "hetreward_dataset_n: returns ::Cint"),
    ("a handle of the wrong type",
     "hetreward_fitter_fit(fitter::Ptr{hetreward_fitter},\n        dataset::Ptr{hetreward_dataset}",
     "hetreward_fitter_fit(fitter::Ptr{hetreward_fitter},\n        dataset::Ptr{hetreward_model}",
     "argument 2 (dataset) is ::Ptr{hetreward_model}"),
    ("arguments swapped",
     "hetreward_model_rationality(model::Ptr{hetreward_model}, psi0::Cdouble,\n        psi::Ptr{Cdouble}, d2::Csize_t",
     "hetreward_model_rationality(model::Ptr{hetreward_model}, psi0::Cdouble,\n        d2::Csize_t, psi::Ptr{Cdouble}",
     "argument 3 (psi) is ::Csize_t"),
    ("a struct field of the wrong width",
     "    restarts::UInt32\n", "    restarts::UInt64\n",
     "struct hetreward_fit_params: field restarts is ::UInt64"),
    ("a struct field missing",
     "    p_value::Cdouble\n", "",
     "struct hetreward_comparison: Julia fields"),
    ("a constant with the wrong value",
     "const HETREWARD_POLICY_PBON = hetreward_policy(1)",
     "const HETREWARD_POLICY_PBON = hetreward_policy(2)",
     "constant HETREWARD_POLICY_PBON: 2 in the wrapper, 1 in C"),
    ("a status typedef of the wrong width",
     "const hetreward_status = UInt32", "const hetreward_status = UInt64",
     "returns ::hetreward_status"),
    ("an @ccall of a function the header lacks",
     "hetreward_version() =\n    @ccall libhetreward.hetreward_version()::Cstring",
     "hetreward_version() =\n    @ccall libhetreward.hetreward_version()::Cstring\n"
     "f() = @ccall libhetreward.hetreward_nonexistent()::Cvoid",
     "hetreward_nonexistent, which the header does not export"),
]

MUTATIONS += [
    ("an option table spelled as a literal again",
     "const POLICIES = Dict{Symbol,UInt32}()",
     "const POLICIES = Dict(:bon => HETREWARD_POLICY_BON, :pbon => HETREWARD_POLICY_PBON)",
     "a literal option table"),
    ("an option family without its table",
     "                       POLICIES => HETREWARD_OPTION_POLICY,\n", "",
     "option family HETREWARD_OPTION_POLICY: no table in OPTION_TABLES"),
    ("the tables not filled at load",
     "    for (table, family) in OPTION_TABLES\n", "    for (table, family) in ()\n",
     "__init__ does not fill OPTION_TABLES"),
]

MUTATIONS += [
    ("a C call outside the use guard",
     "    in_use(m) do\n        GC.@preserve m out check(getter(live(m), pointer(out), len))\n    end",
     "    GC.@preserve m out check(getter(live(m), pointer(out), len))",
     "live(m) outside in_use"),
    ("a guard on the wrong handle",
     "    in_use(model, dataset) do", "    in_use(model) do",
     "live(dataset) outside in_use"),
    ("a close that frees under a call",
     "Base.close(m::Model) = close_handle!(m)", "Base.close(m::Model) = free_now!(m)",
     "Model: Base.close does not go through close_handle!"),
    ("a free outside free_now!",
     "function close_handle!(h)\n",
     "function close_handle!(h)\n    h isa Model && hetreward_model_free(h.ptr)\n",
     "hetreward_model_free called in close_handle!"),
    ("a finalizer that bypasses the guard",
     "return finalizer(free_now!, new(ptr, 0, false, Threads.SpinLock()))\n    end\nend\n\n"
     "# Frees the C object once (see in_use): from close_handle!, the last use, or the "
     "finalizer.\nfunction free_now!(m::Model)",
     "return finalizer(close, new(ptr, 0, false, Threads.SpinLock()))\n    end\nend\n\n"
     "# Frees the C object once (see in_use): from close_handle!, the last use, or the "
     "finalizer.\nfunction free_now!(m::Model)",
     "Model: its finalizer is not free_now!"),
]

# A header change the wrapper has not followed must fail too.
HEADER_MUTATIONS = [
    ("a parameter added to the header",
     "hetreward_status hetreward_model_save(const struct hetreward_model *model, const char *path);",
     "hetreward_status hetreward_model_save(const struct hetreward_model *model, const char *path,\n"
     "                                      uint32_t flags);",
     "hetreward_model_save: 2 arguments, the header has 3"),
    ("a function added to the header",
     "void hetreward_model_free(struct hetreward_model *model);",
     "void hetreward_model_free(struct hetreward_model *model);\n"
     "size_t hetreward_model_new_thing(const struct hetreward_model *model);",
     "hetreward_model_new_thing: exported by the header, not wrapped"),
    ("an option family added to the header",
     "#define HETREWARD_OPTION_SHARD 9",
     "#define HETREWARD_OPTION_SHARD 9\n\n#define HETREWARD_OPTION_NEW 10",
     "option family HETREWARD_OPTION_NEW: no table in OPTION_TABLES"),
]


def self_test(header_text: str, wrapper_text: str) -> List[str]:
    """Returns the failures of the self-test (empty = the checker works)."""
    failures = []
    problems, _ = check(header_text, wrapper_text)
    if problems:
        failures.append("the real wrapper does not pass: " + "; ".join(problems))
    for what, old, new, expected, on_header in (
            [(d, o, n, e, False) for d, o, n, e in MUTATIONS] +
            [(d, o, n, e, True) for d, o, n, e in HEADER_MUTATIONS]):
        source = header_text if on_header else wrapper_text
        if old not in source:
            failures.append(f"{what}: the text to mutate is not in the "
                            f"{'header' if on_header else 'wrapper'} any more: {old!r}")
            continue
        mutated = source.replace(old, new, 1)
        problems, _ = (check(mutated, wrapper_text) if on_header
                       else check(header_text, mutated))
        if not any(expected in p for p in problems):
            failures.append(f"{what}: not caught (expected a problem containing {expected!r}; "
                            f"got {problems})")
    return failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", type=pathlib.Path, default=DEFAULT_HEADER)
    ap.add_argument("--wrapper", type=pathlib.Path, default=DEFAULT_WRAPPER)
    ap.add_argument("--self-test", action="store_true",
                    help="check that the checker rejects deliberately broken wrappers")
    args = ap.parse_args(argv)
    header_text = args.header.read_text()
    wrapper_text = args.wrapper.read_text()
    if args.self_test:
        failures = self_test(header_text, wrapper_text)
        for f in failures:
            print(f"SELF-TEST FAILED: {f}", file=sys.stderr)
        if failures:
            return 1
        print(f"check_wrapper self-test: {len(MUTATIONS) + len(HEADER_MUTATIONS)} broken "
              f"wrappers/headers rejected, the real wrapper accepted")
        return 0
    problems, summary = check(header_text, wrapper_text)
    for p in problems:
        print(f"{args.wrapper.name}: {p}", file=sys.stderr)
    if problems:
        print(f"Julia wrapper check FAILED: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"Julia wrapper matches {args.header.name}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
