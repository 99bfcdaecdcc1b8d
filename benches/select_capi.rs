//! The C API's pBoN call as users make it, against numpy in the same run (BENCHMARKS.md,
//! "pBoN through the C API").
//!
//! ```text
//! cargo bench --bench select_capi -- [--n N] [--d1 D1] [--d2 D2] [--prompts P] [--reps R]
//!     [--draws B] [--threads T] [--rounds K] [--no-numpy] [--candidates spread,close]
//!     [--closeness S] [--real DIR --real-model FILE]
//! ```
//!
//! Fits a Wald model on `sim::high_dimensional` data (default: the paper's shape, n = 33,845,
//! d1 = 2048, d2 = 38; 2 threads), and makes a percentile-bootstrap model of it with `B`
//! (default 400) draws `theta_hat + L z_b`, `z_b ~ N(0, I)` (the Wald posterior: the timing
//! does not depend on how the draws were made, only on B and d1). Both go through the C API
//! (`hetreward_model_load_buffer`). Each prompt's 128 `f32` candidates are drawn in one of
//! these regimes (`--candidates`, a comma-separated list, each run in turn):
//!
//! * `spread`: every candidate drawn as the training z are (`N(0, I)`): rewards many SEs apart;
//! * `close`: one point `c ~ N(0, I)` per prompt and the candidates `c + S N(0, I)` (`S` =
//!   `--closeness`, default 0.05): N answers to one prompt, rewards within a few SEs.
//!
//! and `--real DIR --real-model FILE` adds the real regime: the MT-Bench reward model (FILE, as
//! `examples/real-data` exports it) with its Wald intervals, and each question's six answers'
//! features (DIR from `bench/mtbench_features.py`) repeated to 128 candidates (candidate k is
//! answer k mod 6). Each prompt's candidates are selected by `hetreward_model_select` on the
//! calling thread (inside a rayon pool of T threads when `--threads T > 1`), interleaved call
//! by call:
//!
//! * Wald, `out_candidates` given (every SE) and NULL (the pruned search of
//!   `select::select_best`);
//! * bootstrap (synthetic regimes), `out_candidates` NULL (the pruned search: a screen of every
//!   candidate on the first draws, then full intervals, each a blocked GEMM over candidates x
//!   draws, for the few that can win; its choice and the chosen figures' bits are checked
//!   against `select::select`), and the row-by-row path before issue 23 (each candidate's `B`
//!   dot products, `Calibration::theta_projections`, then its quantile), recreated here.
//!
//! The first pruned Wald call on a model is timed apart (it is the only one that builds
//! anything lazily: the bootstrap's widened draws). Then, each round, `bench/select_numpy.py`
//! times the same prompts in numpy with T BLAS threads (all-SE Wald: the fastest of BLAS dtrmm,
//! a plain f64 GEMM and f32 strmm; bootstrap quantiles after an f64 and an f32 GEMM) and the
//! ratios are printed per round and as medians over the rounds. Every way must choose the same
//! index on every prompt (checked; numpy's f32 products are reported, not checked). A
//! measurement tool, not a test.

use hetreward::calibrate::{Calibration, IntervalMethod, Parts};
use hetreward::covariance::CovarianceKind;
use hetreward::fit::{FitControl, FitOptions};
use hetreward::internals::ffi::{
    hetreward_candidate, hetreward_model, hetreward_model_free, hetreward_model_load_buffer,
    hetreward_model_select, hetreward_reward, hetreward_status, HETREWARD_POLICY_PBON,
};
use hetreward::io::model_file;
use hetreward::select::{select, select_best, Policy};
use hetreward::sim::{high_dimensional, rng};
use hetreward::RewardModel;
use nalgebra::DMatrix;
use rand::Rng;
use rand_distr::StandardNormal;
use std::time::Instant;

const CANDIDATES: usize = 128;
const ALPHA: f64 = 0.05;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn load(model: &RewardModel) -> *mut hetreward_model {
    let bytes = model_file::to_bytes(model);
    let mut handle: *mut hetreward_model = std::ptr::null_mut();
    let s = hetreward_model_load_buffer(bytes.as_ptr(), bytes.len(), &mut handle);
    assert_eq!(s, hetreward_status::HETREWARD_OK);
    handle
}

