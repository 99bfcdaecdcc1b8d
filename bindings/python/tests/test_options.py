"""The option tables of the binding (SOLVERS, INTERVALS, ..., the distributed SECTIONS) against
include/hetreward.h: every option constant of the header is in its table with its value, the
tables hold nothing else, each name is the library's (hetreward_option_name) and spells the
constant, and the binding's family numbers are the header's."""

import os
import pathlib
import re
import subprocess

import pytest

import hetreward as hr
from hetreward import _core, _native
from hetreward.distributed import _driver

from conftest import REPO

HEADER = pathlib.Path(os.environ.get("HETREWARD_HEADER", REPO / "include" / "hetreward.h"))


def header_constants():
    """NAME -> value of every integer #define of the header."""
    text = re.sub(r"/\*.*?\*/", " ", HEADER.read_text(), flags=re.S)
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s*#define\s+(HETREWARD_\w+)\s+(-?\d+)\s*$", text, re.M)}


CONSTANTS = header_constants()
#: HETREWARD_OPTION_X -> value: the families.
FAMILIES = {k: v for k, v in CONSTANTS.items() if k.startswith("HETREWARD_OPTION_")}


def family_constants(family: str):
    """The header's HETREWARD_<family>_* constants (family "SOLVER", "INTERVALS", ...)."""
    prefix = f"HETREWARD_{family}_"
    return {k[len(prefix):]: v for k, v in CONSTANTS.items() if k.startswith(prefix)}


#: The binding's tables, as name -> code, per family of the header.
TABLES = {
    "SOLVER": _core.SOLVERS,
    "INIT": _core.INITS,
    "COVARIANCE": _core.COVARIANCES,
    "INTERVALS": _core.INTERVALS,
    "TERMINATION": {name: code for code, name in _core.TERMINATIONS.items()},
    "DIFF": _core.DIFF_METHODS,
    "VERDICT": {name: code for code, name in enumerate(hr.VERDICTS)},
    "POLICY": _core.POLICIES,
    "COEFFICIENTS": _core.COEFFICIENTS,
    "SHARD": {name: code for code, name in _driver.SECTIONS.items()},
}


def test_the_header_has_the_families():
    assert len(FAMILIES) >= 10, FAMILIES  # a parser that finds nothing must not pass
    assert sorted(TABLES) == sorted(k[len("HETREWARD_OPTION_"):] for k in FAMILIES)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_numbers_are_the_headers(family):
    assert getattr(_native, family) == FAMILIES[family]


@pytest.mark.parametrize("family", sorted(TABLES))
def test_table_is_the_headers_constants_with_the_librarys_names(family):
    constants = family_constants(family)
    table = TABLES[family]
    assert constants, f"no HETREWARD_{family}_* constant in the header"
    # Every constant, by value, and nothing else.
    assert sorted(table.values()) == sorted(constants.values())
    by_value = {v: k for k, v in constants.items()}
    for name, code in table.items():
        # The library's name for the code...
        c_name = _native.lib.hetreward_option_name(FAMILIES[f"HETREWARD_OPTION_{family}"], code)
        assert c_name is not None and c_name.decode() == name
        # ...spells the constant of that value (HETREWARD_INTERVALS_CLUSTER_JACKKNIFE is
        # "cluster-jackknife", HETREWARD_TERMINATION_MAX_ITERATIONS "max_iterations").
        assert re.sub(r"[-_]", "_", name).upper() == by_value[code], (name, code)


def test_unknown_codes_have_no_name():
    lib = _native.lib
    assert lib.hetreward_option_name(len(FAMILIES), 0) is None
    assert lib.hetreward_option_at(len(FAMILIES), 0, None) is None
    shard = _native.HETREWARD_OPTION_SHARD
    assert lib.hetreward_option_name(shard, CONSTANTS["HETREWARD_SHARD_VALUE"]
                                     | CONSTANTS["HETREWARD_SHARD_MEAT"]) is None


def test_the_tables_are_used():
    """Options are accepted by the names of the tables, and refused otherwise with the list."""
    for name in _core.INTERVALS:
        hr.Fitter(intervals=name)
    with pytest.raises(ValueError, match="cluster-jackknife"):
        hr.Fitter(intervals="jackknife")


def possible_values(cli, command, option):
    """The `[possible values: ...]` the CLI's help gives for `option` of `command`."""
    text = subprocess.run([cli, command, "--help"], check=True, capture_output=True,
                          text=True).stdout
    blocks = re.split(r"\n\s*(?=-)", text)
    block = next(b for b in blocks if re.match(rf"(-\w, )?{option}\b", b.strip()))
    m = re.search(r"\[possible values: ([^\]]*)\]", " ".join(block.split()))
    assert m, (option, block)
    return [v.strip() for v in m.group(1).split(",")]


@pytest.mark.parametrize("command,option,table", [
    ("fit", "--solver", _core.SOLVERS),
    ("fit", "--covariance", _core.COVARIANCES),
    ("fit", "--intervals", _core.INTERVALS),
    ("compare", "--method", _core.DIFF_METHODS),
    ("select", "--policy", _core.POLICIES),
])
def test_the_cli_accepts_exactly_the_tables_names(cli, command, option, table):
    """The names come from the library's one definition, which the CLI parses too."""
    assert sorted(possible_values(cli, command, option)) == sorted(table)


def test_the_cli_starts_are_library_names(cli):
    """The CLI offers the starts that need no values (not "explicit")."""
    assert set(possible_values(cli, "fit", "--init")) <= set(_core.INITS)
