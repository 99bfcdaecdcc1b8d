//! Golden outputs of the estimator's iteration, for bit-for-bit comparisons across a refactor
//! (issue 19: "every estimate, SE, interval, selection and model file is bit-identical").
//!
//! Ignored by default; `scripts/golden-diff.sh` runs it with `HETREWARD_GOLDEN_DIR` set. It
//! writes there (1) the training and query files the script feeds to the CLI, and (2)
//! `api.txt`: every figure, in shortest round-trip form (so a text diff is a bit diff), of
//! the fits reached only through the Rust API — the distributed driver over in-process shards
//! (dense and CG variants, both starts, every covariance kind), the in-memory fit with each
//! Newton variant forced and agd, the profile-likelihood intervals, and warm and scratch
//! bootstrap refits.

use hetreward::covariance::CovarianceKind;
use hetreward::fit::{FitControl, FitOptions, Init, SolverKind};
use hetreward::internals::fit::{fit_with, NewtonVariant, Tuning};
use hetreward::internals::shard::{fit_distributed, LocalOracle};
use hetreward::profile::coefficient_interval;
use hetreward::sim::{high_dimensional, one_hot_groups, paper_simulation, ActionDesign};
use hetreward::{Dataset, Params};
use std::fmt::Write as _;
use std::path::Path;

fn floats(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:?}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn with_clusters(data: &Dataset, id: impl Fn(usize) -> i64) -> Dataset {
    Dataset::new(
        data.d1(),
        data.d2(),
        data.z().to_vec(),
        data.psi0().to_vec(),
        data.psi().to_vec(),
        data.y().to_vec(),
        Some((0..data.n()).map(id).collect()),
    )
    .unwrap()
}

/// Shard `k` holds the rows `i` with `i % k == s` (every shard non-empty, rows interleaved).
fn shards(data: &Dataset, k: usize) -> Vec<Dataset> {
    (0..k)
        .map(|s| {
            let rows: Vec<usize> = (s..data.n()).step_by(k).collect();
            let z = rows.iter().flat_map(|&i| data.z_row(i).to_vec()).collect();
            let psi0 = rows.iter().map(|&i| data.psi0()[i]).collect();
            let psi = rows
                .iter()
                .flat_map(|&i| data.psi_row(i).to_vec())
                .collect();
            let y = rows.iter().map(|&i| data.y()[i]).collect();
            let cluster = data.cluster().map(|c| rows.iter().map(|&i| c[i]).collect());
            Dataset::new(data.d1(), data.d2(), z, psi0, psi, y, cluster).unwrap()
        })
        .collect()
}

fn write_training_csv(path: &Path, data: &Dataset) {
    let (d1, d2) = (data.d1(), data.d2());
    let mut header = Vec::new();
    if data.cluster().is_some() {
        header.push("cluster".to_string());
    }
    header.extend(["y".to_string(), "psi0".to_string()]);
    header.extend((1..=d1).map(|j| format!("z{j}")));
    header.extend((1..=d2).map(|k| format!("psi{k}")));
    let mut text = header.join(",") + "\n";
    for i in 0..data.n() {
        let mut row = Vec::new();
        if let Some(c) = data.cluster() {
            row.push(c[i].to_string());
        }
        row.extend([data.y()[i].to_string(), data.psi0()[i].to_string()]);
        row.extend(data.z_row(i).iter().map(|v| format!("{v:?}")));
        row.extend(data.psi_row(i).iter().map(|v| format!("{v:?}")));
        text += &(row.join(",") + "\n");
    }
    std::fs::write(path, text).unwrap();
}