/// One `hetreward_model_select` of the prompt's candidates: seconds and the index.
fn call(handle: *mut hetreward_model, phi: &[f32], out: *mut hetreward_candidate) -> (f64, usize) {
    let mut index = usize::MAX;
    let t = Instant::now();
    let s = hetreward_model_select(
        handle,
        phi.as_ptr(),
        CANDIDATES,
        phi.len() / CANDIDATES,
        std::ptr::null(),
        ALPHA,
        HETREWARD_POLICY_PBON,
        &mut index,
        out,
    );
    let dt = t.elapsed().as_secs_f64();
    assert_eq!(s, hetreward_status::HETREWARD_OK);
    (dt, index)
}

/// The percentile-bootstrap pBoN before issue 23: per candidate, `B` dot products with the
/// draws (`theta_projections`), sorted, the `alpha/2` quantile (type 7) and the draws' SD.
fn row_by_row(model: &RewardModel, phi: &[f32]) -> (f64, usize) {
    use rayon::prelude::*;
    let t = Instant::now();
    let d1 = model.d1();
    let rows: Vec<f64> = phi.iter().map(|&x| f64::from(x)).collect();
    let one = |k: usize| {
        let mut v = model
            .calibration()
            .theta_projections(&rows[k * d1..(k + 1) * d1]);
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let sd = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
        v.sort_unstable_by(f64::total_cmp);
        let h = (v.len() - 1) as f64 * ALPHA / 2.0;
        let lo = h.floor() as usize;
        (v[lo] + (h - lo as f64) * (v[lo + 1] - v[lo]), sd)
    };
    let lower: Vec<(f64, f64)> = if rayon::current_thread_index().is_some() {
        (0..CANDIDATES).into_par_iter().map(one).collect()
    } else {
        (0..CANDIDATES).map(one).collect()
    };
    let mut index = 0;
    for k in 1..CANDIDATES {
        if lower[k].0 > lower[index].0 {
            index = k;
        }
    }
    (t.elapsed().as_secs_f64(), index)
}

