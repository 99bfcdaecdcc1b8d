//! Integration tests of the `hetreward` binary: every subcommand on files written here, a
//! malformed file for every reader, exit codes, and the JSON field names of docs/contract.md §5.
//!
//! Numbers printed by the CLI are checked against the library called directly on the same
//! data: the CLI must only convert and report.

use hetreward::covariance::CovarianceKind;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{FitControl, FitOptions};
use hetreward::io::model_file;
use hetreward::select::{self, DiffMethod, Policy};
use hetreward::sim::{paper_simulation, ActionDesign};
use hetreward::{Dataset, RewardModel};
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn hetreward(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_hetreward"))
        .args(args)
        .output()
        .expect("run the hetreward binary");
    Output {
        code: out.status.code().expect("exited normally"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs and expects success; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = hetreward(args);
    assert_eq!(out.code, 0, "{args:?} failed: {}", out.stderr);
    out.stdout
}

/// Runs and expects exit code `code`; returns stderr, which must name every `needles` entry.
fn fails(args: &[&str], code: i32, needles: &[&str]) -> String {
    let out = hetreward(args);
    assert_eq!(
        out.code, code,
        "{args:?}: expected exit {code}, got {}: {}",
        out.code, out.stderr
    );
    for n in needles {
        assert!(
            out.stderr.contains(n),
            "{args:?}: `{n}` not in: {}",
            out.stderr
        );
    }
    assert!(out.stdout.is_empty(), "{args:?} printed: {}", out.stdout);
    out.stderr
}

/// Equal up to rounding: the CLI and the test may reach the library through different (but
/// equivalent) code paths, e.g. batched and single scoring.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

fn assert_close(a: f64, b: f64, what: &str) {
    assert!(close(a, b), "{what}: {a} vs {b}");
}

fn assert_all_close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert_close(*x, *y, what);
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The paper's §6.1 data (d1 = 3, d2 = 2), and the same data as the library fits it.
fn training() -> Dataset {
    paper_simulation(400, ActionDesign::Uniform, 11)
}

fn library_model(data: &Dataset, kind: CovarianceKind) -> RewardModel {
    RewardModel::estimate(data, &FitOptions::default(), kind, &FitControl::default()).unwrap()
}

/// Writes training CSV with every float in shortest round-trip form (so parsing is exact).
fn write_training_csv(path: &Path, data: &Dataset) {
    let (d1, d2) = (data.d1(), data.d2());
    let mut header = vec!["y".to_string(), "psi0".to_string()];
    header.extend((1..=d1).map(|j| format!("z{j}")));
    header.extend((1..=d2).map(|k| format!("psi{k}")));
    let mut text = header.join(",") + "\n";
    for i in 0..data.n() {
        let mut row = vec![data.y()[i].to_string(), data.psi0()[i].to_string()];
        row.extend(data.z_row(i).iter().map(f64::to_string));
        row.extend(data.psi_row(i).iter().map(f64::to_string));
        text += &(row.join(",") + "\n");
    }
    std::fs::write(path, text).unwrap();
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Writes a safetensors file from (name, dtype, shape, bytes).
fn write_safetensors(path: &Path, tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            (
                name.to_string(),
                TensorView::new(*dtype, shape.clone(), bytes).unwrap(),
            )
        })
        .collect();
    let bytes = safetensors::tensor::serialize(views, &None).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A temp dir with `train.csv` and a fitted `model.hrm` (+ `report.json`).
struct Fixture {
    dir: tempfile::TempDir,
    data: Dataset,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = training();
        write_training_csv(&dir.path().join("train.csv"), &data);
        let f = Fixture { dir, data };
        let out = hetreward(&[
            "fit",
            s(&f.path("train.csv")),
            "--out",
            s(&f.path("model.hrm")),
            "--report",
            s(&f.path("report.json")),
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        // Not a terminal: no progress bar, no warning.
        assert!(out.stderr.is_empty(), "{}", out.stderr);
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn model(&self) -> RewardModel {
        model_file::load(&self.path("model.hrm")).unwrap()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// Three answers' features (d1 = 3), row-major.
const PHI: [f64; 9] = [0.0625, 0.125, 0.125, 0.5, -0.25, 0.75, -1.0, 2.0, 0.5];

fn phi_csv(rows: &[f64], d1: usize, prefix: &str) -> String {
    let header: Vec<String> = (1..=d1).map(|j| format!("{prefix}{j}")).collect();
    let mut text = header.join(",") + "\n";
    for r in rows.chunks(d1) {
        let cells: Vec<String> = r.iter().map(f64::to_string).collect();
        text += &(cells.join(",") + "\n");
    }
    text
}

const REPORT_FIELDS: [&str; 14] = [
    "n",
    "d1",
    "d2",
    "theta",
    "gamma",
    "theta_se",
    "gamma_se",
    "covariance",
    "solver",
    "iterations",
    "converged",
    "grad_norm",
    "neg_loglik",
    "seconds",
];

#[test]
fn fit_writes_the_librarys_model_and_report_and_inspect_reads_it() {
    let f = Fixture::new();
    let expected = library_model(&f.data, CovarianceKind::Expected);
    let model = f.model();
    // Same data, same library: the same estimates.
    assert_all_close(model.theta(), expected.theta(), "theta");
    assert_all_close(model.gamma(), expected.gamma(), "gamma");
    assert_all_close(model.theta_se(), expected.theta_se(), "theta_se");
    assert_all_close(model.gamma_se(), expected.gamma_se(), "gamma_se");

    let report = json(&std::fs::read_to_string(f.path("report.json")).unwrap());
    let inspect = json(&ok(&["inspect", s(&f.path("model.hrm")), "--json"]));
    for field in REPORT_FIELDS {
        assert!(report.get(field).is_some(), "report lacks `{field}`");
        assert_eq!(report[field], inspect[field], "field `{field}`");
    }
    assert_eq!(report["n"], 400);
    assert_eq!(report["d1"], 3);
    assert_eq!(report["d2"], 2);
    assert_eq!(report["covariance"], "expected");
    assert_eq!(report["solver"], "newton");
    assert_eq!(report["converged"], true);
    let theta: Vec<f64> = serde_json::from_value(report["theta"].clone()).unwrap();
    // (serde_json's default float parser may be off by one unit in the last place.)
    assert_all_close(&theta, model.theta(), "JSON theta");

    // The human table: one row per parameter with estimate, se and CI.
    let table = ok(&["inspect", s(&f.path("model.hrm"))]);
    assert!(table.contains("ci95_lower"), "{table}");
    for name in ["theta[0]", "theta[2]", "gamma[1]"] {
        assert!(table.contains(name), "{table}");
    }
    let se0 = format!("{:.6}", model.theta_se()[0]);
    assert!(table.contains(&se0), "{table}");
}

#[test]
fn fit_reads_safetensors_with_f32_features_and_integer_labels() {
    let dir = tempfile::tempdir().unwrap();
    let data = training();
    let n = data.n();
    let y: Vec<i64> = data.y().iter().map(|&v| v as i64).collect();
    let cluster: Vec<i64> = (0..n as i64).map(|i| i / 4).collect();
    let path = dir.path().join("train.safetensors");
    write_safetensors(
        &path,
        &[
            ("z", Dtype::F32, vec![n, 3], f32_bytes(data.z())),
            ("psi0", Dtype::F64, vec![n], f64_bytes(data.psi0())),
            ("psi", Dtype::F64, vec![n, 2], f64_bytes(data.psi())),
            ("y", Dtype::I64, vec![n], i64_bytes(&y)),
            ("cluster", Dtype::I64, vec![n], i64_bytes(&cluster)),
        ],
    );
    let out = dir.path().join("m.hrm");
    ok(&["fit", s(&path), "--out", s(&out), "--covariance", "cluster"]);
    let report = json(&ok(&["inspect", s(&out), "--json"]));
    assert_eq!(report["covariance"], "cluster");
    assert_eq!(report["n"], n);
    // The same data through the library (z rounded to f32 as stored).
    let z32: Vec<f64> = data.z().iter().map(|&v| v as f32 as f64).collect();
    let same = Dataset::new(
        3,
        2,
        z32,
        data.psi0().to_vec(),
        data.psi().to_vec(),
        data.y().to_vec(),
        Some(cluster),
    )
    .unwrap();
    let expected = library_model(&same, CovarianceKind::Cluster);
    assert_all_close(
        model_file::load(&out).unwrap().theta(),
        expected.theta(),
        "theta",
    );
}

#[test]
fn fit_rejects_malformed_training_files() {
    let f = Fixture::new();
    let out = f.path("never.hrm");
    let fit = |data: &Path| {
        vec![
            "fit".to_string(),
            s(data).to_string(),
            "--out".to_string(),
            s(&out).to_string(),
        ]
    };
    let run = |data: &Path, needles: &[&str]| {
        let args = fit(data);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&args, 2, needles);
    };
    // CSV: a non-number names the file, the column and the data row.
    let bad = f.write("bad.csv", "y,psi0,z1,z2\n1,1,0.5,0.1\n0,1,abc,0.2\n");
    run(&bad, &["bad.csv", "`z1`", "data row 2", "abc"]);
    // CSV: a label that is not 0/1.
    let bad = f.write("label.csv", "y,psi0,z1\n1,1,0.5\n2,1,0.1\n0,1,0.3\n");
    run(&bad, &["label.csv", "y[1] = 2"]);
    // CSV: a ragged row.
    let bad = f.write("ragged.csv", "y,psi0,z1\n1,1,0.5\n0,1\n");
    run(&bad, &["ragged.csv", "data row 2"]);
    // safetensors: truncated.
    let full = f.path("full.safetensors");
    let n = f.data.n();
    write_safetensors(
        &full,
        &[
            ("z", Dtype::F64, vec![n, 3], f64_bytes(f.data.z())),
            ("psi0", Dtype::F64, vec![n], f64_bytes(f.data.psi0())),
            ("y", Dtype::F64, vec![n], f64_bytes(f.data.y())),
        ],
    );
    let bytes = std::fs::read(&full).unwrap();
    let cut = f.path("cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    run(&cut, &["cut.safetensors", "not a safetensors file"]);
    // safetensors: a required tensor missing.
    let no_y = f.path("no_y.safetensors");
    write_safetensors(
        &no_y,
        &[("z", Dtype::F64, vec![n, 3], f64_bytes(f.data.z()))],
    );
    run(&no_y, &["no_y.safetensors", "missing tensor `y`"]);
    // Unknown extension; missing file.
    let txt = f.write("data.txt", "y,psi0,z1\n");
    run(&txt, &["data.txt", "unknown file type"]);
    run(&f.path("absent.csv"), &["absent.csv"]);
    assert!(!out.exists(), "a failed fit wrote a model");
}

#[test]
fn non_convergence_is_reported_and_require_converged_exits_3() {
    let f = Fixture::new();
    let (train, out, report) = (f.path("train.csv"), f.path("agd.hrm"), f.path("agd.json"));
    let args = [
        "fit",
        s(&train),
        "--out",
        s(&out),
        "--report",
        s(&report),
        "--solver",
        "agd",
        "--max-iter",
        "3",
    ];
    let run = hetreward(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: not converged"),
        "{}",
        run.stderr
    );
    let r = json(&std::fs::read_to_string(&report).unwrap());
    assert_eq!(r["converged"], false);
    assert_eq!(r["solver"], "agd");
    assert_eq!(r["termination"], "max_iterations");

    let strict = f.path("strict.hrm");
    let mut args = args.to_vec();
    args[3] = s(&strict);
    args.push("--require-converged");
    fails(&args, 3, &["not converged"]);
    assert!(!strict.exists());
}

#[test]
fn bad_arguments_exit_2() {
    let f = Fixture::new();
    let train = f.path("train.csv");
    let out = f.path("x.hrm");
    fails(&["fit", s(&train)], 2, &["--out"]);
    fails(
        &["fit", s(&train), "--out", s(&out), "--solver", "sgd"],
        2,
        &["sgd"],
    );
    fails(
        &["fit", s(&train), "--out", s(&out), "--theta0", "1,2"],
        2,
        &["theta0"],
    );
    fails(
        &["fit", s(&train), "--out", s(&out), "--eta1=-1"],
        2,
        &["eta1"],
    );
    fails(&["frobnicate"], 2, &["frobnicate"]);
    let phi = f.write("phi.csv", &phi_csv(&PHI, 3, "phi"));
    fails(
        &["score", s(&f.path("model.hrm")), s(&phi), "--alpha", "1.5"],
        2,
        &["alpha"],
    );
}

#[test]
fn fit_profile_prints_the_librarys_profile_intervals() {
    let f = Fixture::new();
    let text = ok(&[
        "fit",
        s(&f.path("train.csv")),
        "--out",
        s(&f.path("p.hrm")),
        "--profile",
    ]);
    let at = text
        .find("profile-likelihood 95% intervals")
        .expect("the profile table");
    let rows: Vec<Vec<&str>> = text[at..]
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let model = f.model();
    let names = ["theta[0]", "theta[1]", "theta[2]", "gamma[0]", "gamma[1]"];
    assert_eq!(rows.len(), names.len(), "{text}");
    for (c, (row, name)) in rows.iter().zip(names).enumerate() {
        assert_eq!(row[0], name, "{text}");
        let p = hetreward::profile::coefficient_interval(&f.data, model.params(), c, 0.05).unwrap();
        for (cell, want) in row[1..].iter().zip([p.estimate, p.lower, p.upper]) {
            let got: f64 = cell.parse().unwrap();
            assert!(
                (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "{name}: {got} vs {want}"
            );
        }
        assert!(
            p.lower < p.estimate && p.estimate < p.upper,
            "{name}: {p:?}"
        );
    }
    // Too many coefficients: refused before fitting.
    let mut csv = String::from("y,psi0");
    for j in 0..70 {
        csv.push_str(&format!(",z{}", j + 1));
    }
    csv.push('\n');
    for i in 0..80 {
        csv.push_str(&format!("{},1", i % 2));
        for j in 0..70 {
            csv.push_str(&format!(",{}", ((i * 7 + j * 3) % 11) as f64 / 11.0));
        }
        csv.push('\n');
    }
    let wide_csv = f.write("wide.csv", &csv);
    fails(
        &[
            "fit",
            s(&wide_csv),
            "--out",
            s(&f.path("w.hrm")),
            "--profile",
        ],
        2,
        &["--profile", "64"],
    );
    assert!(!f.path("w.hrm").exists());
}

#[test]
fn inspect_rejects_damaged_model_files() {
    let f = Fixture::new();
    let bytes = std::fs::read(f.path("model.hrm")).unwrap();
    let cut = f.path("cut.hrm");
    std::fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
    fails(&["inspect", s(&cut)], 2, &["cut.hrm", "truncated"]);
    let mut flipped = bytes.clone();
    flipped[40] ^= 0x10;
    let flip = f.path("flip.hrm");
    std::fs::write(&flip, &flipped).unwrap();
    fails(
        &["inspect", s(&flip), "--json"],
        2,
        &["flip.hrm", "checksum"],
    );
    let mut future = bytes.clone();
    future[8] = 4;
    let fut = f.path("future.hrm");
    std::fs::write(&fut, &future).unwrap();
    fails(&["inspect", s(&fut)], 2, &["future.hrm", "version 4"]);
    fails(
        &["inspect", s(&f.path("train.csv"))],
        2,
        &["train.csv", "bad magic"],
    );
    fails(&["inspect", s(&f.path("nope.hrm"))], 2, &["nope.hrm"]);
    // A damaged model is refused by every subcommand that loads one.
    let phi = f.write("phi.csv", &phi_csv(&PHI, 3, "phi"));
    fails(&["score", s(&flip), s(&phi)], 2, &["checksum"]);
}

#[test]
fn score_matches_the_library_from_csv_and_safetensors() {
    let f = Fixture::new();
    let model = f.model();
    let csv = f.write("phi.csv", &phi_csv(&PHI, 3, "phi"));
    let st = f.path("phi.safetensors");
    write_safetensors(&st, &[("phi", Dtype::F32, vec![3, 3], f32_bytes(&PHI))]);
    let model_path = f.path("model.hrm");
    for (path, f32_input) in [(&csv, false), (&st, true)] {
        let doc = json(&ok(&[
            "score",
            s(&model_path),
            s(path),
            "--alpha",
            "0.1",
            "--json",
        ]));
        assert_eq!(doc["alpha"], 0.1);
        let rows = doc["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 3);
        for (i, row) in rows.iter().enumerate() {
            let phi: Vec<f64> = PHI[3 * i..3 * i + 3]
                .iter()
                .map(|&v| if f32_input { v as f32 as f64 } else { v })
                .collect();
            let expected = model.score(&phi, 0.1).unwrap();
            for (field, value) in [
                ("reward", expected.reward),
                ("se", expected.se),
                ("lower", expected.lower),
                ("upper", expected.upper),
            ] {
                assert_close(
                    row[field].as_f64().unwrap(),
                    value,
                    &format!("row {i} {field}"),
                );
            }
        }
    }
    let table = ok(&["score", s(&model_path), s(&csv)]);
    assert!(
        table.contains("ci95_lower") && table.lines().count() == 4,
        "{table}"
    );
}

#[test]
fn score_rejects_malformed_phi_files() {
    let f = Fixture::new();
    let m = f.path("model.hrm");
    let score = |p: &Path, needles: &[&str]| {
        fails(&["score", s(&m), s(p)], 2, needles);
    };
    let wide = f.write("wide.csv", &phi_csv(&[1.0, 2.0, 3.0, 4.0], 4, "phi"));
    score(&wide, &["wide.csv", "phi1..phi4", "needs 3"]);
    let nan = f.write("nan.csv", "phi1,phi2,phi3\n1,2,3\n4,NaN,6\n");
    score(&nan, &["nan.csv", "`phi2`", "data row 2"]);
    let extra = f.write("extra.csv", "phi1,phi2,phi3,phi9\n1,2,3,4\n");
    score(&extra, &["extra.csv", "phi1..phi9"]);
    let empty = f.write("empty.csv", "phi1,phi2,phi3\n");
    score(&empty, &["empty.csv", "no data rows"]);
    let st = f.path("wrong.safetensors");
    write_safetensors(
        &st,
        &[("phi", Dtype::F64, vec![2, 2], f64_bytes(&[1.0; 4]))],
    );
    score(&st, &["wrong.safetensors", "`phi`", "[2, 2]", "d1"]);
    let st = f.path("int.safetensors");
    write_safetensors(
        &st,
        &[("phi", Dtype::I64, vec![1, 3], i64_bytes(&[1, 2, 3]))],
    );
    score(&st, &["int.safetensors", "`phi`", "I64"]);
    let st = f.path("other.safetensors");
    write_safetensors(&st, &[("x", Dtype::F64, vec![1, 3], f64_bytes(&[1.0; 3]))]);
    score(&st, &["other.safetensors", "missing tensor `phi`"]);
    let junk = f.write("junk.safetensors", "definitely not safetensors");
    score(&junk, &["junk.safetensors", "not a safetensors file"]);
}

#[test]
fn compare_tallies_verdicts_like_the_library() {
    let f = Fixture::new();
    let model = f.model();
    // Pairs: (phi_i, phi_{i+1 mod 3}) plus a pair of identical answers (a certain tie).
    let mut phi0 = Vec::new();
    let mut phi1 = Vec::new();
    for i in 0..3 {
        phi0.extend_from_slice(&PHI[3 * i..3 * i + 3]);
        phi1.extend_from_slice(&PHI[3 * ((i + 1) % 3)..3 * ((i + 1) % 3) + 3]);
    }
    phi0.extend_from_slice(&PHI[..3]);
    phi1.extend_from_slice(&PHI[..3]);
    let mut header: Vec<String> = (1..=3).map(|j| format!("phi0_{j}")).collect();
    header.extend((1..=3).map(|j| format!("phi1_{j}")));
    let mut text = header.join(",") + "\n";
    for r in 0..4 {
        let cells: Vec<String> = phi0[3 * r..3 * r + 3]
            .iter()
            .chain(&phi1[3 * r..3 * r + 3])
            .map(f64::to_string)
            .collect();
        text += &(cells.join(",") + "\n");
    }
    let csv = f.write("pairs.csv", &text);
    let st = f.path("pairs.safetensors");
    write_safetensors(
        &st,
        &[
            ("phi0", Dtype::F64, vec![4, 3], f64_bytes(&phi0)),
            ("phi1", Dtype::F64, vec![4, 3], f64_bytes(&phi1)),
        ],
    );
    let m = f.path("model.hrm");
    for path in [&csv, &st] {
        for method in [
            DiffMethod::Exact,
            DiffMethod::Independent,
            DiffMethod::Bound,
        ] {
            let doc = json(&ok(&[
                "compare",
                s(&m),
                s(path),
                "--method",
                method.name(),
                "--json",
            ]));
            assert_eq!(doc["alpha"], 0.05);
            assert_eq!(doc["method"], method.name());
            let pairs = doc["pairs"].as_array().unwrap();
            assert_eq!(pairs.len(), 4);
            let mut expected = Vec::new();
            for (r, p) in pairs.iter().enumerate() {
                let c = select::compare(
                    &model,
                    &phi0[3 * r..3 * r + 3],
                    &phi1[3 * r..3 * r + 3],
                    0.05,
                    method,
                )
                .unwrap();
                for (field, v) in [
                    ("diff", c.diff),
                    ("se", c.se),
                    ("lower", c.lower),
                    ("upper", c.upper),
                    ("p_value", c.p_value),
                ] {
                    assert_close(p[field].as_f64().unwrap(), v, &format!("pair {r} {field}"));
                }
                assert_eq!(p["verdict"], c.verdict.name());
                expected.push(c);
            }
            assert_eq!(pairs[3]["verdict"], "tie");
            assert_eq!(pairs[3]["diff"], 0.0);
            let tally = select::win_rate(&expected);
            assert_eq!(doc["wins"], tally.wins);
            assert_eq!(doc["losses"], tally.losses);
            assert_eq!(doc["ties"], tally.ties);
            assert_close(
                doc["win_rate"].as_f64().unwrap(),
                tally.win_rate,
                "win_rate",
            );
            assert_eq!(tally.wins + tally.losses + tally.ties, 4);
        }
    }
    let table = ok(&["compare", s(&m), s(&csv)]);
    assert!(table.contains("win rate of a0 over a1"), "{table}");
}

#[test]
fn compare_rejects_malformed_pairs_files() {
    let f = Fixture::new();
    let m = f.path("model.hrm");
    let bad = f.write(
        "half.csv",
        "phi0_1,phi0_2,phi0_3,phi1_1,phi1_3\n1,2,3,4,5\n",
    );
    fails(
        &["compare", s(&m), s(&bad)],
        2,
        &["half.csv", "missing column `phi1_2`"],
    );
    let bad = f.write("phi.csv", &phi_csv(&PHI, 3, "phi"));
    fails(
        &["compare", s(&m), s(&bad)],
        2,
        &["phi.csv", "unexpected column `phi1`"],
    );
    let st = f.path("rows.safetensors");
    write_safetensors(
        &st,
        &[
            ("phi0", Dtype::F64, vec![2, 3], f64_bytes(&PHI[..6])),
            ("phi1", Dtype::F64, vec![3, 3], f64_bytes(&PHI)),
        ],
    );
    fails(
        &["compare", s(&m), s(&st)],
        2,
        &["rows.safetensors", "`phi1`", "[3, 3]", "[2, 3]"],
    );
    fails(
        &["compare", s(&m), s(&st), "--method", "guess"],
        2,
        &["guess"],
    );
}

#[test]
fn select_picks_per_group_like_the_library() {
    let f = Fixture::new();
    let model = f.model();
    // Two groups, interleaved on purpose; group 7 has 3 candidates, group -2 has 2.
    let groups = [7i64, -2, 7, -2, 7];
    let phi: Vec<f64> = vec![
        0.5, 0.5, 0.5, // 7
        0.1, 0.0, 0.0, // -2
        3.0, -3.0, 3.0, // 7: extreme, large se
        0.0, 0.2, 0.1, // -2
        0.4, 0.6, 0.2, // 7
    ];
    let penalty = [0.0, 0.05, 0.3, 0.0, 0.01];
    let mut text = "group,penalty,phi1,phi2,phi3\n".to_string();
    for r in 0..5 {
        text += &format!(
            "{},{},{},{},{}\n",
            groups[r],
            penalty[r],
            phi[3 * r],
            phi[3 * r + 1],
            phi[3 * r + 2]
        );
    }
    let csv = f.write("cands.csv", &text);
    let st = f.path("cands.safetensors");
    write_safetensors(
        &st,
        &[
            ("phi", Dtype::F32, vec![5, 3], f32_bytes(&phi)),
            ("group", Dtype::I64, vec![5], i64_bytes(&groups)),
            ("penalty", Dtype::F64, vec![5], f64_bytes(&penalty)),
        ],
    );
    let m = f.path("model.hrm");
    for (path, f32_input) in [(&csv, false), (&st, true)] {
        for policy in [Policy::Bon, Policy::Pbon] {
            let doc = json(&ok(&[
                "select",
                s(&m),
                s(path),
                "--policy",
                policy.name(),
                "--json",
            ]));
            assert_eq!(doc["policy"], policy.name());
            assert_eq!(doc["alpha"], 0.05);
            let out = doc["groups"].as_array().unwrap();
            assert_eq!(out.len(), 2);
            for (g, (id, rows)) in out.iter().zip([(7i64, vec![0, 2, 4]), (-2, vec![1, 3])]) {
                let mut feats = Vec::new();
                for &r in &rows {
                    feats.extend(phi[3 * r..3 * r + 3].iter().map(|&v| {
                        if f32_input {
                            v as f32 as f64
                        } else {
                            v
                        }
                    }));
                }
                let pens: Vec<f64> = rows.iter().map(|&r| penalty[r]).collect();
                let sel = select::select(&model, &feats, Some(&pens), 0.05, policy).unwrap();
                let c = sel.candidates[sel.index];
                assert_eq!(g["group"], id);
                assert_eq!(g["index"], sel.index);
                assert_eq!(g["row"], rows[sel.index]);
                for (field, v) in [
                    ("reward", c.interval.reward),
                    ("se", c.interval.se),
                    ("lower", c.interval.lower),
                    ("penalty", c.penalty),
                    ("score", c.score),
                ] {
                    assert_close(
                        g[field].as_f64().unwrap(),
                        v,
                        &format!("group {id} {field}"),
                    );
                }
            }
        }
    }
    // The extreme candidate (row 2) has by far the largest se: pBoN must not prefer it to BoN.
    let bon = json(&ok(&[
        "select",
        s(&m),
        s(&csv),
        "--policy",
        "bon",
        "--json",
    ]));
    let pbon = json(&ok(&["select", s(&m), s(&csv), "--json"])); // pbon is the default
    assert_eq!(pbon["policy"], "pbon");
    assert!(pbon["groups"][0]["se"].as_f64() <= bon["groups"][0]["se"].as_f64());
    let table = ok(&["select", s(&m), s(&csv)]);
    assert!(
        table.contains("policy pbon") && table.lines().count() == 4,
        "{table}"
    );
}

#[test]
fn select_rejects_malformed_candidate_files() {
    let f = Fixture::new();
    let m = f.path("model.hrm");
    let bad = f.write("frac.csv", "group,phi1,phi2,phi3\n1,1,2,3\n2.5,1,2,3\n");
    fails(
        &["select", s(&m), s(&bad)],
        2,
        &["frac.csv", "column `group`, data row 2", "2.5"],
    );
    let bad = f.write("nogroup.csv", &phi_csv(&PHI, 3, "phi"));
    fails(
        &["select", s(&m), s(&bad)],
        2,
        &["nogroup.csv", "missing column `group`"],
    );
    let st = f.path("pen.safetensors");
    write_safetensors(
        &st,
        &[
            ("phi", Dtype::F64, vec![3, 3], f64_bytes(&PHI)),
            ("group", Dtype::I64, vec![3], i64_bytes(&[1, 1, 2])),
            ("penalty", Dtype::F64, vec![2], f64_bytes(&[0.0, 1.0])),
        ],
    );
    fails(
        &["select", s(&m), s(&st)],
        2,
        &["pen.safetensors", "`penalty`", "[2]"],
    );
    let st = f.path("group.safetensors");
    write_safetensors(
        &st,
        &[
            ("phi", Dtype::F64, vec![3, 3], f64_bytes(&PHI)),
            ("group", Dtype::F64, vec![3], f64_bytes(&[1.0, 0.5, 1.0])),
        ],
    );
    fails(
        &["select", s(&m), s(&st)],
        2,
        &["group.safetensors", "tensor `group`, row 1", "0.5"],
    );
    fails(
        &["select", s(&m), s(&st), "--policy", "worst"],
        2,
        &["worst"],
    );
}

#[test]
fn demo_runs_reproducibly_and_prints_the_three_reports() {
    let a = ok(&["demo", "--n", "3000", "--seed", "3"]);
    for needle in [
        "seed 3",
        "n = 3000",
        "(a) Rationality",
        "troll farm",
        "adversarial",
        "(b) llm-A vs llm-B",
        "win rate of llm-A over llm-B",
        "(c) Gold reward",
        "pBoN_KL",
        "BoN_L",
    ] {
        assert!(a.contains(needle), "`{needle}` not in:\n{a}");
    }
    for n in [20, 40, 60, 80, 128] {
        assert!(a.contains(&format!("\n{n:>5} |")), "no N = {n} row:\n{a}");
    }
    // Same seed, same numbers (timings aside); another seed, other numbers.
    let strip = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with("Fit:") && !l.starts_with("Time:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let b = ok(&["demo", "--n", "3000", "--seed", "3", "--threads", "1"]);
    assert_eq!(strip(&a), strip(&b));
    let c = ok(&["demo", "--n", "3000", "--seed", "4"]);
    assert_ne!(strip(&a), strip(&c));
    fails(&["demo", "--n", "10"], 2, &["`n`"]);
}

#[test]
fn help_shows_an_example_for_every_subcommand() {
    let top = ok(&["--help"]);
    for sub in ["fit", "inspect", "score", "compare", "select", "demo"] {
        assert!(
            top.contains(&format!("hetreward {sub} ")),
            "top help lacks {sub}"
        );
        let help = ok(&[sub, "--help"]);
        assert!(
            help.contains("Example:") && help.contains(&format!("hetreward {sub}")),
            "{sub} --help has no example:\n{help}"
        );
    }
    assert!(top.contains("Exit codes"));
    let version = ok(&["--version"]);
    assert!(version.contains(hetreward::VERSION));
}

// ---- Host safety (issue 10): outputs, same-file outputs, counts, negative numbers ----------

/// A run with its peak resident memory: the child is reaped with `wait4`, whose rusage is the
/// child's own (not the maximum over every child of this test process). Linux counts in a
/// child's peak the memory of the process it was spawned from (the test, at `exec`), so
/// `extra_rss_mb` is the child's peak above this test process's own peak (`VmHWM`, read after
/// the child exited): a child that allocates X MB more than the test ever held shows X.
#[cfg(target_os = "linux")]
struct Measured {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    extra_rss_mb: f64,
}

/// This process's peak resident memory in MB (`VmHWM`).
#[cfg(target_os = "linux")]
fn own_peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kb: f64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

#[cfg(target_os = "linux")]
fn run_measured(mut cmd: Command) -> Measured {
    use std::io::Read;
    use std::process::Stdio;
    #[allow(clippy::zombie_processes)] // reaped below by wait4, which std cannot see
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hetreward");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        stdout.read_to_end(&mut b).unwrap();
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        stderr.read_to_end(&mut b).unwrap();
        b
    });
    let mut status = 0;
    // SAFETY: rusage is plain data; the pid is our child's, not yet reaped.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    assert!(libc::WIFEXITED(status), "killed by a signal: {status}");
    Measured {
        code: libc::WEXITSTATUS(status),
        stdout: out.join().unwrap(),
        stderr: String::from_utf8(err.join().unwrap()).unwrap(),
        extra_rss_mb: usage.ru_maxrss as f64 / 1024.0 - own_peak_rss_mb(),
    }
}

fn bin(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hetreward"));
    c.args(args);
    c
}

/// Every entry of a folder with its bytes (symbolic links as their target, special files by
/// kind), to compare a folder before and after a failed command.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let t = e.file_type().unwrap();
            let bytes = if t.is_symlink() {
                std::fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
                    .into_bytes()
            } else if t.is_dir() {
                b"<dir>".to_vec()
            } else if !t.is_file() {
                b"<fifo, device or socket>".to_vec() // never opened: a FIFO would block
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (name, bytes)
        })
        .collect();
    v.sort();
    v
}

/// A write error on stdout (a full disk: /dev/full) is exit 2 with a message naming stdout —
/// never a panic — for every kind of output, clap's help included.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_exit_2_with_a_message() {
    let f = Fixture::new();
    let (model, train) = (f.path("model.hrm"), f.path("train.csv"));
    let phi = f.write("phi.csv", &phi_csv(&PHI, 3, "phi"));
    let before = snapshot(f.dir.path());
    let out = f.path("new.hrm");
    for args in [
        vec!["inspect", s(&model), "--json"],
        vec!["inspect", s(&model)],
        vec!["score", s(&model), s(&phi)],
        vec!["score", s(&model), s(&phi), "--json"],
        vec!["--help"],
        vec!["fit", "--help"],
        vec!["--version"],
        vec!["fit", s(&train), "--out", s(&out), "--report", s(&out)],
    ] {
        let mut cmd = bin(&args);
        cmd.stdout(std::fs::File::create("/dev/full").unwrap());
        let run = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        let code = run.status.code();
        if args.len() == 6 {
            // Two outputs on one file is caught first (nothing printed yet).
            assert_eq!(code, Some(2), "{args:?}: {stderr}");
            continue;
        }
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("<stdout>") && stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // A fit whose summary cannot be printed publishes nothing: no model, no report.
    let report = f.path("new.json");
    let mut cmd = bin(&["fit", s(&train), "--out", s(&out), "--report", s(&report)]);
    cmd.stdout(std::fs::File::create("/dev/full").unwrap());
    let run = cmd.output().unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(snapshot(f.dir.path()), before);
    // Also over existing outputs: they are left as they were.
    let mut cmd = bin(&[
        "fit",
        s(&train),
        "--out",
        s(&model),
        "--report",
        s(&f.path("report.json")),
        "--solver",
        "agd",
        "--max-iter",
        "5",
    ]);
    cmd.stdout(std::fs::File::create("/dev/full").unwrap());
    assert_eq!(cmd.output().unwrap().status.code(), Some(2));
    assert_eq!(snapshot(f.dir.path()), before);
}

/// A reader that closes the pipe early (`| head -c 10`) ends the program quietly with 141
/// (128 + SIGPIPE): no panic, no message; a fit stopped this way publishes nothing.
#[test]
fn a_closed_pipe_ends_quietly_with_141() {
    use std::io::Read;
    use std::process::Stdio;
    let f = Fixture::new();
    let model = f.path("model.hrm");
    // 20,000 rows print ~3 MB of JSON: far more than a pipe holds.
    let rows: Vec<f64> = (0..60_000).map(|i| (i % 97) as f64 * 0.01).collect();
    let phi = f.write("many.csv", &phi_csv(&rows, 3, "phi"));
    for args in [
        vec!["score", s(&model), s(&phi), "--json"],
        vec!["score", s(&model), s(&phi)],
    ] {
        let mut child = bin(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = [0u8; 10];
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        drop(child.stdout.take());
        let run = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
    // fit with its stdout already closed: the fit runs, the summary cannot be printed, and
    // neither the model nor the report is published (an existing one is left as it was). The
    // pipe's read end is closed before the program starts, so its first write fails whatever
    // the scheduling (a read end closed after the spawn raced a fast fit's write into the
    // pipe's buffer).
    let before = snapshot(f.dir.path());
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned here alone.
    let (read_end, write_end) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(read_end);
    let child = bin(&[
        "fit",
        s(&f.path("train.csv")),
        "--out",
        s(&model),
        "--report",
        s(&f.path("other.json")),
        "--solver",
        "agd",
        "--max-iter",
        "7",
    ])
    .stdout(Stdio::from(write_end))
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let run = child.wait_with_output().unwrap();
    assert_eq!(run.status.code(), Some(141));
    // (the not-converged warning is expected on stderr; no error or panic)
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !stderr.contains("error") && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert_eq!(snapshot(f.dir.path()), before);
}

/// An output that is the same file as DATA or as the other output — whatever the spelling:
/// `./`, `dir/../`, a symbolic link to the file or to its folder, a hard link — is exit 2
/// naming the flag, before anything is read or written; the folder is left byte for byte.
#[cfg(unix)]
#[test]
fn an_output_that_is_an_input_or_another_output_is_refused() {
    let f = Fixture::new();
    let d = f.dir.path();
    let train = f.path("train.csv");
    std::fs::create_dir(f.path("sub")).unwrap();
    std::os::unix::fs::symlink(&train, f.path("link.csv")).unwrap();
    std::os::unix::fs::symlink(d, f.path("dirlink")).unwrap();
    std::fs::hard_link(&train, f.path("hard.csv")).unwrap();
    let before = snapshot(d);
    let dot = format!("{}/./train.csv", s(d));
    let up = format!("{}/sub/../train.csv", s(d));
    let via_dir = format!("{}/dirlink/train.csv", s(d));
    let (link, hard) = (f.path("link.csv"), f.path("hard.csv"));
    let m = f.path("m.hrm");
    let m_dot = format!("{}/./m.hrm", s(d));
    let m_dir = format!("{}/dirlink/m.hrm", s(d));
    let existing = f.path("model.hrm");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--out", s(&train)], "--out"),
        (vec!["--out", &dot], "--out"),
        (vec!["--out", &up], "--out"),
        (vec!["--out", &via_dir], "--out"),
        (vec!["--out", s(&link)], "--out"),
        (vec!["--out", s(&hard)], "--out"),
        (vec!["--out", s(&m), "--report", s(&train)], "--report"),
        (vec!["--out", s(&m), "--report", &up], "--report"),
        (vec!["--out", s(&m), "--report", s(&hard)], "--report"),
        (vec!["--out", s(&m), "--report", s(&m)], "--report"),
        (vec!["--out", s(&m), "--report", &m_dot], "--report"),
        (vec!["--out", s(&m), "--report", &m_dir], "--report"),
        (
            vec!["--out", s(&existing), "--report", s(&existing)],
            "--report",
        ),
    ];
    for (extra, flag) in cases {
        for data in [s(&train), s(&link), s(&hard)] {
            let mut args = vec!["fit", data];
            args.extend(&extra);
            let err = fails(&args, 2, &[&format!("`{flag}`")]);
            assert!(
                err.contains("refusing to overwrite an input")
                    || err.contains("each output needs its own file"),
                "{args:?}: {err}"
            );
            assert_eq!(snapshot(d), before, "{args:?} changed the folder");
        }
    }
    // The same names in another folder are different files: fine.
    std::fs::copy(&train, f.path("sub/train.csv")).unwrap();
    ok(&[
        "fit",
        s(&train),
        "--out",
        s(&f.path("sub/train.hrm")),
        "--report",
        s(&f.path("sub/train.json")),
    ]);
}

/// A failed command leaves every existing output as it was, whichever output or step fails;
/// outputs that are folders or name no file are refused before any work.
#[test]
fn a_failed_fit_leaves_every_output_as_it_was() {
    let f = Fixture::new();
    let d = f.dir.path();
    let train = f.path("train.csv");
    let (model, report) = (f.path("model.hrm"), f.path("report.json"));
    let folder = f.path("folder");
    std::fs::create_dir(&folder).unwrap();
    let before = snapshot(d);
    let missing = f.path("no/such/dir/r.json");
    let cases: Vec<(Vec<&str>, i32, Vec<&str>)> = vec![
        // The report's folder does not exist: the model must not be replaced first.
        (
            vec!["--out", s(&model), "--report", s(&missing)],
            2,
            vec!["r.json", "No such file"],
        ),
        (
            vec!["--out", s(&missing), "--report", s(&report)],
            2,
            vec!["r.json", "No such file"],
        ),
        (
            vec!["--out", s(&model), "--report", s(&folder)],
            2,
            vec!["`--report`", "is a folder"],
        ),
        (vec!["--out", s(&folder)], 2, vec!["`--out`", "is a folder"]),
        (vec!["--out", ""], 2, vec!["--out"]),
        (
            vec!["--out", s(&model), "--report", "."],
            2,
            vec!["`--report`", "is not a file path"],
        ),
        (
            vec!["--out", s(&model), "--report", "/"],
            2,
            vec!["`--report`"],
        ),
        // Not converged with --require-converged: exit 3, both outputs kept.
        (
            vec![
                "--out",
                s(&model),
                "--report",
                s(&report),
                "--solver",
                "agd",
                "--max-iter",
                "2",
                "--require-converged",
            ],
            3,
            vec!["not converged", "iteration cap"],
        ),
        // A bad option found after the data is read.
        (
            vec!["--out", s(&model), "--report", s(&report), "--theta0", "1"],
            2,
            vec!["theta0"],
        ),
    ];
    for (extra, code, needles) in cases {
        let mut args = vec!["fit", s(&train)];
        args.extend(&extra);
        fails(&args, code, &needles);
        assert_eq!(snapshot(d), before, "{args:?} changed the folder");
    }
}

/// Outputs that a rename would not just replace are refused before any work, naming the flag:
/// a symbolic link (the link would be replaced, not written through), a FIFO or a device, a
/// read-only file; what they point to and the folder are left as they were.
#[cfg(unix)]
#[test]
fn outputs_that_are_not_writable_regular_files_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let d = f.dir.path();
    let train = f.path("train.csv");
    let model = f.path("model.hrm");
    let link = f.path("link.hrm");
    std::os::unix::fs::symlink(&model, &link).unwrap();
    let dangling = f.path("dangling.hrm");
    std::os::unix::fs::symlink(f.path("nowhere.hrm"), &dangling).unwrap();
    let fifo = f.path("fifo.hrm");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let ro = f.path("readonly.hrm");
    std::fs::copy(&model, &ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = snapshot(d);
    for (flag, path, needles) in [
        ("--out", &link, vec!["`--out`", "symbolic link"]),
        ("--out", &dangling, vec!["`--out`", "symbolic link"]),
        ("--report", &link, vec!["`--report`", "symbolic link"]),
        ("--out", &fifo, vec!["`--out`", "not a regular file"]),
        ("--report", &fifo, vec!["`--report`", "not a regular file"]),
        ("--out", &ro, vec!["readonly.hrm", "read-only"]),
    ] {
        let other = f.path("other.hrm");
        let mut args = vec!["fit", s(&train)];
        if flag == "--out" {
            args.extend(["--out", s(path)]);
        } else {
            args.extend(["--out", s(&other), "--report", s(path)]);
        }
        fails(&args, 2, &needles);
        assert_eq!(snapshot(d), before, "{args:?} changed the folder");
    }
    #[cfg(target_os = "linux")]
    fails(
        &["fit", s(&train), "--out", "/dev/null"],
        2,
        &["`--out`", "/dev/null", "not a regular file"],
    );
}

/// A legal long output name (250 bytes, and the 255-byte maximum) saves, for the model and the
/// report, and nothing else is left in the folder.
#[test]
fn long_output_names_save() {
    let f = Fixture::new();
    let dir = f.path("long");
    std::fs::create_dir(&dir).unwrap();
    let model = dir.join(format!("{}.hrm", "m".repeat(246)));
    let report = dir.join(format!("{}.json", "r".repeat(250)));
    assert_eq!(report.file_name().unwrap().len(), 255);
    ok(&[
        "fit",
        s(&f.path("train.csv")),
        "--out",
        s(&model),
        "--report",
        s(&report),
    ]);
    assert_eq!(model_file::load(&model).unwrap().theta(), f.model().theta());
    assert!(json(&std::fs::read_to_string(&report).unwrap())["theta"].is_array());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
}

/// Negative numbers reach the library's range check, which names the argument — instead of
/// clap's "unexpected argument '-1'". Unsigned counts name their flag.
#[test]
fn negative_numbers_name_their_argument() {
    let f = Fixture::new();
    let (train, model) = (f.path("train.csv"), f.path("model.hrm"));
    let out = f.path("x.hrm");
    let phi = f.write("phi.csv", &phi_csv(&PHI, 3, "phi"));
    let pairs = f.write(
        "pairs.csv",
        "phi0_1,phi0_2,phi0_3,phi1_1,phi1_2,phi1_3\n0.5,0.25,1,1,1,1\n",
    );
    let cands = f.write("cands.csv", "group,phi1,phi2,phi3\n0,0.5,0.25,1\n0,1,1,1\n");
    for sub in [
        vec!["score", s(&model), s(&phi)],
        vec!["compare", s(&model), s(&pairs)],
        vec!["select", s(&model), s(&cands)],
    ] {
        for alpha in ["-1", "-0.05", "-1e-300", "-inf"] {
            let mut args = sub.clone();
            args.extend(["--alpha", alpha]);
            fails(&args, 2, &["`alpha`", "(0, 1)"]);
        }
    }
    let fit = |extra: &[&str], needles: &[&str]| {
        let mut args = vec!["fit", s(&train), "--out", s(&out)];
        args.extend(extra);
        fails(&args, 2, needles);
        assert!(!out.exists());
    };
    fit(&["--eta1", "-1"], &["`eta1`"]);
    fit(&["--eta2", "-0.5"], &["`eta2`"]);
    fit(&["--tol", "-1e-8"], &["`tol`"]);
    fit(&["--seed", "-1"], &["--seed"]);
    fit(&["--max-iter", "-3"], &["--max-iter"]);
    fit(&["--restarts", "-1"], &["--restarts"]);
    fit(&["--threads", "-1"], &["--threads"]);
    fit(&["--theta0", "-1,-2"], &["theta0"]);
    fails(&["demo", "--n", "-5"], 2, &["--n"]);
    fails(&["demo", "--seed", "-1"], 2, &["--seed"]);
    fails(&["demo", "--threads", "-2"], 2, &["--threads"]);
}

/// Sizes of the demo are bounded: a huge --n is exit 2 naming `n`, at once and in little
/// memory (it used to abort allocating).
#[cfg(target_os = "linux")]
#[test]
fn demo_sizes_are_bounded() {
    for n in ["100000000000", "18446744073709551615", "1000001"] {
        let run = run_measured(bin(&["demo", "--n", n]));
        assert_eq!(run.code, 2, "--n {n}: {}", run.stderr);
        assert!(
            run.stderr.contains("`n`") && run.stderr.contains("at most 1000000"),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty());
        assert!(run.extra_rss_mb < 64.0, "--n {n}: {} MB", run.extra_rss_mb);
    }
    // One more than a u64 holds: clap names the flag.
    fails(&["demo", "--n", "18446744073709551616"], 2, &["--n"]);
}

/// Not converging says what happened, from the report's termination: separated data (the MLE is
/// at infinity) and the iteration cap are told apart, instead of "gradient norm > tol".
#[test]
fn non_convergence_says_what_happened() {
    let f = Fixture::new();
    // Completely separated: y = 1 exactly when z1 - z2 / 2 + z3 / 4 > 0 (no covariates).
    let mut text = String::from("y,psi0,z1,z2,z3\n");
    for i in 0..400 {
        let z1 = ((i * 37 % 101) as f64 - 50.0) / 25.0 + 0.01;
        let z2 = ((i * 53 % 89) as f64 - 44.0) / 30.0;
        let z3 = ((i * 29 % 83) as f64 - 41.0) / 20.0;
        let y = (z1 - 0.5 * z2 + 0.25 * z3 > 0.0) as u8;
        text += &format!("{y},1,{z1},{z2},{z3}\n");
    }
    let sep = f.write("separated.csv", &text);
    let out = f.path("sep.hrm");
    let report = f.path("sep.json");
    let run = hetreward(&["fit", s(&sep), "--out", s(&out), "--report", s(&report)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = json(&std::fs::read_to_string(&report).unwrap());
    assert_eq!(r["termination"], "diverged");
    assert!(
        run.stderr.contains("warning: not converged")
            && run.stderr.contains("separated")
            && run.stderr.contains("infinity"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("> tol"), "{}", run.stderr);
    let strict = f.path("strict.hrm");
    let err = fails(
        &["fit", s(&sep), "--out", s(&strict), "--require-converged"],
        3,
        &["not converged", "separated"],
    );
    assert!(!err.contains("> tol"), "{err}");
    assert!(!strict.exists());
    let err = fails(
        &[
            "fit",
            s(&f.path("train.csv")),
            "--out",
            s(&strict),
            "--solver",
            "agd",
            "--max-iter",
            "3",
            "--require-converged",
        ],
        3,
        &["iteration cap", "--max-iter"],
    );
    assert!(err.contains("agd"), "{err}");
}

// ---- Counts validated by the library's FitOptions::check (limits: restarts <= 1000, threads
// <= 1024, max_iter <= 1e9). These pass once the library's checks are in (issue 10, lead). ---

/// Huge counts reach the library's check through clap (parsed as usize, no overflow in the
/// CLI) and are exit 2 naming the option, at once and in little memory.
#[cfg(target_os = "linux")]
#[test]
fn huge_fit_counts_are_exit_2_naming_the_option() {
    let f = Fixture::new();
    let train = f.path("train.csv");
    let out = f.path("x.hrm");
    let before = snapshot(f.dir.path());
    for (flag, value, name) in [
        ("--restarts", "18446744073709551615", "restarts"),
        ("--restarts", "4294967295", "restarts"),
        ("--restarts", "1001", "restarts"),
        ("--threads", "18446744073709551615", "threads"),
        ("--threads", "1000000", "threads"),
        ("--threads", "1025", "threads"),
        ("--max-iter", "18446744073709551615", "max_iter"),
        ("--max-iter", "1000000001", "max_iter"),
    ] {
        let run = run_measured(bin(&["fit", s(&train), "--out", s(&out), flag, value]));
        assert_eq!(run.code, 2, "{flag} {value}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("`{name}`")),
            "{flag} {value}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert!(run.stdout.is_empty());
        assert!(
            run.extra_rss_mb < 64.0,
            "{flag} {value}: {} MB",
            run.extra_rss_mb
        );
        assert_eq!(snapshot(f.dir.path()), before);
    }
    // More than a u64 holds: clap names the flag.
    for flag in ["--restarts", "--threads", "--max-iter"] {
        fails(
            &[
                "fit",
                s(&train),
                "--out",
                s(&out),
                flag,
                "18446744073709551616",
            ],
            2,
            &[flag],
        );
    }
    for value in ["18446744073709551615", "1000000", "1025"] {
        let run = run_measured(bin(&["demo", "--threads", value]));
        assert_eq!(run.code, 2, "demo --threads {value}: {}", run.stderr);
        assert!(run.stderr.contains("`threads`"), "{}", run.stderr);
        assert!(run.extra_rss_mb < 64.0, "{} MB", run.extra_rss_mb);
    }
}

/// Issue 11: `fit --intervals` stores the method (bootstrap draws seeded by --seed, the same
/// for any thread count, as the library computes them); score follows it, `--wald` gives the
/// paper's figures; bad B values are bad input.
#[test]
fn fit_with_calibrated_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let data = training();
    let csv = dir.path().join("train.csv");
    write_training_csv(&csv, &data);
    let m1 = dir.path().join("boot1.hrm");
    let m2 = dir.path().join("boot2.hrm");
    let fit = |out: &Path, threads: &str| {
        ok(&[
            "fit",
            s(&csv),
            "--out",
            s(out),
            "--intervals",
            "bootstrap",
            "--bootstrap-reps",
            "60",
            "--seed",
            "9",
            "--threads",
            threads,
        ])
    };
    let table = fit(&m1, "1");
    assert!(
        table.contains("intervals: bootstrap") && table.contains("B = 60"),
        "{table}"
    );
    assert!(table.contains("diagnostics: d1/n = 0.0075"), "{table}");
    fit(&m2, "3");
    let (a, b) = (
        hetreward::io::model_file::load(&m1).unwrap(),
        hetreward::io::model_file::load(&m2).unwrap(),
    );
    assert_eq!(a.calibration(), b.calibration());
    let report = json(&ok(&["inspect", s(&m1), "--json"]));
    assert_eq!(report["intervals"]["method"], "bootstrap");
    assert_eq!(report["intervals"]["reps"], 60);
    assert_eq!(report["diagnostics"]["mle_finite"], true);
    // Score: the model's percentile intervals; --wald: the paper's.
    let phi = dir.path().join("phi.csv");
    std::fs::write(&phi, "phi1,phi2,phi3\n0.0625,0.125,0.125\n").unwrap();
    let boot = json(&ok(&["score", s(&m1), s(&phi), "--json"]));
    let wald = json(&ok(&["score", s(&m1), s(&phi), "--json", "--wald"]));
    let want = a.score(&[0.0625, 0.125, 0.125], 0.05).unwrap();
    assert_close(
        boot["rows"][0]["lower"].as_f64().unwrap(),
        want.lower,
        "boot lower",
    );
    let want = a.wald().score(&[0.0625, 0.125, 0.125], 0.05).unwrap();
    assert_close(
        wald["rows"][0]["lower"].as_f64().unwrap(),
        want.lower,
        "wald lower",
    );
    // Auto on this small design picks the bootstrap and says so.
    let auto = ok(&[
        "fit",
        s(&csv),
        "--out",
        s(&m2),
        "--intervals",
        "auto",
        "--bootstrap-reps",
        "20",
    ]);
    assert!(auto.contains("bootstrap (picked by auto)"), "{auto}");
    // B outside [10, 100000] is bad input.
    for bad in ["5", "100001"] {
        fails(
            &[
                "fit",
                s(&csv),
                "--out",
                s(&m2),
                "--intervals",
                "bootstrap",
                "--bootstrap-reps",
                bad,
            ],
            2,
            &["bootstrap_reps"],
        );
    }
}

// ---- Issue 22: every reader bounds what it buffers ------------------------------------------

/// `fit`, `score`, `compare`, `select` and `inspect` handed an endless source (a link to
/// /dev/zero or /dev/urandom) or a 10 GB sparse file — as CSV, safetensors or model — answer
/// exit 2 with an error naming the file, in seconds and in little memory (the CSV reader used
/// to grow the header until the allocator aborted the process with SIGABRT).
#[cfg(target_os = "linux")]
#[test]
fn endless_and_huge_inputs_are_refused_in_bounded_time_and_memory() {
    let f = Fixture::new();
    let (train, model) = (f.path("train.csv"), f.path("model.hrm"));
    let out = f.path("never.hrm");
    // The sources: links to the devices, and a sparse 10 GB file under each extension, one of
    // them a model whose header is valid (magic, version, length) over zeros.
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for (device, stem) in [("/dev/zero", "zero"), ("/dev/urandom", "urandom")] {
        for ext in ["csv", "safetensors", "hrm"] {
            let link = f.path(&format!("{stem}.{ext}"));
            std::os::unix::fs::symlink(device, &link).unwrap();
            inputs.push((format!("a link to {device} as .{ext}"), link));
        }
    }
    let size: u64 = 10 << 30;
    for ext in ["csv", "safetensors", "hrm"] {
        let path = f.path(&format!("sparse.{ext}"));
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        inputs.push((format!("a 10 GB sparse file as .{ext}"), path));
    }
    let headed = f.path("headed.hrm");
    let mut head = b"HETRWRD\0".to_vec();
    head.extend(2u32.to_le_bytes());
    head.extend((size - 24).to_le_bytes());
    std::fs::write(&headed, &head).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&headed)
        .unwrap()
        .set_len(size)
        .unwrap();
    inputs.push(("a 10 GB sparse model with a valid header".into(), headed));
    // A safetensors header listing 200,000 empty tensors (9 MB): parsed into JSON values, it
    // took ~20 times its size.
    let entries: Vec<String> = (0..200_000)
        .map(|i| format!("\"t{i}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"))
        .collect();
    let json = format!("{{{}}}", entries.join(","));
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend(json.as_bytes());
    let wide = f.path("tensors.safetensors");
    std::fs::write(&wide, bytes).unwrap();
    inputs.push(("a header of 200,000 tensors".into(), wide));
    for (what, input) in &inputs {
        let i = s(input);
        let runs: Vec<Vec<&str>> = if i.ends_with(".hrm") {
            vec![vec!["inspect", i], vec!["score", i, s(&train)]]
        } else {
            vec![
                vec!["fit", i, "--out", s(&out)],
                vec!["score", s(&model), i],
                vec!["compare", s(&model), i],
                vec!["select", s(&model), i],
            ]
        };
        for args in runs {
            let started = std::time::Instant::now();
            let run = run_measured(bin(&args));
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(run.code, 2, "{args:?} ({what}): {}", run.stderr);
            assert!(
                run.stderr.starts_with("hetreward: error:") && run.stderr.contains(i),
                "{args:?} ({what}): the error does not name the file: {}",
                run.stderr
            );
            assert!(run.stdout.is_empty(), "{args:?} ({what})");
            assert!(seconds < 10.0, "{args:?} ({what}): {seconds:.1} s");
            assert!(
                run.extra_rss_mb < 64.0,
                "{args:?} ({what}): peak RSS {:.0} MB above the test's",
                run.extra_rss_mb
            );
        }
    }
    assert!(!out.exists());
}

/// `data` (with cluster ids) as a training CSV with a leading cluster column.
fn annotator_csv(data: &hetreward::Dataset) -> String {
    let (d1, d2) = (data.d1(), data.d2());
    let mut header = vec!["cluster".to_string(), "y".to_string(), "psi0".to_string()];
    header.extend((1..=d1).map(|j| format!("z{j}")));
    header.extend((1..=d2).map(|k| format!("psi{k}")));
    let mut text = header.join(",") + "\n";
    for i in 0..data.n() {
        let mut row = vec![
            data.cluster().unwrap()[i].to_string(),
            data.y()[i].to_string(),
            data.psi0()[i].to_string(),
        ];
        row.extend(data.z_row(i).iter().map(f64::to_string));
        row.extend(data.psi_row(i).iter().map(f64::to_string));
        text += &(row.join(",") + "\n");
    }
    text
}

/// Issue 31: with 6 annotators of whom 2 are experts the one-step jackknife can be impossible
/// (the observed Hessian without one annotator is not positive definite). `auto` then falls
/// back to the exact refits, exits 0 and names the annotator and the coefficient; an explicit
/// `cluster-onestep` refuses with the same names and what to do.
#[test]
fn auto_falls_back_to_the_exact_jackknife_where_the_one_step_is_impossible() {
    let dir = tempfile::tempdir().unwrap();
    let data = hetreward::sim::annotator_effects(6, 50, 0.6, ISSUE_31_SEED);
    let path = dir.path().join("six.csv");
    std::fs::write(&path, annotator_csv(&data)).unwrap();
    let out = dir.path().join("m.hrm");
    let auto = ok(&["fit", s(&path), "--out", s(&out), "--intervals", "auto"]);
    assert!(
        auto.contains("intervals: cluster-jackknife (picked by auto), G = 6 clusters, t(5)"),
        "{auto}"
    );
    assert!(auto.contains("auto fell back to the exact"), "{auto}");
    assert!(
        auto.contains("fallback: without annotator ") && auto.contains(" at gamma["),
        "{auto}"
    );
    // The model loads and keeps the fallback (cluster-jackknife, requested auto).
    let shown = ok(&["inspect", s(&out)]);
    assert!(
        shown.contains("cluster-jackknife (picked by auto)"),
        "{shown}"
    );
    let explicit = dir.path().join("e.hrm");
    fails(
        &[
            "fit",
            s(&path),
            "--out",
            s(&explicit),
            "--intervals",
            "cluster-onestep",
        ],
        1,
        &[
            "without annotator ",
            "gamma[",
            "use --intervals cluster-jackknife",
        ],
    );
    assert!(!explicit.exists());
}

/// Issue 31: with 12 annotators of whom one carries the expert flag, every cluster method
/// refused. `fit --intervals auto` now exits 0, names the coefficient and the annotator, and
/// reports gamma[0]'s interval as unbounded (text `unbounded`, JSON `null` bounds and the
/// `intervals.unbounded` list); `inspect` of the model says the same, and a rationality or
/// reward that puts no weight on gamma[0] keeps a finite interval.
#[test]
fn auto_fits_and_says_which_coefficient_one_annotator_carries() {
    let dir = tempfile::tempdir().unwrap();
    let data = hetreward::sim::annotator_effects(12, 50, 0.6, 5);
    let path = dir.path().join("twelve.csv");
    std::fs::write(&path, annotator_csv(&data)).unwrap();
    let out = dir.path().join("m.hrm");
    let fit = ok(&["fit", s(&path), "--out", s(&out), "--intervals", "auto"]);
    let words = "warning: unbounded: gamma[0] is carried by annotator 0 alone";
    assert!(fit.contains(words), "{fit}");
    let row = fit
        .lines()
        .find(|l| l.starts_with("gamma[0] "))
        .expect("gamma[0]'s row");
    assert!(row.contains("unbounded") && row.contains("-inf"), "{row}");
    let theta = fit.lines().find(|l| l.starts_with("theta[0] ")).unwrap();
    assert!(!theta.contains("inf"), "{theta}");
    let shown = ok(&["inspect", s(&out)]);
    assert!(shown.contains(words), "{shown}");
    let report = json(&ok(&["inspect", s(&out), "--json"]));
    let unbounded = &report["intervals"]["unbounded"];
    assert_eq!(unbounded[0]["coefficient"], "gamma_0", "{report}");
    assert_eq!(unbounded[0]["annotator"], 0);
    assert!(report["intervals"]["unbounded_reason"]
        .as_str()
        .unwrap()
        .contains("annotator 0"));
    assert!(report["gamma_lower"][0].is_null() && report["gamma_upper"][0].is_null());
    assert!(report["gamma_lower"][1].is_f64() && report["theta_lower"][0].is_f64());
    // The explicit cluster methods fit too (they refused before).
    for method in ["cluster-jackknife", "cluster-onestep"] {
        let m = dir.path().join(format!("{method}.hrm"));
        let fit = ok(&["fit", s(&path), "--out", s(&m), "--intervals", method]);
        assert!(fit.contains(words), "{method}: {fit}");
    }
}

/// The seed of `sim::annotator_effects(6, 50, 0.6, seed)` with 2 experts whose one-step
/// jackknife is impossible (found by `cluster::tests::scan_issue_31_seeds`).
const ISSUE_31_SEED: u64 = 9;

#[test]
fn fit_with_cluster_ids_uses_cluster_intervals_under_auto_and_reports_heterogeneity() {
    use hetreward::calibrate::{IntervalMethod, IntervalOptions};
    let dir = tempfile::tempdir().unwrap();
    let data = hetreward::sim::annotator_effects(40, 40, 0.6, 6);
    let (d1, d2) = (data.d1(), data.d2());
    let path = dir.path().join("annotators.csv");
    std::fs::write(&path, annotator_csv(&data)).unwrap();
    let out = dir.path().join("m.hrm");
    let auto = ok(&["fit", s(&path), "--out", s(&out), "--intervals", "auto"]);
    assert!(
        auto.contains("intervals: cluster-onestep (picked by auto), G = 40 clusters, t(39)"),
        "{auto}"
    );
    assert!(
        auto.contains("auto: the data have cluster (annotator) ids"),
        "{auto}"
    );
    assert!(auto.contains("heterogeneity: 40 clusters"), "{auto}");
    assert!(!auto.contains("warning: annotators differ"), "{auto}");
    // The CLI reports the library's cluster-jackknife interval of gamma[0].
    let library = EstimatorOptions {
        intervals: IntervalOptions {
            method: IntervalMethod::ClusterOneStep,
            reps: None,
        },
        ..EstimatorOptions::default()
    }
    .check()
    .unwrap()
    .estimate(&data, &FitControl::default())
    .unwrap();
    let ci = library.gamma_interval(0, 0.05);
    assert!(auto.contains(&format!("{:.6}", ci.lower)), "{auto}\n{ci:?}");
    let loaded = model_file::load(&out).unwrap();
    assert_eq!(loaded.params(), library.params());
    assert_eq!(loaded.calibration().requested(), IntervalMethod::Auto);
    assert_eq!(
        loaded.calibration().gamma_draws(),
        library.calibration().gamma_draws()
    );
    // Independent intervals on the same data: the diagnostic warns in plain words, the
    // small-sample hint recommends the cluster-aware method (not the bootstrap), and the JSON
    // report carries the diagnostic: the library's figures.
    let report = dir.path().join("r.json");
    let wald = ok(&["fit", s(&path), "--out", s(&out), "--report", s(&report)]);
    assert!(
        wald.contains("warning: annotators differ beyond their covariates"),
        "{wald}"
    );
    assert!(
        wald.contains("comparisons per parameter")
            && wald.contains("refit with --intervals cluster-onestep")
            && !wald.contains("--intervals bootstrap"),
        "{wald}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let h = hetreward::cluster::heterogeneity(&data, library.params()).unwrap();
    let het = &json["heterogeneity"];
    assert_eq!(het["clusters"], 40);
    let got: Vec<f64> = serde_json::from_value(het["design_effects"].clone()).unwrap();
    assert_eq!(got.len(), d1 + d2);
    for (g, w) in got.iter().zip(&h.design_effects) {
        assert!(
            (g - w).abs() < 1e-9 * w,
            "{got:?} vs {:?}",
            h.design_effects
        );
    }
    assert_eq!(het["coefficients"][d1], "gamma_0");
    assert!(het["warning"]
        .as_str()
        .unwrap()
        .contains("annotators differ"));
    assert!(json["diagnostics"]["warning"]
        .as_str()
        .unwrap()
        .contains("cluster-onestep"));
    // Without cluster ids there is no diagnostic and the hint stays the bootstrap.
    let plain = dir.path().join("plain.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let stripped: String = text
        .lines()
        .map(|l| l.split_once(',').unwrap().1.to_string() + "\n")
        .collect();
    std::fs::write(&plain, stripped).unwrap();
    let unclustered = ok(&["fit", s(&plain), "--out", s(&out), "--report", s(&report)]);
    assert!(
        unclustered.contains("refit with --intervals bootstrap")
            && !unclustered.contains("heterogeneity:"),
        "{unclustered}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(json["heterogeneity"].is_null());
    assert!(json["leverage"].is_null());
}

/// The leverage diagnostics beside the heterogeneity diagnostic: printed, in the JSON report
/// with the library's figures, and the warning names the coefficient one annotator carries
/// (the expert flag held by one annotator of 12) and that annotator.
#[test]
fn fit_with_cluster_ids_reports_leverage_and_names_a_lone_expert() {
    let dir = tempfile::tempdir().unwrap();
    let data = hetreward::sim::annotator_effects(12, 40, 0.0, 7);
    let ids = data.cluster().unwrap().to_vec();
    let lone = (0..data.n())
        .find(|&i| data.psi_row(i)[0] == 1.0)
        .map(|i| ids[i])
        .expect("an expert");
    let mut psi = data.psi().to_vec();
    for i in 0..data.n() {
        if ids[i] != lone {
            psi[2 * i] = 0.0;
        }
    }
    let data = hetreward::data::Dataset::new(
        data.d1(),
        2,
        data.z().to_vec(),
        data.psi0().to_vec(),
        psi,
        data.y().to_vec(),
        Some(ids),
    )
    .unwrap();
    let path = dir.path().join("lone.csv");
    std::fs::write(&path, annotator_csv(&data)).unwrap();
    let (out, report) = (dir.path().join("m.hrm"), dir.path().join("r.json"));
    let text = ok(&["fit", s(&path), "--out", s(&out), "--report", s(&report)]);
    assert!(
        text.contains("leverage: 12 annotators; largest leverage"),
        "{text}"
    );
    assert!(
        text.contains("on few of the 12 annotators")
            && text.contains("gamma_0 (effective number")
            && text.contains(&format!("annotator {lone} carries")),
        "{text}"
    );
    let model = model_file::load(&out).unwrap();
    let want = model.leverage_on(&data).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let lev = &json["leverage"];
    assert_eq!(lev["clusters"], 12);
    let got: Vec<f64> = serde_json::from_value(lev["effective_annotators"].clone()).unwrap();
    assert_eq!(got, want.effective);
    let got: Vec<f64> = serde_json::from_value(lev["leverage"].clone()).unwrap();
    assert_eq!(got, want.leverage);
    let d1 = data.d1();
    assert_eq!(
        lev["partial_leverage"][want.top[d1]][d1],
        want.partial_of(want.top[d1], d1)
    );
    assert_eq!(lev["top_annotator"][d1], lone);
    assert!(lev["warning"].as_str().unwrap().contains("gamma_0"));
}