/// Query files for a model with `d1` reward features: `phi.csv` (answers), `pairs.csv`,
/// `cands.csv` (candidates in groups, with penalties).
fn write_queries(dir: &Path, prefix: &str, d1: usize, seed: u64) {
    let value = |r: usize, j: usize| ((((r * 31 + j * 17) as u64 ^ seed) % 23) as f64 - 11.0) / 7.0;
    let cols = |p: &str| (1..=d1).map(|j| format!("{p}{j}")).collect::<Vec<_>>();
    let row = |r: usize| {
        (0..d1)
            .map(|j| format!("{:?}", value(r, j)))
            .collect::<Vec<_>>()
    };
    let mut phi = cols("phi").join(",") + "\n";
    for r in 0..12 {
        phi += &(row(r).join(",") + "\n");
    }
    let mut pairs = [cols("phi0_"), cols("phi1_")].concat().join(",") + "\n";
    for r in 0..12 {
        pairs += &([row(r), row(r + 40)].concat().join(",") + "\n");
    }
    let mut cands = ["group".to_string(), "penalty".to_string()]
        .into_iter()
        .chain(cols("phi"))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for r in 0..30 {
        let penalty = format!("{:?}", (r % 5) as f64 * 0.01);
        cands += &([(r / 6).to_string(), penalty].into_iter().chain(row(r)))
            .collect::<Vec<_>>()
            .join(",");
        cands += "\n";
    }
    std::fs::write(dir.join(format!("{prefix}.phi.csv")), phi).unwrap();
    std::fs::write(dir.join(format!("{prefix}.pairs.csv")), pairs).unwrap();
    std::fs::write(dir.join(format!("{prefix}.cands.csv")), cands).unwrap();
}

fn report(out: &mut String, label: &str, params: &Params, r: &hetreward::fit::FitReport) {
    writeln!(
        out,
        "{label}: iterations {} total {} starts {} {:?} grad {:?} nll {:?}\n  theta {}\n  gamma {}",
        r.iterations,
        r.total_iterations,
        r.starts,
        r.termination,
        r.grad_norm,
        r.neg_loglik,
        floats(&params.theta),
        floats(&params.gamma)
    )
    .unwrap();
}

fn distributed(out: &mut String, label: &str, data: &Dataset, variant: NewtonVariant, init: Init) {
    let options = FitOptions {
        tol: 1e-12,
        init,
        ..FitOptions::default()
    };
    let mut oracle = LocalOracle::new(shards(data, 3));
    let fit =
        fit_distributed(&mut oracle, &options, variant, &FitControl::default(), None).unwrap();
    report(out, label, &fit.fit.params, &fit.fit.report);
    writeln!(out, "  {:?} {:?}", fit.variant, fit.rounds).unwrap();
    for kind in CovarianceKind::ALL {
        if kind == CovarianceKind::Cluster && data.cluster().is_none() {
            continue;
        }
        let m = fit.model(kind).unwrap();
        writeln!(
            out,
            "  {} se {} | {}",
            kind.name(),
            floats(m.theta_se()),
            floats(m.gamma_se())
        )
        .unwrap();
    }
}

fn in_memory(
    out: &mut String,
    label: &str,
    data: &Dataset,
    options: &FitOptions,
    newton: NewtonVariant,
) {
    let (fit, d) = fit_with(data, options, &Tuning { newton }, &FitControl::default()).unwrap();
    report(out, label, &fit.params, &fit.report);
    let c = d.cg;
    writeln!(
        out,
        "  {:?} cg steps {} its {} passes {} fisher {} builds {}",
        d.newton,
        c.newton_steps,
        c.cg_iterations,
        c.passes,
        c.fisher_steps,
        c.preconditioner_builds
    )
    .unwrap();
}