fn write(path: &std::path::Path, bytes: impl Iterator<Item = u8>) {
    std::fs::write(path, bytes.collect::<Vec<u8>>()).unwrap();
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// What every regime shares.
struct Settings {
    prompts: usize,
    reps: usize,
    threads: usize,
    rounds: usize,
    numpy: bool,
}

/// A model for the runs: its handle through the C API and, for the synthetic regimes, the
/// bootstrap model's.
struct Models<'a> {
    wald: &'a RewardModel,
    boot: Option<&'a RewardModel>,
    theta_draws: &'a [f32],
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let value = |f: &str, d: usize| text(f).and_then(|v| v.parse().ok()).unwrap_or(d);
    let (n, d1, d2) = (value("--n", 33_845), value("--d1", 2048), value("--d2", 38));
    let settings = Settings {
        prompts: value("--prompts", 10),
        reps: value("--reps", 5),
        threads: value("--threads", 1),
        rounds: value("--rounds", 3),
        numpy: !args.iter().any(|a| a == "--no-numpy"),
    };
    let b = value("--draws", 400);
    let closeness: f32 = text("--closeness")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.05);
    let regimes = text("--candidates").unwrap_or_else(|| "spread,close".into());
    let regimes: Vec<&str> = regimes.split(',').filter(|r| !r.is_empty()).collect();
    for r in &regimes {
        assert!(
            ["spread", "close"].contains(r),
            "--candidates: spread or close, not {r}"
        );
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "# CPU: {cpu}; scoring kernel: {}",
        if std::arch::is_x86_feature_detected!("avx512f") {
            "AVX-512 if compiled in (rustc >= 1.89)"
        } else {
            "AVX2"
        }
    );
    if !regimes.is_empty() {
        let t = Instant::now();
        let (data, _) = high_dimensional(n, d1, d2, 11);
        let options = FitOptions {
            threads: 2,
            ..FitOptions::default()
        };
        let wald = RewardModel::estimate(
            &data,
            &options,
            CovarianceKind::Expected,
            &FitControl::default(),
        )
        .expect("fit");
        println!(
            "# pBoN through the C API: n = {n}, d1 = {d1}, d2 = {d2}, B = {b}, {} thread(s); \
             fitted in {:.1} s",
            settings.threads,
            t.elapsed().as_secs_f64()
        );
        let mut r = rng(5);
        let l = wald.theta_cov_factor().clone();
        let z = DMatrix::<f64>::from_fn(d1, b, |_, _| r.sample(StandardNormal));
        let lz = hetreward::internals::linalg::matmul(&l, &z);
        let theta_draws: Vec<f32> = (0..b)
            .flat_map(|j| (0..d1).map(move |i| (j, i)))
            .map(|(j, i)| (wald.theta()[i] + lz[(i, j)]) as f32)
            .collect();
        let cal = Calibration::from_parts(
            Parts {
                requested: IntervalMethod::Bootstrap,
                method: IntervalMethod::Bootstrap,
                reps: b,
                seed: 1,
                diverged: 0,
                figures: [1.0; 3],
                gamma_bias: vec![0.0; d2],
                theta_draws: theta_draws.clone(),
                // Every stored coefficient's draws vary (a reader refuses draws all equal).
                gamma_draws: (0..b * d2).map(|i| 0.01 * ((i / d2) % 2) as f32).collect(),
                unbounded: Vec::new(),
            },
            d1,
            d2,
        )
        .expect("calibration");
        let boot = wald.clone().with_calibration(cal).expect("bootstrap model");
        let models = Models {
            wald: &wald,
            boot: Some(&boot),
            theta_draws: &theta_draws,
        };
        for regime in regimes {
            let phis: Vec<Vec<f32>> = (0..settings.prompts)
                .map(|_| {
                    let center: Vec<f32> = (0..d1).map(|_| r.sample(StandardNormal)).collect();
                    (0..CANDIDATES * d1)
                        .map(|i| {
                            let e: f32 = r.sample(StandardNormal);
                            match regime {
                                "close" => center[i % d1] + closeness * e,
                                _ => e,
                            }
                        })
                        .collect()
                })
                .collect();
            let label = match regime {
                "close" => format!("close: c + {closeness} N(0, I), c ~ N(0, I) per prompt"),
                _ => "spread: N(0, I), as the training z".to_string(),
            };
            run_regime(&label, &models, &phis, &settings);
        }
    }
    if let (Some(dir), Some(file)) = (text("--real"), text("--real-model")) {
        let dir = std::path::Path::new(&dir);
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("meta.json")).expect("meta.json"))
                .expect("meta.json");
        let count = |k: &str| meta[k].as_u64().expect("meta.json field") as usize;
        let (d1, questions, answers) = (count("d1"), count("questions"), count("answers"));
        let raw = std::fs::read(dir.join("phi.f32")).expect("phi.f32");
        let feats: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(feats.len(), questions * answers * d1, "phi.f32's length");
        let shipped = model_file::load(std::path::Path::new(&file)).expect("the real model");
        assert_eq!(shipped.d1(), d1, "the features' d1 is the model's");
        let wald = shipped
            .clone()
            .with_calibration(Calibration::wald(IntervalMethod::Wald))
            .expect("Wald intervals");
        let phis: Vec<Vec<f32>> = feats
            .chunks_exact(answers * d1)
            .map(|q| {
                (0..CANDIDATES)
                    .flat_map(|k| {
                        q[(k % answers) * d1..(k % answers + 1) * d1]
                            .iter()
                            .copied()
                    })
                    .collect()
            })
            .collect();
        println!(
            "# real: {file} (d1 = {d1}, shipped with {:?} intervals; Wald here), {questions} \
             questions x {answers} answers",
            shipped.calibration().method()
        );
        let models = Models {
            wald: &wald,
            boot: None,
            theta_draws: &[],
        };
        let label = format!("real: MT-Bench, {answers} answers per question repeated to 128");
        run_regime(&label, &models, &phis, &settings);
    }
}

