"""The ctypes prototypes and structs of hetreward._native match include/hetreward.h (names,
argument counts, argument and return types, struct fields), parsed with the same header
parser as the Julia wrapper check. ctypes would otherwise pass a wrong-width integer silently."""

import ctypes
import importlib.util
import os
import pathlib
import sys

import pytest

from hetreward import _native

from conftest import REPO

LP64 = {"size_t": "u64", "uint64_t": "u64", "int64_t": "i64", "uint32_t": "u32", "int": "i32",
        "int32_t": "i32", "double": "f64", "float": "f32", "bool": "bool", "uint8_t": "u8",
        "char": "char", "void": "void", "fnptr": "fnptr"}
CODES = {"d": "f64", "f": "f32", "?": "bool", "B": "u8", "I": "u32", "L": "u64", "Q": "u64",
         "l": "i64", "q": "i64", "i": "i32"}


@pytest.fixture(scope="module")
def header():
    path = pathlib.Path(os.environ.get("HETREWARD_HEADER", REPO / "include" / "hetreward.h"))
    spec = importlib.util.spec_from_file_location(
        "check_wrapper", REPO / "bindings" / "julia" / "check_wrapper.py")
    cw = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cw  # its dataclasses look their module up
    spec.loader.exec_module(cw)
    return cw.parse_header(path.read_text())


def c_canon(h, ctype):
    base, depth = h.canon(ctype)
    return (LP64.get(base, base), depth)


def py_canon(t):
    if t is None:
        return ("void", 0)
    if t is ctypes.c_char_p:
        return ("char", 1)
    if t is ctypes.c_void_p:
        return ("void", 1)
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        base, depth = py_canon(t._type_)
        return (base, depth + 1)
    if isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
        return ("fnptr", 0)
    if isinstance(t, type) and issubclass(t, ctypes.Structure):
        return (t.__name__, 0)
    return (CODES[t._type_], 0)


def test_every_function_declared(header):
    assert set(_native.PROTOTYPES) == set(header.functions)


def test_signatures(header):
    for name, (ret, params) in header.functions.items():
        restype, argtypes = _native.PROTOTYPES[name]
        assert len(argtypes) == len(params), name
        for (pname, ptype), t in zip(params, argtypes):
            assert py_canon(t) == c_canon(header, ptype), (name, pname)
        assert py_canon(restype) == c_canon(header, ret), name


def test_structs(header):
    for name, fields in header.structs.items():
        st = getattr(_native, name)
        assert [f for f, _ in st._fields_] == [f for f, _ in fields], name
        for (fname, ctype), (_, t) in zip(fields, st._fields_):
            assert py_canon(t) == c_canon(header, ctype), (name, fname)