#[test]
#[ignore = "run by scripts/golden-diff.sh"]
fn golden_dump() {
    let Ok(dir) = std::env::var("HETREWARD_GOLDEN_DIR") else {
        panic!("set HETREWARD_GOLDEN_DIR");
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();

    // Files for the CLI. small: the paper's design with annotator clusters (dense Newton,
    // every covariance kind, profile); paper{s}: the calibrated-coverage seeds at n = 200;
    // hd{s}: the high-dimensional coverage design (d1 / n = 0.06); cg: above the dense limit
    // (Newton-CG, batched refits).
    let small = with_clusters(&paper_simulation(300, ActionDesign::Uniform, 3), |i| {
        (i % 23) as i64
    });
    write_training_csv(&dir.join("small.csv"), &small);
    write_queries(dir, "small", small.d1(), 1);
    for seed in 0..4 {
        let d = paper_simulation(200, ActionDesign::Uniform, seed);
        write_training_csv(&dir.join(format!("paper{seed}.csv")), &d);
    }
    write_queries(dir, "paper", 3, 2);
    for seed in 0..2 {
        let (d, _) = high_dimensional(1000, 60, 4, seed);
        write_training_csv(&dir.join(format!("hd{seed}.csv")), &d);
    }
    write_queries(dir, "hd", 60, 3);
    let (cg, _) = high_dimensional(3000, 300, 3, 5);
    write_training_csv(&dir.join("cg.csv"), &cg);
    write_queries(dir, "cg", 300, 4);

    let mut out = String::new();
    // The distributed driver: dense and CG, from the homogeneous start and an explicit one.
    let paper = with_clusters(&paper_simulation(2000, ActionDesign::Uniform, 11), |i| {
        ((i * 7919) % 97) as i64
    });
    let theta: Vec<f64> = (0..64).map(|j| ((j as f64) * 0.61).sin() * 0.25).collect();
    let medium = with_clusters(
        &one_hot_groups(6000, &theta, &[0.6, -0.4, 0.9, -0.3, 0.5], 17),
        |i| ((i * 104_729) % 400) as i64,
    );
    let explicit = |d: &Dataset| {
        Init::Explicit(Params {
            theta: (0..d.d1())
                .map(|j| 0.1 * j as f64 / d.d1() as f64)
                .collect(),
            gamma: vec![0.05; d.d2()],
        })
    };
    for (name, data) in [("paper", &paper), ("medium", &medium)] {
        for variant in [NewtonVariant::Dense, NewtonVariant::Cg] {
            distributed(
                &mut out,
                &format!("distributed {name} {variant:?} default"),
                data,
                variant,
                Init::Default,
            );
            distributed(
                &mut out,
                &format!("distributed {name} {variant:?} explicit"),
                data,
                variant,
                explicit(data),
            );
        }
    }
    distributed(
        &mut out,
        "distributed cg auto",
        &cg,
        NewtonVariant::Auto,
        Init::Default,
    );

    // The in-memory fit: each Newton variant forced, random and explicit starts, agd.
    for (name, data) in [("paper", &paper), ("medium", &medium), ("cg", &cg)] {
        for newton in [NewtonVariant::Dense, NewtonVariant::Cg] {
            if name == "cg" && newton == NewtonVariant::Dense {
                continue;
            }
            in_memory(
                &mut out,
                &format!("fit {name} {newton:?}"),
                data,
                &FitOptions::default(),
                newton,
            );
            let random = FitOptions {
                init: Init::Random,
                seed: 9,
                restarts: 1,
                ..FitOptions::default()
            };
            in_memory(
                &mut out,
                &format!("fit {name} {newton:?} random"),
                data,
                &random,
                newton,
            );
            let exp = FitOptions {
                init: explicit(data),
                ..FitOptions::default()
            };
            in_memory(
                &mut out,
                &format!("fit {name} {newton:?} explicit"),
                data,
                &exp,
                newton,
            );
        }
        let agd = FitOptions {
            solver: SolverKind::Agd,
            max_iter: Some(300),
            ..FitOptions::default()
        };
        in_memory(
            &mut out,
            &format!("fit {name} agd"),
            data,
            &agd,
            NewtonVariant::Auto,
        );
    }

    // Profile-likelihood intervals of every coefficient.
    for (name, data) in [
        ("small", &small),
        ("paper200", &paper_simulation(200, ActionDesign::Uniform, 0)),
    ] {
        let (fit, _) = fit_with(
            data,
            &FitOptions::default(),
            &Tuning::default(),
            &FitControl::default(),
        )
        .unwrap();
        for c in 0..data.n_params() {
            for alpha in [0.05, 0.1] {
                let p = coefficient_interval(data, &fit.params, c, alpha).unwrap();
                writeln!(
                    out,
                    "profile {name} {c} {alpha}: {:?} {:?} {:?} fits {}",
                    p.estimate, p.lower, p.upper, p.fits
                )
                .unwrap();
            }
        }
    }
    std::fs::write(dir.join("api.txt"), out).unwrap();
}