/// Times the ways of selecting among each prompt's candidates (`phis`), round by round, with
/// numpy in the same round, and prints the figures and their ratios.
fn run_regime(label: &str, models: &Models, phis: &[Vec<f32>], s: &Settings) {
    let wald = models.wald;
    let d1 = wald.d1();
    let prompts = phis.len();
    println!("\n## candidates {label}; {prompts} prompts of {CANDIDATES}");
    let h_wald = load(wald);
    let h_boot = models.boot.map(load);
    // The first pruned call on a freshly loaded model (anything built lazily is in it).
    let (first, _) = call(h_wald, &phis[0], std::ptr::null_mut());
    let (second, _) = call(h_wald, &phis[0], std::ptr::null_mut());
    println!(
        "  first pruned Wald call on a loaded model {:.3} ms, the second {:.3} ms",
        1e3 * first,
        1e3 * second
    );
    let dir = std::env::temp_dir().join(format!("select_capi_{}", std::process::id()));
    if s.numpy {
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir.join("phi.f32"), phis.iter().flat_map(|p| f32_bytes(p)));
        write(
            &dir.join("draws.f32"),
            f32_bytes(models.theta_draws).into_iter(),
        );
        write(
            &dir.join("theta.f64"),
            wald.theta().iter().flat_map(|x| x.to_le_bytes()),
        );
        // Row-major L.
        write(
            &dir.join("L.f64"),
            wald.theta_cov_factor()
                .transpose()
                .iter()
                .flat_map(|x| x.to_le_bytes()),
        );
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(s.threads)
        .build()
        .unwrap();
    let se_computed: usize = phis
        .iter()
        .map(|p| {
            select_best(wald, p, None, ALPHA, Policy::Pbon)
                .unwrap()
                .se_computed
        })
        .sum();
    // The bootstrap's pruned search: the choice and the chosen candidate's figures (bits)
    // of the full computation, and how many intervals it computed.
    let boot_computed: usize = models.boot.map_or(0, |boot| {
        phis.iter()
            .enumerate()
            .map(|(g, p)| {
                let best = select_best(boot, p, None, ALPHA, Policy::Pbon).unwrap();
                let all = select(boot, p, None, ALPHA, Policy::Pbon).unwrap();
                let c = all.candidates[all.index];
                assert_eq!(
                    best.index, all.index,
                    "prompt {g}: the pruned bootstrap choice"
                );
                let bits = |c: &hetreward::select::Candidate| {
                    let i = c.interval;
                    [i.reward, i.se, i.lower, i.upper, c.score].map(f64::to_bits)
                };
                assert_eq!(
                    bits(&best.candidate),
                    bits(&c),
                    "prompt {g}: the bound's bits"
                );
                best.se_computed
            })
            .sum()
    });
    let names = [
        "Wald, every SE (out_candidates given)",
        "Wald, pruned (out_candidates NULL)",
        "bootstrap, pruned (out_candidates NULL)",
        "bootstrap, row by row (before)",
    ];
    let ways = if models.boot.is_some() { 4 } else { 2 };
    // Raw handles are not Send: the pool's closure carries their addresses.
    let (a_wald, a_boot) = (h_wald as usize, h_boot.map_or(0, |h| h as usize));
    let mut per_round: Vec<[f64; 4]> = Vec::new();
    let mut numpy_rounds: Vec<[f64; 3]> = Vec::new();
    for round in 0..s.rounds {
        let body = || {
            let (h_wald, h_boot) = (
                a_wald as *mut hetreward_model,
                a_boot as *mut hetreward_model,
            );
            let mut figures = vec![hetreward_candidate_zero(); CANDIDATES];
            let mut times: [Vec<f64>; 4] = Default::default();
            let mut picks = vec![[0usize; 4]; prompts];
            for (g, phi) in phis.iter().enumerate() {
                for _ in 0..s.reps {
                    let mut all = vec![
                        call(h_wald, phi, figures.as_mut_ptr()),
                        call(h_wald, phi, std::ptr::null_mut()),
                    ];
                    if let Some(boot) = models.boot {
                        all.push(call(h_boot, phi, std::ptr::null_mut()));
                        all.push(row_by_row(boot, phi));
                    }
                    for (w, (dt, i)) in all.into_iter().enumerate() {
                        times[w].push(dt);
                        picks[g][w] = i;
                    }
                }
            }
            (times, picks)
        };
        let (times, picks) = if s.threads > 1 {
            pool.install(body)
        } else {
            body()
        };
        for (g, p) in picks.iter().enumerate() {
            assert_eq!(
                p[0], p[1],
                "prompt {g}: the pruned call chose another index"
            );
            assert_eq!(
                p[2], p[3],
                "prompt {g}: the pruned path chose another index"
            );
        }
        let med = times.map(|t| if t.is_empty() { f64::NAN } else { median(t) });
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "\nround {} (load {}), median of {} calls each:",
            round + 1,
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            prompts * s.reps
        );
        for (name, m) in names.iter().zip(med).take(ways) {
            println!("  {name:44} {:8.3} ms", 1e3 * m);
        }
        per_round.push(med);
        if s.numpy {
            let out = std::process::Command::new("python3")
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/bench/select_numpy.py"
                ))
                .arg(&dir)
                .args(["--d1", &d1.to_string(), "--n", &CANDIDATES.to_string()])
                .args(["--reps", &(models.theta_draws.len() / d1).to_string()])
                .args(["--threads", &s.threads.to_string()])
                .args(["--calls", &s.reps.to_string()])
                .output()
                .expect("python3");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("numpy json");
            let ms = |k: &str| v[k].as_f64().unwrap_or(f64::NAN) / 1e3;
            let index = |k: &str| -> Vec<usize> {
                v[k].as_array()
                    .map(|a| a.iter().map(|i| i.as_u64().unwrap() as usize).collect())
                    .unwrap_or_default()
            };
            let kernel = v["wald_kernel"].as_str().unwrap_or("?");
            let same_wald = index("wald_index")
                .iter()
                .zip(&picks)
                .filter(|(a, p)| **a == p[1])
                .count();
            if kernel != "wald_strmm" {
                assert_eq!(same_wald, prompts, "numpy's f64 Wald choices");
            }
            let np = [ms("wald_ms"), ms("draws64_ms"), ms("draws32_ms")];
            println!(
                "  numpy all-SE Wald ({kernel}, {same_wald} of {prompts} same choice) {:8.3} ms \
                 -> pruned {:.1}x, every SE {:.1}x",
                1e3 * np[0],
                np[0] / med[1],
                np[0] / med[0]
            );
            if models.boot.is_some() {
                for (g, p) in picks.iter().enumerate() {
                    assert_eq!(
                        index("draws64_index")[g],
                        p[2],
                        "prompt {g}: numpy's choice"
                    );
                }
                let same32 = index("draws32_index")
                    .iter()
                    .zip(&picks)
                    .filter(|(a, p)| **a == p[2])
                    .count();
                println!(
                    "  numpy f64 GEMM + np.quantile               {:8.3} ms -> pruned {:.1}x, row by row {:.1}x",
                    1e3 * np[1],
                    np[1] / med[2],
                    np[1] / med[3]
                );
                println!(
                    "  numpy f32 GEMM + np.quantile               {:8.3} ms -> pruned {:.1}x ({same32} of {prompts} same choice)",
                    1e3 * np[2],
                    np[2] / med[2]
                );
            }
            numpy_rounds.push(np);
        }
    }
    hetreward_model_free(h_wald);
    if let Some(h) = h_boot {
        hetreward_model_free(h);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let col = |v: &[[f64; 4]], i: usize| median(v.iter().map(|r| r[i]).collect());
    println!("\nmedians over {} rounds ({label}):", s.rounds);
    println!(
        "  Wald pruned {:.3} ms, every SE {:.3} ms",
        1e3 * col(&per_round, 1),
        1e3 * col(&per_round, 0),
    );
    if models.boot.is_some() {
        println!(
            "  bootstrap pruned {:.3} ms, row by row {:.3} ms ({:.1}x)",
            1e3 * col(&per_round, 2),
            1e3 * col(&per_round, 3),
            col(&per_round, 3) / col(&per_round, 2)
        );
    }
    if s.numpy {
        let ratio = |np: usize, ours: usize| {
            median(
                numpy_rounds
                    .iter()
                    .zip(&per_round)
                    .map(|(a, b)| a[np] / b[ours])
                    .collect(),
            )
        };
        println!(
            "  vs numpy (median of per-round ratios): Wald pruned {:.1}x all-SE",
            ratio(0, 1)
        );
        if models.boot.is_some() {
            println!(
                "  bootstrap pruned {:.1}x numpy f64, {:.1}x numpy f32; row by row {:.1}x numpy f64",
                ratio(1, 2),
                ratio(2, 2),
                ratio(1, 3)
            );
        }
    }
    println!(
        "  SEs computed by the pruned search: {:.1} of {CANDIDATES} per prompt (mean); bootstrap \
         intervals computed: {:.1}",
        se_computed as f64 / prompts as f64,
        boot_computed as f64 / prompts as f64
    );
}

fn hetreward_candidate_zero() -> hetreward_candidate {
    hetreward_candidate {
        reward: hetreward_reward {
            reward: 0.0,
            se: 0.0,
            lower: 0.0,
            upper: 0.0,
        },
        penalty: 0.0,
        score: 0.0,
    }
}
