"""The Julia wrapper check must pass on the real wrapper and fail on broken ones."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_wrapper as cw  # noqa: E402

HEADER = cw.DEFAULT_HEADER.read_text()
WRAPPER = cw.DEFAULT_WRAPPER.read_text()


def test_real_wrapper_passes():
    problems, summary = cw.check(HEADER, WRAPPER)
    assert problems == []
    h = cw.parse_header(HEADER)
    # Every function of the header was seen (a parser that finds nothing must not pass).
    assert len(h.functions) >= 30 and "hetreward_model_select" in h.functions
    assert "34 functions" in summary or f"{len(h.functions)} functions" in summary


@pytest.mark.parametrize("what,old,new,expected", cw.MUTATIONS, ids=[m[0] for m in cw.MUTATIONS])
def test_broken_wrapper_fails(what, old, new, expected):
    assert old in WRAPPER, f"mutation target gone: {old!r}"
    problems, _ = cw.check(HEADER, WRAPPER.replace(old, new, 1))
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize("what,old,new,expected", cw.HEADER_MUTATIONS,
                         ids=[m[0] for m in cw.HEADER_MUTATIONS])
def test_changed_header_fails(what, old, new, expected):
    assert old in HEADER, f"mutation target gone: {old!r}"
    problems, _ = cw.check(HEADER.replace(old, new, 1), WRAPPER)
    assert any(expected in p for p in problems), problems


def test_hand_written_wrong_wrapper():
    """A tiny wrapper written from scratch with typical mistakes."""
    wrong = '''
    const hetreward_status = Int32
    hetreward_version() = @ccall libhetreward.hetreward_version()::Ptr{Cvoid}
    hetreward_model_n(m) = @ccall libhetreward.hetreward_model_n(m::Ptr{Cvoid}, x::Cint)::Int
    '''
    problems, _ = cw.check(HEADER, wrong)
    text = "\n".join(problems)
    assert "hetreward_version: returns ::Ptr{Cvoid}" in text
    assert "hetreward_model_n: 2 arguments, the header has 1" in text
    assert "hetreward_model_score: exported by the header, not wrapped" in text
    assert "struct hetreward_fit_params: no Julia struct" in text
    assert "constant HETREWARD_OK = 0: missing" in text


def test_self_test_mode():
    assert cw.self_test(HEADER, WRAPPER) == []
    assert cw.main(["--self-test"]) == 0
    assert cw.main([]) == 0
