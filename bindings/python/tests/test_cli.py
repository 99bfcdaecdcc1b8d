"""The binding gives exactly what the `hetreward` CLI gives for the same data (docs/contract.md §5, §6):
fit report, inspect, score, compare and select JSON."""

import json
import subprocess

import numpy as np
import pytest

import hetreward as hr
from conftest import D1, make_data, phis


def write_csv(path, header, columns):
    """Writes columns as CSV with repr() floats, which parse back to the same doubles."""
    rows = zip(*columns)
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in rows:
            f.write(",".join(repr(x.item() if hasattr(x, "item") else x) for x in row) + "\n")


def run(cli, *args):
    out = subprocess.run([cli, *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout


def run_json(cli, *args):
    return json.loads(run(cli, *args, "--json"))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, cli):
    """Training data as CSV, fitted by the CLI (model file + report) and by the binding."""
    tmp = tmp_path_factory.mktemp("cli")
    d = make_data(600, 11)
    header = (["cluster", "y", "psi0"] + [f"z{j + 1}" for j in range(D1)] +
              [f"psi{k + 1}" for k in range(d["psi"].shape[1])])
    cols = [d["cluster"], d["y"], d["psi0"], *d["z"].T, *d["psi"].T]
    write_csv(tmp / "data.csv", header, cols)
    run(cli, "fit", tmp / "data.csv", "--out", tmp / "model.hrm", "--report", tmp / "report.json")
    report = json.loads((tmp / "report.json").read_text())
    with hr.Dataset(**d) as ds, hr.Fitter() as f:
        mine = f.fit(ds)
    return tmp, d, report, mine


def assert_model_matches(model, report):
    assert model.n == report["n"] and model.d1 == report["d1"] and model.d2 == report["d2"]
    for key in ("theta", "gamma", "theta_se", "gamma_se"):
        assert getattr(model, key).tolist() == report[key], key
    r = model.report
    assert r.solver == report["solver"] and r.covariance == report["covariance"]
    assert r.converged == report["converged"] and r.iterations == report["iterations"]
    assert r.grad_norm == report["grad_norm"] and r.neg_loglik == report["neg_loglik"]


def test_fit_equals_cli_report(fitted):
    _, _, report, mine = fitted
    assert_model_matches(mine, report)


def test_dataset_load_equals_cli(fitted):
    tmp, _, report, _ = fitted
    with hr.Dataset.load(tmp / "data.csv") as ds, hr.Fitter() as f:
        assert ds.n == report["n"]
        assert_model_matches(f.fit(ds), report)


def test_inspect_equals_loaded_model(fitted, cli):
    tmp, _, report, _ = fitted
    inspect = run_json(cli, "inspect", tmp / "model.hrm")
    with hr.Model.load(tmp / "model.hrm") as m:
        assert_model_matches(m, inspect)
        assert_model_matches(m, report)


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_score_equals_cli(fitted, cli, alpha):
    tmp, _, _, mine = fitted
    phi = phis(40, 3)
    write_csv(tmp / "phi.csv", [f"phi{j + 1}" for j in range(D1)], phi.T)
    out = run_json(cli, "score", tmp / "model.hrm", tmp / "phi.csv", "--alpha", alpha)
    assert out["alpha"] == alpha
    got = mine.score(phi, alpha)
    for key in ("reward", "se", "lower", "upper"):
        assert got[key].tolist() == [row[key] for row in out["rows"]], key


@pytest.mark.parametrize("method", ["exact", "independent", "bound"])
def test_compare_equals_cli(fitted, cli, method):
    tmp, _, _, mine = fitted
    phi0, phi1 = phis(30, 4), phis(30, 5)
    phi1[:10] = -phi0[:10]  # some clear wins and losses
    header = [f"phi0_{j + 1}" for j in range(D1)] + [f"phi1_{j + 1}" for j in range(D1)]
    write_csv(tmp / "pairs.csv", header, [*phi0.T, *phi1.T])
    out = run_json(cli, "compare", tmp / "model.hrm", tmp / "pairs.csv", "--method", method)
    assert out["method"] == method
    got = mine.compare(phi0, phi1, method=method)
    for key in ("diff", "se", "lower", "upper", "p_value"):
        assert got[key].tolist() == [p[key] for p in out["pairs"]], key
    verdicts = [hr.VERDICTS[v] for v in got["verdict"]]
    assert verdicts == [p["verdict"] for p in out["pairs"]]
    assert (verdicts.count("win"), verdicts.count("loss"), verdicts.count("tie")) == (
        out["wins"], out["losses"], out["ties"])
    assert 0 < out["wins"] and 0 < out["losses"]


@pytest.mark.parametrize("policy", ["bon", "pbon"])
@pytest.mark.parametrize("with_penalty", [False, True])
def test_select_equals_cli(fitted, cli, policy, with_penalty):
    tmp, _, _, mine = fitted
    groups = np.repeat(np.arange(5), 8)  # 5 prompts, 8 candidates each
    phi = phis(len(groups), 6)
    penalty = np.random.default_rng(7).uniform(0, 0.5, len(groups))
    header = ["group"] + (["penalty"] if with_penalty else []) + [f"phi{j + 1}" for j in range(D1)]
    cols = [groups] + ([penalty] if with_penalty else []) + list(phi.T)
    write_csv(tmp / "cands.csv", header, cols)
    out = run_json(cli, "select", tmp / "model.hrm", tmp / "cands.csv", "--policy", policy)
    assert out["policy"] == policy and len(out["groups"]) == 5
    for g, res in enumerate(out["groups"]):
        rows = np.flatnonzero(groups == g)
        idx, cands = mine.select(phi[rows], penalty[rows] if with_penalty else None,
                                 policy=policy)
        assert res["index"] == idx and res["row"] == int(rows[idx])
        for key in ("reward", "se", "lower", "penalty", "score"):
            assert res[key] == cands[key][idx], key
