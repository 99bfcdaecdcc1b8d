//! Paper-scale benchmark harness (issue 5; results in BENCHMARKS.md).
//!
//! ```text
//! cargo bench --bench paper_scale -- [--smoke] [--only LIST] [--n N] [--d1 D] [--d2 D]
//!     [--threads T] [--reps R] [--precision f32|f64] [--prompts P] [--candidates C]
//!     [--seed S] [--json PATH] [--export DIR] [--write-training PATH] [--file PATH]
//! ```
//!
//! Workloads (`--only`, comma-separated; default all but `scaling` and `naive`):
//!
//! * `floors`: the machine's floors measured in this run — GEMM rate (matrixmultiply through
//!   the crate's tiled parallel GEMM, f64 and f32), the time of one read-only pass over z, and
//!   the library's actual passes (gradient, Hessian-vector product).
//! * `fit`: `RewardModel::estimate` with the default solver and covariance (workload a), its
//!   phases, counters and peak memory (e); SE stability against a 1000x tighter tolerance.
//! * `agd`: the paper's Algorithm 1 for a fixed number of iterations (b): time per iteration
//!   against two passes over z.
//! * `score`: pBoN of N = 16 and N = 128 candidates single-threaded (c), and all
//!   `prompts x candidates` (d), each with every candidate's SE (`select`) and pruned
//!   (`select_best`).
//! * `precision`: the same data fitted with z stored in f64 and rounded to f32.
//! * `naive`: the dense Newton (full Hessian every iteration, one start) end to end, and one
//!   iteration's kernels of the pre-issue code (128-wide Gram tiles, nalgebra's unblocked
//!   Cholesky and inverse).
//! * `scaling`: fit + covariance for n x {1/4, 1/2, 1, 2} and d1 in {256, ..., 4096} (f).
//! * `gram`: the dense kernels against which the issue's targets are set, on an `n x d1`
//!   matrix (seeded uniform entries): the crate's streamed Gram in f64 (`linalg::gram`, as the
//!   covariance calls it) and f32 (`linalg::gram_f32`, the preconditioner's), faer's
//!   triangular product on the whole materialised matrix (the kernel without the row fill), and
//!   the x86 kernel behind faer forced to its AVX2 path (what an AVX2-only machine runs).
//!   `bench/gram_kernels.py` runs this workload interleaved with numpy's dsyrk.
//! * `memory`: the peak memory of each phase of a fit (information, covariance, model,
//!   solver, preconditioner) over the resident data.
//! * `process` (with `--file PATH`, a training safetensors file): what `hetreward fit FILE
//!   --out M --report R` does, phase by phase in this process — read the file, validate (the
//!   dataset's checks, timed again on the decoded arrays), fit (with Newton-CG's work
//!   counters), covariance (and model assembly), the heterogeneity and leverage diagnostics
//!   (files with cluster ids), write the model file and the JSON report; then the process's
//!   floor on this file: one read of the file, one f64 Gram (the expected information at the
//!   estimate), one f32 Gram of z and, with cluster ids, one f32 product of `n x p` by `p x p`
//!   (the leverage's), each timed alone. `bench/whole_process.py` times the CLI itself against
//!   an OpenBLAS dsyrk of the same z and, given this benchmark, the floor in the same run.
//!
//! `--write-training PATH` writes the generated data as a safetensors training file (z in
//! the storage precision, `--precision f64` for the paper's file) for `process` and the CLI.
//!
//! The data are synthetic, seeded and generated in memory (never written unless `--export`):
//! embedding-like z with a power-law spectrum (`lambda_j ~ 1/j`) in a rotated basis, one-hot
//! annotator covariates (a recruitment channel with an adversarial level, then 4-level
//! variables), psi0 = 1, labels drawn from the model. `--export DIR` writes the data, the fit
//! and the candidates as `.npy` / JSON for `bench/numpy_baseline.py`.
//!
//! This is a measurement tool, not a test: nothing here fails because the machine is slow.

use hetreward::covariance::CovarianceKind;
use hetreward::data::FeatureMatrix;
use hetreward::fit::{FitControl, FitOptions, Init, SolverKind};
use hetreward::internals::fit::{fit_with, NewtonVariant, Tuning};
use hetreward::internals::likelihood::{evaluate, hessian_vector, nll_and_gradient, Curvature};
use hetreward::select::{select, select_best, Policy};
use hetreward::{Dataset, Params, RewardModel};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

// ------------------------------------------------------------------------------------------
// Dense kernels (`gram`)
// ------------------------------------------------------------------------------------------

/// CPU seconds (user + system) of this process, all threads: on a loaded machine, the work
/// a single-threaded kernel did, whatever share of a core it was given.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// `lower(C) += A^T A` for the column-major `n x p` `a`, by the x86 kernel faer calls (crate
/// `private-gemm-x86`) with the instruction set forced: `avx512 = false` is the path an
/// AVX2-only machine takes (faer picks AVX-512 whenever the CPU has it).
fn x86_syrk<T: Copy + 'static>(
    a: &[T],
    n: usize,
    p: usize,
    c: &mut [T],
    avx512: bool,
    threads: usize,
) {
    use private_gemm_x86 as pg;
    let f64_ = std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>();
    let one64 = 1.0f64;
    let one32 = 1.0f32;
    let alpha: *const () = if f64_ {
        (&raw const one64).cast()
    } else {
        (&raw const one32).cast()
    };
    // SAFETY: `a` holds `n * p` and `c` `p * p` elements of `T` (checked), column-major with
    // the strides given; the kernel reads `a` and writes the lower triangle of `c`.
    assert!(a.len() == n * p && c.len() == p * p);
    unsafe {
        pg::gemm(
            if f64_ { pg::DType::F64 } else { pg::DType::F32 },
            pg::IType::U32,
            if avx512 {
                pg::InstrSet::Avx512
            } else {
                pg::InstrSet::Avx256
            },
            p,
            p,
            n,
            c.as_mut_ptr().cast(),
            1,
            p as isize,
            std::ptr::null(),
            std::ptr::null(),
            pg::DstKind::Lower,
            pg::Accum::Add,
            a.as_ptr().cast(),
            n as isize,
            1,
            false,
            std::ptr::null(),
            0,
            a.as_ptr().cast(),
            1,
            n as isize,
            false,
            alpha,
            threads,
        );
    }
}

/// faer's triangular product `lower(C) += A^T A` on the column-major `n x p` `a`, one call
/// per block of `block` rows (`n`: one call on the whole matrix).
fn faer_syrk<T: faer::traits::ComplexField + Copy + 'static>(
    a: &[T],
    n: usize,
    p: usize,
    c: &mut [T],
    one: T,
    block: usize,
) {
    use faer::linalg::matmul::triangular::{self, BlockStructure};
    let a = faer::MatRef::from_column_major_slice(a, n, p);
    for start in (0..n).step_by(block) {
        let b = a.subrows(start, block.min(n - start));
        triangular::matmul(
            faer::MatMut::from_column_major_slice_mut(c, p, p),
            BlockStructure::TriangularLower,
            faer::Accum::Add,
            b.transpose(),
            BlockStructure::Rectangular,
            b,
            BlockStructure::Rectangular,
            one,
            faer::Par::rayon(0),
        );
    }
}

/// The `gram` workload: every kernel once per repetition, interleaved, on the same `n x d1`
/// matrix; medians.
fn gram_workload(cfg: &Config, rep: &mut Report) {
    let (n, p) = (cfg.n, cfg.d1);
    // Row-major (as the crate stores z) and column-major copies, seeded uniform(-0.5, 0.5).
    let mut rows = vec![0.0f64; n * p];
    rows.par_chunks_mut(p).enumerate().for_each(|(i, r)| {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ (i as u64).wrapping_mul(0x9E37_79B9));
        for v in r.iter_mut() {
            *v = rng.random::<f64>() - 0.5;
        }
    });
    let mut cols = vec![0.0f64; n * p];
    cols.par_chunks_mut(n).enumerate().for_each(|(j, c)| {
        for (i, v) in c.iter_mut().enumerate() {
            *v = rows[i * p + j];
        }
    });
    let cols32: Vec<f32> = cols.iter().map(|&v| v as f32).collect();
    let rows = &rows;
    let threads = cfg.threads;
    type Kernel<'a> = (&'static str, Box<dyn Fn() + Sync + 'a>);
    let kernels: Vec<Kernel> = vec![
        (
            "gram_f64",
            Box::new(|| {
                std::hint::black_box(hetreward::internals::linalg::gram(
                    n,
                    p,
                    n as f64,
                    |i, out| out.copy_from_slice(&rows[i * p..(i + 1) * p]),
                ));
            }),
        ),
        (
            "gram_f32",
            Box::new(|| {
                std::hint::black_box(hetreward::internals::linalg::gram_f32(
                    n,
                    p,
                    n as f64,
                    |i, out: &mut [f32]| {
                        for (o, v) in out.iter_mut().zip(&rows[i * p..(i + 1) * p]) {
                            *o = *v as f32;
                        }
                    },
                ));
            }),
        ),
        (
            "faer_syrk_f64",
            Box::new(|| {
                let mut c = vec![0.0f64; p * p];
                faer_syrk(&cols, n, p, &mut c, 1.0, n);
                std::hint::black_box(c);
            }),
        ),
        (
            "faer_syrk_f32",
            Box::new(|| {
                let mut c = vec![0.0f32; p * p];
                faer_syrk(&cols32, n, p, &mut c, 1.0, n);
                std::hint::black_box(c);
            }),
        ),
        (
            "faer_syrk_f64_k512",
            Box::new(|| {
                let mut c = vec![0.0f64; p * p];
                faer_syrk(&cols, n, p, &mut c, 1.0, 512);
                std::hint::black_box(c);
            }),
        ),
        (
            "avx512_syrk_f64",
            Box::new(|| {
                let mut c = vec![0.0f64; p * p];
                x86_syrk(&cols, n, p, &mut c, true, threads);
                std::hint::black_box(c);
            }),
        ),
        (
            "avx2_syrk_f64",
            Box::new(|| {
                let mut c = vec![0.0f64; p * p];
                x86_syrk(&cols, n, p, &mut c, false, threads);
                std::hint::black_box(c);
            }),
        ),
        (
            "avx2_syrk_f32",
            Box::new(|| {
                let mut c = vec![0.0f32; p * p];
                x86_syrk(&cols32, n, p, &mut c, false, threads);
                std::hint::black_box(c);
            }),
        ),
    ];
    let avx512 = std::arch::is_x86_feature_detected!("avx512f");
    // The forced kernels compute what faer does (first rows only: a check, not a timing).
    let m = n.min(1000);
    let head =
        |c: &[f64]| -> Vec<f64> { (0..p).flat_map(|j| c[j * n..j * n + m].to_vec()).collect() };
    let (small, mut want, mut got) = (head(&cols), vec![0.0; p * p], vec![0.0; p * p]);
    faer_syrk(&small, m, p, &mut want, 1.0, m);
    for forced in [false, true].into_iter().filter(|&f| !f || avx512) {
        got.iter_mut().for_each(|v| *v = 0.0);
        x86_syrk(&small, m, p, &mut got, forced, threads);
        let diff = want
            .iter()
            .zip(&got)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!(
            "forced {} kernel against faer's product: max |diff| {diff:.1e}",
            if forced { "AVX-512" } else { "AVX2" }
        );
        assert!(diff < 1e-9, "the forced kernel disagrees with faer");
    }
    let mut times: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let pl = pool(threads);
    for _ in 0..cfg.reps {
        for (name, k) in &kernels {
            if name.starts_with("avx512") && !avx512 {
                continue;
            }
            let (t, cpu) = (Instant::now(), cpu_seconds());
            pl.install(k);
            let entry = times.entry(name).or_default();
            entry.0.push(t.elapsed().as_secs_f64());
            entry.1.push(cpu_seconds() - cpu);
        }
    }
    println!(
        "\n## Dense kernels: n = {n}, p = {p}, {threads} threads, medians of {} (interleaved); wall and CPU seconds",
        cfg.reps
    );
    let mut out = serde_json::Map::new();
    for (name, (wall, cpu)) in times {
        let (m, c) = (median(wall.clone()), median(cpu.clone()));
        println!("{name:<20} {m:8.3} s  cpu {c:8.3} s");
        out.insert(
            name.to_string(),
            json!({"median_s": m, "cpu_s": c, "runs": wall, "cpu_runs": cpu}),
        );
    }
    rep.put("gram", Value::Object(out));
}

// ------------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Config {
    smoke: bool,
    only: Vec<String>,
    n: usize,
    d1: usize,
    d2: usize,
    threads: usize,
    reps: usize,
    f32: bool,
    prompts: usize,
    candidates: usize,
    seed: u64,
    json: Option<String>,
    export: Option<String>,
    write_training: Option<String>,
    file: Option<String>,
    trace: bool,
}

const HELP: &str = "paper_scale: hetreward's benchmark harness (see BENCHMARKS.md)
  --smoke            tiny configuration (CI): n=3000, d1=64, d2=8, 12 prompts x 32 candidates
  --only LIST        workloads: floors,fit,agd,score,precision,naive,scaling,memory,gram
                     (default: floors,fit,agd,score,precision)
  --n N --d1 D --d2 D   problem size (default 33845, 2048, 38: the paper's)
  --threads T        worker threads (default 2)
  --reps R           repetitions of each timed fit (default 3); medians are reported
  --precision P      storage of z: f32 (default) or f64
  --prompts P --candidates C   scoring workload (default 805 x 128)
  --seed S           data seed (default 1)
  --json PATH        also write every figure as JSON
  --export DIR       write data, fit and candidates for bench/numpy_baseline.py
  --write-training PATH   write the data as a safetensors training file (z in --precision)
  --file PATH        training file of the `process` workload (the CLI's fit, phase by phase)
  --trace            `process`: print every solver iteration's start, NLL and gradient norm
  --glibc-default-malloc   keep glibc's adaptive mmap threshold (default: pinned at 1 MiB)";

fn parse_args() -> Config {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut c = Config {
        smoke: false,
        only: vec![],
        n: 33_845,
        d1: 2048,
        d2: 38,
        threads: 2,
        reps: 3,
        f32: true,
        prompts: 805,
        candidates: 128,
        seed: 1,
        json: None,
        export: None,
        write_training: None,
        file: None,
        trace: false,
    };
    let mut i = 0;
    let val = |i: usize| -> String {
        args.get(i + 1).cloned().unwrap_or_else(|| {
            eprintln!("missing value after {}\n{HELP}", args[i]);
            std::process::exit(2)
        })
    };
    let num = |s: String| -> usize {
        s.parse().unwrap_or_else(|_| {
            eprintln!("not a number: {s}\n{HELP}");
            std::process::exit(2)
        })
    };
    while i < args.len() {
        match args[i].as_str() {
            "--smoke" => c.smoke = true,
            "--only" => {
                c.only = val(i).split(',').map(str::to_string).collect();
                i += 1
            }
            "--n" => {
                c.n = num(val(i));
                i += 1
            }
            "--d1" => {
                c.d1 = num(val(i));
                i += 1
            }
            "--d2" => {
                c.d2 = num(val(i));
                i += 1
            }
            "--threads" => {
                c.threads = num(val(i));
                i += 1
            }
            "--reps" => {
                c.reps = num(val(i)).max(1);
                i += 1
            }
            "--precision" => {
                c.f32 = match val(i).as_str() {
                    "f32" => true,
                    "f64" => false,
                    other => {
                        eprintln!("--precision must be f32 or f64, got {other}");
                        std::process::exit(2)
                    }
                };
                i += 1
            }
            "--prompts" => {
                c.prompts = num(val(i));
                i += 1
            }
            "--candidates" => {
                c.candidates = num(val(i));
                i += 1
            }
            "--seed" => {
                c.seed = num(val(i)) as u64;
                i += 1
            }
            "--json" => {
                c.json = Some(val(i));
                i += 1
            }
            "--export" => {
                c.export = Some(val(i));
                i += 1
            }
            "--write-training" => {
                c.write_training = Some(val(i));
                i += 1
            }
            "--file" => {
                c.file = Some(val(i));
                i += 1
            }
            "--trace" => c.trace = true,
            "--bench" | "--glibc-default-malloc" => {} // cargo bench passes --bench through
            "--help" | "-h" => {
                println!("{HELP}");
                std::process::exit(0)
            }
            other => {
                eprintln!("unknown argument {other}\n{HELP}");
                std::process::exit(2)
            }
        }
        i += 1;
    }
    if c.smoke {
        c.n = 3000;
        c.d1 = 64;
        c.d2 = 8;
        c.reps = 1;
        c.prompts = 12;
        c.candidates = 32;
    }
    if c.only.is_empty() {
        c.only = ["floors", "fit", "agd", "score", "precision"]
            .map(str::to_string)
            .to_vec();
    }
    c
}

// ------------------------------------------------------------------------------------------
// Measurement helpers
// ------------------------------------------------------------------------------------------

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len();
    if m % 2 == 1 {
        v[m / 2]
    } else {
        0.5 * (v[m / 2 - 1] + v[m / 2])
    }
}

/// Least seconds of `reps` runs of `f`: for floors, which are best cases by definition.
fn time_min(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Median seconds of `reps` runs of `f`.
fn time_median(reps: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// A field of /proc/self/status in bytes (VmRSS, VmHWM); 0 where unavailable.
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Resets the peak-RSS mark (Linux >= 4.0: writing 5 to clear_refs); false if unsupported.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Collected figures, printed as they come and written as JSON at the end.
struct Report {
    out: BTreeMap<String, Value>,
}

impl Report {
    fn put(&mut self, key: &str, v: Value) {
        self.out.insert(key.to_string(), v);
    }
}

// ------------------------------------------------------------------------------------------
// Synthetic paper-scale data
// ------------------------------------------------------------------------------------------

/// The generating model: spectrum, rotation, true parameters, annotator profiles.
struct World {
    d1: usize,
    d2: usize,
    /// sqrt of the feature covariance's eigenvalues (lambda_j ~ 1/j, sum = 1).
    sqrt_lambda: Vec<f64>,
    /// Two Householder vectors: the basis is H1 H2 (a rotation of the coordinate axes).
    u1: Vec<f64>,
    u2: Vec<f64>,
    theta: Vec<f64>,
    gamma: Vec<f64>,
    /// Active psi columns of each annotator.
    annotators: Vec<Vec<usize>>,
}

fn reflect(x: &mut [f64], u: &[f64]) {
    let c = 2.0 * hetreward::model::dot(u, x);
    for (a, b) in x.iter_mut().zip(u) {
        *a -= c * b;
    }
}

fn unit_vector(rng: &mut ChaCha8Rng, d: usize) -> Vec<f64> {
    let v: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.iter().map(|x| x / n).collect()
}

impl World {
    fn new(d1: usize, d2: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let raw: Vec<f64> = (0..d1).map(|j| 1.0 / (j as f64 + 1.0)).collect();
        let total: f64 = raw.iter().sum();
        let sqrt_lambda: Vec<f64> = raw.iter().map(|v| (v / total).sqrt()).collect();
        let (u1, u2) = (unit_vector(&mut rng, d1), unit_vector(&mut rng, d1));
        // theta* = H1 H2 (s * t~) with t~ ~ N(0, I): theta* . z has standard deviation 2.
        let tt: Vec<f64> = (0..d1).map(|_| rng.sample(StandardNormal)).collect();
        let var: f64 = tt
            .iter()
            .zip(&sqrt_lambda)
            .map(|(t, l)| (t * l).powi(2))
            .sum();
        let s = 2.0 / var.sqrt();
        let mut theta: Vec<f64> = tt.iter().map(|t| s * t).collect();
        reflect(&mut theta, &u2);
        reflect(&mut theta, &u1);
        // Covariates: a recruitment channel (one column: 8% of annotators adversarial,
        // gamma = -1.6 so sigma ~ -0.6), then 4-level variables (3 columns each, the first level
        // the baseline), the last narrower so the columns add up to d2.
        let mut widths: Vec<usize> = if d2 >= 1 { vec![1] } else { vec![] };
        while widths.iter().sum::<usize>() < d2 {
            let used: usize = widths.iter().sum();
            widths.push((d2 - used).min(3));
        }
        let mut gamma: Vec<f64> = (0..d2).map(|_| rng.random_range(-0.15..0.15)).collect();
        if d2 >= 1 {
            gamma[0] = -1.6;
        }
        let annotators = (0..1000)
            .map(|_| {
                let mut cols = Vec::new();
                let mut base = 0;
                for (v, &w) in widths.iter().enumerate() {
                    let level = if v == 0 {
                        usize::from(rng.random::<f64>() < 0.08)
                    } else {
                        rng.random_range(0..=w)
                    };
                    if level > 0 {
                        cols.push(base + level - 1);
                    }
                    base += w;
                }
                cols
            })
            .collect();
        World {
            d1,
            d2,
            sqrt_lambda,
            u1,
            u2,
            theta,
            gamma,
            annotators,
        }
    }

    /// Writes `H1 H2 (scale * sqrt(lambda) .* xi)` (xi ~ N(0, I)) into `out`.
    fn embed(&self, rng: &mut ChaCha8Rng, scale: f64, out: &mut [f64]) {
        for (v, l) in out.iter_mut().zip(&self.sqrt_lambda) {
            *v = scale * l * rng.sample::<f64, _>(StandardNormal);
        }
        reflect(out, &self.u2);
        reflect(out, &self.u1);
    }

    /// `n` training comparisons; z in f32 or f64 (generated in f64, then stored).
    fn training(&self, n: usize, seed: u64, single: bool) -> Dataset {
        let (d1, d2) = (self.d1, self.d2);
        let mut z64 = vec![0.0f64; if single { 0 } else { n * d1 }];
        let mut z32 = vec![0.0f32; if single { n * d1 } else { 0 }];
        let mut psi = vec![0.0f64; n * d2];
        let mut y = vec![0.0f64; n];
        let mut cluster = vec![0i64; n];
        const CHUNK: usize = 1024;
        // Chunk c draws from its own stream: the data do not depend on the thread count.
        let rows = |c: usize, k: usize, zrow: &mut [f64], psi: &mut [f64]| -> (f64, i64) {
            let mut r = ChaCha8Rng::seed_from_u64(
                seed ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul((c * CHUNK + k) as u64 + 1),
            );
            self.embed(&mut r, 1.0, zrow);
            let who = r.random_range(0..self.annotators.len());
            let mut sigma = 1.0;
            for &col in &self.annotators[who] {
                psi[col] = 1.0;
                sigma += self.gamma[col];
            }
            let t = hetreward::model::dot(&self.theta, zrow);
            let p = hetreward::model::sigmoid(sigma * t);
            (if r.random::<f64>() < p { 1.0 } else { 0.0 }, who as i64)
        };
        let meta = psi
            .par_chunks_mut((CHUNK * d2).max(1))
            .zip(y.par_chunks_mut(CHUNK))
            .zip(cluster.par_chunks_mut(CHUNK));
        if single {
            z32.par_chunks_mut(CHUNK * d1)
                .zip(meta)
                .enumerate()
                .for_each(|(c, (zc, ((pc, yc), cc)))| {
                    let mut zrow = vec![0.0; d1];
                    for k in 0..yc.len() {
                        let (label, who) = rows(c, k, &mut zrow, &mut pc[k * d2..(k + 1) * d2]);
                        yc[k] = label;
                        cc[k] = who;
                        for (o, v) in zc[k * d1..(k + 1) * d1].iter_mut().zip(&zrow) {
                            *o = *v as f32;
                        }
                    }
                });
            Dataset::new_f32(d1, d2, z32, vec![1.0; n], psi, y, Some(cluster)).unwrap()
        } else {
            z64.par_chunks_mut(CHUNK * d1)
                .zip(meta)
                .enumerate()
                .for_each(|(c, (zc, ((pc, yc), cc)))| {
                    for k in 0..yc.len() {
                        let (label, who) = rows(
                            c,
                            k,
                            &mut zc[k * d1..(k + 1) * d1],
                            &mut pc[k * d2..(k + 1) * d2],
                        );
                        yc[k] = label;
                        cc[k] = who;
                    }
                });
            Dataset::new(d1, d2, z64, vec![1.0; n], psi, y, Some(cluster)).unwrap()
        }
    }

    /// Candidate answers' features (f32, as inference engines give them), `prompts x per`
    /// rows: a prompt component (full spectrum) plus the answer's own (half the variance, so
    /// differences of two answers have the training spectrum).
    fn candidates(&self, prompts: usize, per: usize, seed: u64) -> Vec<f32> {
        let d1 = self.d1;
        let mut out = vec![0.0f32; prompts * per * d1];
        out.par_chunks_mut(per * d1)
            .enumerate()
            .for_each(|(p, block)| {
                let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0xC2B2_AE3D_27D4_EB4Fu64 ^ p as u64);
                let mut prompt = vec![0.0; d1];
                self.embed(&mut r, 1.0, &mut prompt);
                let mut own = vec![0.0; d1];
                for k in 0..per {
                    self.embed(&mut r, std::f64::consts::FRAC_1_SQRT_2, &mut own);
                    for ((o, a), b) in block[k * d1..(k + 1) * d1]
                        .iter_mut()
                        .zip(&prompt)
                        .zip(&own)
                    {
                        *o = (a + b) as f32;
                    }
                }
            });
        out
    }
}

fn z_bytes(data: &Dataset) -> u64 {
    let per = if data.is_f32() { 4 } else { 8 };
    (data.n() * data.d1() * per) as u64
}

// ------------------------------------------------------------------------------------------
// Workloads
// ------------------------------------------------------------------------------------------

/// GEMM rate through the crate's tiled parallel GEMM (f64 and f32), `size^3`.
fn gemm_rates(threads: usize, size: usize) -> (f64, f64) {
    let a = DMatrix::<f64>::from_fn(size, size, |i, j| ((i * 7 + j * 3) % 11) as f64 * 0.1);
    let b = DMatrix::<f64>::from_fn(size, size, |i, j| ((i * 5 + j) % 13) as f64 * 0.1);
    let flops = 2.0 * (size as f64).powi(3);
    let p = pool(threads);
    let t64 = p.install(|| {
        time_min(5, || {
            std::hint::black_box(hetreward::internals::linalg::matmul(&a, &b));
        })
    });
    let af: Vec<f32> = a.iter().map(|&v| v as f32).collect();
    let bf: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    let t32 = p.install(|| {
        time_min(5, || {
            std::hint::black_box(hetreward::internals::linalg::matmul_f32(
                &af, &bf, size, size, size,
            ));
        })
    });
    (flops / t64 / 1e9, flops / t32 / 1e9)
}

/// One read-only pass over z in its storage precision (a sum): the bandwidth floor.
fn read_pass(data: &Dataset) -> f64 {
    let chunk = 512 * data.d1();
    match data.features() {
        FeatureMatrix::F64(z) => z
            .par_chunks(chunk)
            .map(|c| {
                let mut a = [0.0f64; 8];
                for ch in c.chunks_exact(8) {
                    for l in 0..8 {
                        a[l] += ch[l];
                    }
                }
                a.iter().sum::<f64>()
            })
            .sum(),
        FeatureMatrix::F32(z) => z
            .par_chunks(chunk)
            .map(|c| {
                let mut a = [0.0f32; 16];
                for ch in c.chunks_exact(16) {
                    for l in 0..16 {
                        a[l] += ch[l];
                    }
                }
                a.iter().map(|&v| f64::from(v)).sum::<f64>()
            })
            .sum(),
    }
}

struct Floors {
    gflops64: f64,
    read_pass: f64,
    grad_pass: f64,
    hv_pass: f64,
    syrk_floor: f64,
}

fn floors(cfg: &Config, data: &Dataset, rep: &mut Report) -> Floors {
    let size = if cfg.smoke { 256 } else { 2048 };
    let (g64, g32) = gemm_rates(cfg.threads, size);
    let (g64_1, g32_1) = gemm_rates(1, size);
    let p = pool(cfg.threads);
    let reps = if cfg.smoke { 3 } else { 9 };
    let read = p.install(|| {
        time_min(reps, || {
            std::hint::black_box(read_pass(data));
        })
    });
    let params = Params {
        theta: vec![0.01; data.d1()],
        gamma: vec![0.0; data.d2()],
    };
    let grad = p.install(|| {
        time_min(reps, || {
            std::hint::black_box(nll_and_gradient(data, &params));
        })
    });
    let eval = p.install(|| evaluate(data, &params));
    let v = vec![0.5; data.n_params()];
    let hv = p.install(|| {
        time_min(reps, || {
            std::hint::black_box(hessian_vector(
                data,
                &eval.terms,
                &v,
                Curvature::Observed,
                false,
            ));
        })
    });
    let pp = data.n_params() as f64;
    // The expected information is a symmetric rank-n update: n p^2 flops (half of a GEMM).
    let syrk_flops = data.n() as f64 * pp * pp;
    let syrk_floor = syrk_flops / (g64 * 1e9);
    println!(
        "## Floors (measured in this run, {} threads; best of {} repetitions: a floor is a best case)",
        cfg.threads, reps
    );
    println!(
        "GEMM {size}^3: f64 {g64:.1} GFLOP/s ({g64_1:.1} on 1 thread), f32 {g32:.1} GFLOP/s ({g32_1:.1} on 1 thread)"
    );
    println!(
        "one read-only pass over z ({}, {:.0} MB): {:.2} ms = {:.1} GB/s",
        if data.is_f32() { "f32" } else { "f64" },
        mb(z_bytes(data)),
        read * 1e3,
        z_bytes(data) as f64 / read / 1e9
    );
    println!(
        "library passes: gradient {:.2} ms ({:.2}x the read pass), Hessian-vector {:.2} ms ({:.2}x)",
        grad * 1e3,
        grad / read,
        hv * 1e3,
        hv / read
    );
    println!(
        "SYRK floor (n p^2 = {:.2e} flops at the f64 GEMM rate): {:.3} s",
        syrk_flops, syrk_floor
    );
    rep.put(
        "floors",
        json!({"gemm_f64_gflops": g64, "gemm_f32_gflops": g32, "gemm_f64_gflops_1thread": g64_1,
               "gemm_f32_gflops_1thread": g32_1, "read_pass_s": read, "grad_pass_s": grad,
               "hv_pass_s": hv, "syrk_flops": syrk_flops, "syrk_floor_s": syrk_floor,
               "z_bytes": z_bytes(data)}),
    );
    Floors {
        gflops64: g64,
        read_pass: read,
        grad_pass: grad,
        hv_pass: hv,
        syrk_floor,
    }
}

/// One fit + covariance with the default solver; returns the model, timing and counters.
struct FitRun {
    model: RewardModel,
    cgstats: hetreward::internals::fit::CgStats,
    fit_s: f64,
    cov_s: f64,
    passes: usize,
    cg: usize,
    newton: usize,
    peak: u64,
    rss_before: u64,
}

fn fit_once(data: &Dataset, options: &FitOptions, tuning: &Tuning) -> FitRun {
    let rss_before = status_bytes("VmRSS:");
    reset_peak();
    let t = Instant::now();
    let (fit, diag) = fit_with(data, options, tuning, &FitControl::default()).unwrap();
    let fit_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let model = hetreward::parallel::run_in_pool(options.threads, || {
        RewardModel::from_estimate(data, fit.params, fit.report, CovarianceKind::Expected)
    })
    .unwrap()
    .unwrap();
    let cov_s = t.elapsed().as_secs_f64();
    FitRun {
        model,
        cgstats: diag.cg,
        fit_s,
        cov_s,
        passes: diag.cg.passes,
        cg: diag.cg.cg_iterations,
        newton: diag.cg.newton_steps,
        peak: status_bytes("VmHWM:"),
        rss_before,
    }
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1e-300))
        .fold(0.0, f64::max)
}

/// Workload (a). Runs before the floors so that its peak memory is measured in a clean
/// process; [`fit_floor_ratios`] relates it to the floors afterwards.
fn fit_workload(cfg: &Config, data: &Dataset, rep: &mut Report) -> RewardModel {
    let options = FitOptions {
        threads: cfg.threads,
        ..FitOptions::default()
    };
    let tuning = Tuning::default();
    // Only the last run's model is kept (each holds its packed factor); the peak memory is the
    // first run's, taken in a process holding nothing but the data.
    let (mut times, mut peak_first, mut before_first) = (Vec::new(), 0, 0);
    let mut last = None;
    for r in 0..cfg.reps {
        drop(last.take()); // the previous model, before the next fit
        let run = fit_once(data, &options, &tuning);
        if r == 0 {
            (peak_first, before_first) = (run.peak, run.rss_before);
        }
        times.push((run.fit_s, run.cov_s));
        last = Some(run);
    }
    let last = last.expect("at least one repetition");
    let total = median(times.iter().map(|(f, c)| f + c).collect());
    let fit_s = median(times.iter().map(|t| t.0).collect());
    let cov_s = median(times.iter().map(|t| t.1).collect());
    let peak = peak_first;
    let report = last.model.report().clone();
    // SE stability: the same fit to a 1000x tighter gradient tolerance.
    let tight = fit_once(
        data,
        &FitOptions {
            tol: options.tol * 1e-3,
            ..options.clone()
        },
        &tuning,
    );
    let se_theta = max_rel(last.model.theta_se(), tight.model.theta_se());
    let se_gamma = max_rel(last.model.gamma_se(), tight.model.gamma_se());
    let dtheta = last
        .model
        .theta()
        .iter()
        .zip(tight.model.theta())
        .zip(tight.model.theta_se())
        .map(|((a, b), s)| (a - b).abs() / s)
        .fold(0.0, f64::max);
    println!(
        "\n## Fit + covariance (workload a; n = {}, d1 = {}, d2 = {}, z in {}, {} threads, median of {})",
        data.n(),
        data.d1(),
        data.d2(),
        if data.is_f32() { "f32" } else { "f64" },
        cfg.threads,
        cfg.reps
    );
    println!(
        "fit + covariance {total:.3} s  (fit {fit_s:.3} s, covariance {cov_s:.3} s); {} Newton steps, {} CG iterations, {} passes; converged {} |g| {:.2e}",
        last.newton, last.cg, last.passes, report.converged, report.grad_norm
    );
    let c = &last.cgstats;
    let accounted = c.preconditioner_seconds
        + c.product_seconds
        + c.evaluation_seconds
        + c.block_seconds
        + c.apply_seconds;
    println!(
        "fit breakdown (last run): data preconditioner {:.3} s, {} Hessian-vector products {:.3} s, evaluations {:.3} s, step blocks {:.3} s, preconditioner applications {:.3} s, other {:.3} s",
        c.preconditioner_seconds,
        c.cg_iterations,
        c.product_seconds,
        c.evaluation_seconds,
        c.block_seconds,
        c.apply_seconds,
        last.fit_s - accounted
    );
    println!(
        "SE stability vs tol/1000: theta_se max rel diff {se_theta:.2e}, gamma_se {se_gamma:.2e}; |d theta| <= {dtheta:.2e} SE"
    );
    // Where the covariance time goes: the Gram product alone, then everything.
    let p = pool(cfg.threads);
    let params = last.model.params().clone();
    let t_gram = p.install(|| {
        time_median(cfg.reps, || {
            std::hint::black_box(hetreward::internals::likelihood::expected_information(
                data, &params,
            ));
        })
    });
    let t_factors = p.install(|| {
        time_median(cfg.reps, || {
            std::hint::black_box(
                hetreward::internals::covariance::covariance_factors(
                    data,
                    &params,
                    CovarianceKind::Expected,
                )
                .unwrap(),
            );
        })
    });
    println!(
        "covariance breakdown: information (Gram) {t_gram:.3} s, Schur + Cholesky + triangular inverse {:.3} s, model assembly {:.3} s",
        t_factors - t_gram,
        cov_s - t_factors
    );
    let zb = z_bytes(data);
    println!(
        "peak RSS during fit + covariance: {:.0} MB = {:.3}x the bytes of z ({:.0} MB); RSS before {:.0} MB",
        mb(peak),
        peak as f64 / zb as f64,
        mb(zb),
        mb(before_first)
    );
    let fields = json!({"total_s": total, "fit_s": fit_s, "cov_s": cov_s,
        "newton_steps": last.newton, "cg_iterations": last.cg, "passes": last.passes,
        "converged": report.converged, "grad_norm": report.grad_norm, "neg_loglik": report.neg_loglik,
        "preconditioner_s": last.cgstats.preconditioner_seconds,
        "products_s": last.cgstats.product_seconds,
        "evaluations_s": last.cgstats.evaluation_seconds,
        "blocks_s": last.cgstats.block_seconds,
        "apply_s": last.cgstats.apply_seconds,
        "preconditioner_s": last.cgstats.preconditioner_seconds,
        "products_s": last.cgstats.product_seconds, "evaluations_s": last.cgstats.evaluation_seconds,
        "blocks_s": last.cgstats.block_seconds, "apply_s": last.cgstats.apply_seconds,
        "se_theta_rel_vs_tight": se_theta, "se_gamma_rel_vs_tight": se_gamma, "theta_shift_in_se": dtheta,
        "peak_bytes": peak, "peak_over_z": peak as f64 / zb as f64, "z_bytes": zb,
        "gram_s": t_gram, "factors_s": t_factors});
    rep.put("fit", fields);
    last.model
}

/// The fit's time against the floors of its own algorithm: one SYRK at the measured GEMM rate
/// plus its passes at the read-only pass time (and at the library's own pass time).
fn fit_floor_ratios(fl: &Floors, rep: &mut Report) {
    let Some(fit) = rep.out.get_mut("fit") else {
        return;
    };
    let total = fit["total_s"].as_f64().unwrap_or(f64::NAN);
    let passes = fit["passes"].as_f64().unwrap_or(0.0);
    let floor = fl.syrk_floor + passes * fl.read_pass;
    let lib_floor = fl.syrk_floor + passes * 0.5 * (fl.grad_pass + fl.hv_pass);
    println!(
        "\n## Fit against its floor\nfloor = 1 SYRK {:.3} s + {passes} passes x {:.2} ms = {floor:.3} s; fit + covariance {total:.3} s = {:.2}x the floor ({:.2}x the floor with the library's pass time)",
        fl.syrk_floor,
        fl.read_pass * 1e3,
        total / floor,
        total / lib_floor
    );
    fit["floor_s"] = json!(floor);
    fit["ratio_to_floor"] = json!(total / floor);
    fit["ratio_to_library_pass_floor"] = json!(total / lib_floor);
    fit["gemm_f64_gflops"] = json!(fl.gflops64);
}

fn agd_workload(cfg: &Config, data: &Dataset, fl: Option<&Floors>, optimum: f64, rep: &mut Report) {
    let iters = if cfg.smoke { 5 } else { 30 };
    let options = FitOptions {
        solver: SolverKind::Agd,
        max_iter: Some(iters),
        tol: 0.0,
        threads: cfg.threads,
        init: Init::Explicit(Params::zeros(data.d1(), data.d2())),
        ..FitOptions::default()
    };
    let mut per = Vec::new();
    let mut nll = 0.0;
    for _ in 0..cfg.reps {
        let t = Instant::now();
        let (f, _) = fit_with(data, &options, &Tuning::default(), &FitControl::default()).unwrap();
        // The driver evaluates the start once: (iters * 2 + 1) passes.
        per.push(t.elapsed().as_secs_f64() / iters as f64);
        nll = f.report.neg_loglik;
    }
    let per = median(per);
    println!(
        "\n## agd (workload b; {iters} iterations from 0, eta1 = 0.1, eta2 = 0.08, median of {})",
        cfg.reps
    );
    print!(
        "{:.2} ms per iteration; NLL after {iters} iterations {nll:.6} (optimum {optimum:.6})",
        per * 1e3
    );
    let mut fields =
        json!({"iterations": iters, "per_iteration_s": per, "nll": nll, "optimum": optimum});
    if let Some(fl) = fl {
        println!(
            "; = {:.2}x two read-only passes ({:.2} ms), {:.2}x two gradient passes",
            per / (2.0 * fl.read_pass),
            2e3 * fl.read_pass,
            per / (2.0 * fl.grad_pass)
        );
        fields["ratio_two_read_passes"] = json!(per / (2.0 * fl.read_pass));
        fields["ratio_two_grad_passes"] = json!(per / (2.0 * fl.grad_pass));
    } else {
        println!();
    }
    rep.put("agd", fields);
}

fn score_workload(cfg: &Config, world: &World, model: &RewardModel, rep: &mut Report) {
    let (prompts, per, d1) = (cfg.prompts, cfg.candidates, model.d1());
    reset_peak();
    let rss0 = status_bytes("VmRSS:");
    let t = Instant::now();
    let phis = world.candidates(prompts, per, cfg.seed + 7);
    let gen_s = t.elapsed().as_secs_f64();
    let alpha = 0.05;
    let groups: Vec<&[f32]> = phis.chunks_exact(per * d1).collect();
    // Single-threaded pBoN of the first 16 and all `per` candidates of each prompt.
    let one = pool(1);
    let sample: Vec<usize> = (0..prompts).step_by((prompts / 50).max(1)).collect();
    let timing = |n_cand: usize, pruned: bool| -> (f64, usize) {
        let mut idx = 0;
        let t = one.install(|| {
            median(
                sample
                    .iter()
                    .map(|&g| {
                        let x = &groups[g][..n_cand * d1];
                        let t = Instant::now();
                        idx = if pruned {
                            select_best(model, x, None, alpha, Policy::Pbon)
                                .unwrap()
                                .index
                        } else {
                            select(model, x, None, alpha, Policy::Pbon).unwrap().index
                        };
                        t.elapsed().as_secs_f64()
                    })
                    .collect(),
            )
        });
        (t, idx)
    };
    let n16 = 16.min(per);
    let (t16_all, _) = timing(n16, false);
    let (t16, _) = timing(n16, true);
    let (t128_all, _) = timing(per, false);
    let (t128, _) = timing(per, true);
    // Every candidate: pBoN over all prompts on `threads` threads (prompts in parallel).
    let p = pool(cfg.threads);
    let mut agree = true;
    let (t_all, t_all_pruned, evaluated) = p.install(|| {
        let t = Instant::now();
        let full: Vec<usize> = groups
            .par_iter()
            .map(|x| select(model, x, None, alpha, Policy::Pbon).unwrap().index)
            .collect();
        let t_all = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let pruned: Vec<(usize, usize)> = groups
            .par_iter()
            .map(|x| {
                let b = select_best(model, x, None, alpha, Policy::Pbon).unwrap();
                (b.index, b.se_computed)
            })
            .collect();
        let t_pruned = t.elapsed().as_secs_f64();
        agree = full.iter().zip(&pruned).all(|(a, b)| *a == b.0);
        (t_all, t_pruned, pruned.iter().map(|b| b.1).sum::<usize>())
    });
    let peak = status_bytes("VmHWM:");
    let total = prompts * per;
    // Floor of the triangular product: m d1^2 flops at the single-thread f64 GEMM rate is
    // reported by `floors`; here the flops.
    let flops_per_candidate = (d1 * d1) as f64; // (d1^2 / 2 multiply-adds)
    println!(
        "\n## Scoring (workloads c, d; d1 = {d1}, candidates f32, alpha = 0.05; generated in {gen_s:.2} s)"
    );
    println!(
        "pBoN N = {n16}, 1 thread: {:.3} ms pruned ({:.3} ms with every SE); N = {per}: {:.3} ms pruned ({:.3} ms with every SE) (median over {} prompts)",
        t16 * 1e3,
        t16_all * 1e3,
        t128 * 1e3,
        t128_all * 1e3,
        sample.len()
    );
    println!(
        "all {total} candidates ({prompts} prompts x {per}), {} threads: {t_all:.3} s with every SE ({:.1} GFLOP/s), {t_all_pruned:.3} s pruned ({evaluated} SEs computed = {:.1}%); same choices: {agree}",
        cfg.threads,
        total as f64 * flops_per_candidate / t_all / 1e9,
        100.0 * evaluated as f64 / total as f64
    );
    println!(
        "peak RSS during scoring {:.0} MB (candidates {:.0} MB f32, RSS before {:.0} MB)",
        mb(peak),
        mb((total * d1 * 4) as u64),
        mb(rss0)
    );
    rep.put(
        "score",
        json!({"n16_pruned_s": t16, "n16_all_s": t16_all, "n_per_pruned_s": t128, "n_per_all_s": t128_all,
               "per": per, "prompts": prompts, "all_s": t_all, "all_pruned_s": t_all_pruned,
               "ses_computed_pruned": evaluated, "same_choices": agree, "peak_bytes": peak,
               "candidate_bytes": total * d1 * 4}),
    );
}

fn precision_workload(cfg: &Config, world: &World, rep: &mut Report) {
    // The same draws stored in f64, then rounded to f32: the MLE of each.
    let d64 = pool(cfg.threads).install(|| world.training(cfg.n, cfg.seed, false));
    let z32: Vec<f32> = d64.z().iter().map(|&v| v as f32).collect();
    let d32 = Dataset::new_f32(
        d64.d1(),
        d64.d2(),
        z32,
        d64.psi0().to_vec(),
        d64.psi().to_vec(),
        d64.y().to_vec(),
        None,
    )
    .unwrap();
    let options = FitOptions {
        threads: cfg.threads,
        ..FitOptions::default()
    };
    let a = fit_once(&d64, &options, &Tuning::default());
    let b = fit_once(&d32, &options, &Tuning::default());
    let shift = a
        .model
        .theta()
        .iter()
        .zip(b.model.theta())
        .zip(a.model.theta_se())
        .map(|((x, y), s)| (x - y).abs() / s)
        .fold(0.0, f64::max);
    let se = max_rel(b.model.theta_se(), a.model.theta_se());
    let gse = max_rel(b.model.gamma_se(), a.model.gamma_se());
    println!("\n## Storage precision (same draws, z in f64 vs rounded to f32)");
    println!(
        "f64: fit + covariance {:.3} s; f32: {:.3} s ({:.2}x faster). |theta_f32 - theta_f64| <= {shift:.2e} SE; theta_se max rel diff {se:.2e}; gamma_se {gse:.2e}",
        a.fit_s + a.cov_s,
        b.fit_s + b.cov_s,
        (a.fit_s + a.cov_s) / (b.fit_s + b.cov_s)
    );
    rep.put(
        "precision",
        json!({"f64_s": a.fit_s + a.cov_s, "f32_s": b.fit_s + b.cov_s, "theta_shift_in_se": shift,
               "theta_se_rel": se, "gamma_se_rel": gse}),
    );
}

fn naive_workload(cfg: &Config, data: &Dataset, fast_total: Option<f64>, rep: &mut Report) {
    let options = FitOptions {
        threads: cfg.threads,
        restarts: 0,
        ..FitOptions::default()
    };
    let dense = fit_once(
        data,
        &options,
        &Tuning {
            newton: NewtonVariant::Dense,
        },
    );
    let iterations = dense.model.report().total_iterations;
    let dense_total = dense.fit_s + dense.cov_s;
    // The pre-issue code's kernels, one iteration's worth: its Gram product (128-wide tiles,
    // 256-row blocks) of the expected information and nalgebra's unblocked Cholesky.
    let params = dense.model.params().clone();
    let p = pool(cfg.threads);
    let t = Instant::now();
    let info = p.install(|| old_expected_information(data, &params));
    let old_gram = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let chol = nalgebra::Cholesky::new(info.clone());
    let old_chol = t.elapsed().as_secs_f64();
    let t = Instant::now();
    std::hint::black_box(chol.map(|c| c.inverse()));
    let old_inverse = t.elapsed().as_secs_f64();
    // Pre-issue fit: every Newton iteration forms the Gram and factors it; the homogeneous
    // start and 2 random restarts (default) roughly triple the joint iterations (not run).
    let old_per_iteration = old_gram + old_chol;
    let old_single_start =
        iterations as f64 * old_per_iteration + old_gram + old_inverse + old_chol;
    println!("\n## Baselines: dense Newton and the pre-issue code");
    println!(
        "dense Newton (full Hessian every iteration, 1 start, today's kernels): fit + covariance {dense_total:.2} s, {iterations} iterations{}",
        fast_total.map_or(String::new(), |t| format!("; default solver is {:.1}x faster", dense_total / t))
    );
    println!(
        "pre-issue kernels, one iteration: Gram {old_gram:.2} s + nalgebra Cholesky {old_chol:.2} s; covariance inverse {old_inverse:.2} s. Modelled single-start pre-issue fit + covariance: {old_single_start:.1} s{}",
        fast_total.map_or(String::new(), |t| format!(" ({:.0}x the default solver)", old_single_start / t))
    );
    rep.put(
        "naive",
        json!({"dense_newton_s": dense_total, "dense_iterations": iterations, "old_gram_s": old_gram,
               "old_cholesky_s": old_chol, "old_inverse_s": old_inverse,
               "old_single_start_model_s": old_single_start}),
    );
}

/// The pre-issue Gram kernel, verbatim in structure: 256-row blocks, 128-wide output tiles.
fn old_expected_information(data: &Dataset, params: &Params) -> DMatrix<f64> {
    const BLOCK: usize = 256;
    const TILE: usize = 128;
    let (n, p, d1) = (data.n(), data.n_params(), data.d1());
    let mut out = vec![0.0f64; p * p];
    let starts: Vec<usize> = (0..p).step_by(TILE).collect();
    let mut tiles = Vec::new();
    for (a, &i) in starts.iter().enumerate() {
        for &j in &starts[a..] {
            tiles.push((i, j));
        }
    }
    let mut block = vec![0.0f64; BLOCK * p];
    let out_addr = out.as_mut_ptr() as usize;
    for start in (0..n).step_by(BLOCK) {
        let rows = BLOCK.min(n - start);
        block[..rows * p]
            .par_chunks_mut(p)
            .enumerate()
            .for_each(|(r, row)| {
                let i = start + r;
                let zi = data.z_row(i);
                let st = hetreward::internals::likelihood::terms(data, params, i);
                let s = st.weight.sqrt();
                for (o, z) in row[..d1].iter_mut().zip(zi.iter()) {
                    *o = s * st.sigma * z;
                }
                for (o, q) in row[d1..].iter_mut().zip(data.psi_row(i)) {
                    *o = s * st.t * q;
                }
            });
        let a = &block[..rows * p];
        tiles.par_iter().for_each(|&(ti, tj)| {
            let m = TILE.min(p - ti);
            let k = TILE.min(p - tj);
            // SAFETY: disjoint output tiles of a live buffer; reads inside the block.
            unsafe {
                matrixmultiply::dgemm(
                    m,
                    rows,
                    k,
                    1.0,
                    a.as_ptr().add(ti),
                    1,
                    p as isize,
                    a.as_ptr().add(tj),
                    p as isize,
                    1,
                    1.0,
                    (out_addr as *mut f64).add(ti * p + tj),
                    p as isize,
                    1,
                );
            }
        });
    }
    let mut m = DMatrix::from_row_slice(p, p, &out);
    for i in 0..p {
        for j in 0..i {
            m[(i, j)] = m[(j, i)];
        }
    }
    m / n as f64
}

/// Peak memory of each phase of a fit over the resident data (workload e, by phase).
fn memory_workload(cfg: &Config, data: &Dataset, rep: &mut Report) {
    let options = FitOptions {
        threads: cfg.threads,
        ..FitOptions::default()
    };
    let (fit, _) = fit_with(data, &options, &Tuning::default(), &FitControl::default()).unwrap();
    let p = pool(cfg.threads);
    let zb = z_bytes(data);
    println!(
        "\n## Peak memory by phase (over the RSS before each phase; z = {:.0} MB)",
        mb(zb)
    );
    let mut rows = BTreeMap::new();
    let mut probe = |label: &str, f: &(dyn Fn() + Sync)| {
        let before = status_bytes("VmRSS:");
        reset_peak();
        p.install(f);
        let extra = status_bytes("VmHWM:").saturating_sub(before);
        println!(
            "{label}: +{:.1} MB = {:.3}x z",
            mb(extra),
            extra as f64 / zb as f64
        );
        rows.insert(label.to_string(), json!(extra));
    };
    probe("solver (fit)", &|| {
        std::hint::black_box(
            fit_with(data, &options, &Tuning::default(), &FitControl::default()).unwrap(),
        );
    });
    probe("preconditioner", &|| {
        std::hint::black_box(hetreward::internals::fit::DataPreconditioner::new(data));
    });
    probe("information (Gram)", &|| {
        std::hint::black_box(hetreward::internals::likelihood::expected_information(
            data,
            &fit.params,
        ));
    });
    probe("covariance (Gram + factors)", &|| {
        std::hint::black_box(
            hetreward::internals::covariance::covariance_factors(
                data,
                &fit.params,
                CovarianceKind::Expected,
            )
            .unwrap(),
        );
    });
    probe("model (covariance + packed factor)", &|| {
        std::hint::black_box(
            RewardModel::from_estimate(
                data,
                fit.params.clone(),
                fit.report.clone(),
                CovarianceKind::Expected,
            )
            .unwrap(),
        );
    });
    rep.put("memory_extra_bytes", json!(rows));
}

fn scaling_workload(cfg: &Config, rep: &mut Report) {
    println!("\n## Scaling (fit + covariance, default solver, 1 run each)");
    println!("| n | d1 | d2 | fit s | covariance s | total s | Newton steps | CG iterations | passes | converged | peak/z |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    let mut run = |n: usize, d1: usize| {
        let world = World::new(d1, cfg.d2, cfg.seed);
        let data = pool(cfg.threads).install(|| world.training(n, cfg.seed, cfg.f32));
        let options = FitOptions {
            threads: cfg.threads,
            ..FitOptions::default()
        };
        let r = fit_once(&data, &options, &Tuning::default());
        let peak_over = r.peak as f64 / z_bytes(&data) as f64;
        println!(
            "| {n} | {d1} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {} | {:.2} |",
            cfg.d2,
            r.fit_s,
            r.cov_s,
            r.fit_s + r.cov_s,
            r.newton,
            r.cg,
            r.passes,
            r.model.report().converged,
            peak_over
        );
        rows.push(
            json!({"n": n, "d1": d1, "d2": cfg.d2, "fit_s": r.fit_s, "cov_s": r.cov_s,
                         "passes": r.passes, "peak_over_z": peak_over}),
        );
    };
    for f in [0.25, 0.5, 1.0, 2.0] {
        run((cfg.n as f64 * f) as usize, cfg.d1);
    }
    for d1 in [256, 512, 1024, 4096] {
        run(cfg.n, d1);
    }
    rep.put("scaling", Value::Array(rows));
}

// ------------------------------------------------------------------------------------------
// Export for the numpy baseline
// ------------------------------------------------------------------------------------------

/// Writes a little-endian `.npy` file (version 1.0) of `shape` from raw `f32`/`f64` bytes.
fn write_npy(path: &std::path::Path, descr: &str, shape: &[usize], bytes: &[u8]) {
    let shape_s = match shape {
        [a] => format!("({a},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_s}, }}");
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"\x93NUMPY\x01\x00").unwrap();
    f.write_all(&(header.len() as u16).to_le_bytes()).unwrap();
    f.write_all(header.as_bytes()).unwrap();
    f.write_all(bytes).unwrap();
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn export(dir: &str, world: &World, data: &Dataset, model: Option<&RewardModel>, cfg: &Config) {
    let dir = std::path::Path::new(dir);
    std::fs::create_dir_all(dir).unwrap();
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    match data.features() {
        FeatureMatrix::F32(z) => {
            let b: Vec<u8> = z.iter().flat_map(|x| x.to_le_bytes()).collect();
            write_npy(&dir.join("z.npy"), "<f4", &[n, d1], &b)
        }
        FeatureMatrix::F64(z) => write_npy(&dir.join("z.npy"), "<f8", &[n, d1], &f64_bytes(z)),
    }
    write_npy(
        &dir.join("psi.npy"),
        "<f8",
        &[n, d2],
        &f64_bytes(data.psi()),
    );
    write_npy(&dir.join("psi0.npy"), "<f8", &[n], &f64_bytes(data.psi0()));
    write_npy(&dir.join("y.npy"), "<f8", &[n], &f64_bytes(data.y()));
    let phis = world.candidates(cfg.prompts, cfg.candidates, cfg.seed + 7);
    let b: Vec<u8> = phis.iter().flat_map(|x| x.to_le_bytes()).collect();
    write_npy(
        &dir.join("candidates.npy"),
        "<f4",
        &[cfg.prompts * cfg.candidates, d1],
        &b,
    );
    if let Some(m) = model {
        let picks: Vec<usize> = phis
            .chunks_exact(cfg.candidates * d1)
            .map(|x| select(m, x, None, 0.05, Policy::Pbon).unwrap().index)
            .collect();
        let v = json!({"theta": m.theta(), "gamma": m.gamma(), "theta_se": m.theta_se(),
                       "gamma_se": m.gamma_se(), "neg_loglik": m.report().neg_loglik,
                       "per_prompt": cfg.candidates, "pbon_index": picks});
        std::fs::write(dir.join("hetreward_fit.json"), v.to_string()).unwrap();
    }
    println!("\nexported data, candidates and fit to {}", dir.display());
}

/// Writes `data` as a safetensors training file: `y`, `psi0`, `psi` F64 and `z` in its storage
/// precision (F32 or F64).
fn write_training(path: &str, data: &Dataset) {
    let (n, d1, d2) = (data.n(), data.d1(), data.d2());
    let (dtype, z): (&str, Vec<u8>) = match data.features() {
        FeatureMatrix::F32(z) => ("F32", z.iter().flat_map(|x| x.to_le_bytes()).collect()),
        FeatureMatrix::F64(z) => ("F64", f64_bytes(z)),
    };
    let tensors: [(&str, &str, Vec<usize>, Vec<u8>); 4] = [
        ("y", "F64", vec![n], f64_bytes(data.y())),
        ("psi0", "F64", vec![n], f64_bytes(data.psi0())),
        ("psi", "F64", vec![n, d2], f64_bytes(data.psi())),
        ("z", dtype, vec![n, d1], z),
    ];
    let mut header = serde_json::Map::new();
    let mut offset = 0;
    for (name, dtype, shape, bytes) in &tensors {
        header.insert(
            name.to_string(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + bytes.len()]}),
        );
        offset += bytes.len();
    }
    let header = Value::Object(header).to_string();
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
    w.write_all(header.as_bytes()).unwrap();
    for (_, _, _, bytes) in &tensors {
        w.write_all(bytes).unwrap();
    }
    w.flush().unwrap();
    println!(
        "wrote the training file {path} ({:.0} MB)",
        mb(8 + header.len() as u64 + offset as u64)
    );
}

/// The `process` workload: `hetreward fit FILE --out M --report R`, phase by phase.
fn process_workload(cfg: &Config, rep: &mut Report) {
    use hetreward::io::{model_file, training::read_training};
    let Some(file) = &cfg.file else {
        eprintln!("the `process` workload needs --file PATH (see --write-training)");
        std::process::exit(2)
    };
    let path = std::path::Path::new(file);
    let out_dir = std::env::temp_dir();
    let (model_path, report_path) = (
        out_dir.join(format!("hetreward-process-{}.hrm", std::process::id())),
        out_dir.join(format!("hetreward-process-{}.json", std::process::id())),
    );
    let mut rows: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let timed = |rows: &mut BTreeMap<&str, Vec<f64>>, key: &'static str, t: Instant| {
        rows.entry(key).or_default().push(t.elapsed().as_secs_f64());
    };
    for _ in 0..cfg.reps {
        let t = Instant::now();
        let bytes = std::fs::read(path).unwrap();
        timed(&mut rows, "fs_read_floor", t);
        drop(bytes);
        let t = Instant::now();
        let data = read_training(path).unwrap();
        timed(&mut rows, "read_and_validate", t);
        // The dataset's checks alone, on arrays already decoded.
        let (z, psi0, psi, y) = match data.features() {
            FeatureMatrix::F64(z) => (
                z.to_vec(),
                data.psi0().to_vec(),
                data.psi().to_vec(),
                data.y().to_vec(),
            ),
            FeatureMatrix::F32(_) => panic!("process: the file's z decodes to f64"),
        };
        let t = Instant::now();
        let again = Dataset::new(data.d1(), data.d2(), z, psi0, psi, y, None).unwrap();
        timed(&mut rows, "validate", t);
        drop(again);
        let options = FitOptions {
            threads: cfg.threads,
            ..FitOptions::default()
        };
        let trace = |p: &hetreward::fit::Progress| {
            println!(
                "trace: start {} iteration {} nll {:.12} |g| {:.3e}",
                p.start, p.iteration, p.neg_loglik, p.grad_norm
            );
            true
        };
        let control = FitControl {
            progress: cfg.trace.then_some(&trace as &(dyn Fn(&_) -> bool + Sync)),
            ..FitControl::default()
        };
        let t = Instant::now();
        let (fitted, diag) = fit_with(&data, &options, &Tuning::default(), &control).unwrap();
        timed(&mut rows, "fit", t);
        let c = &diag.cg;
        println!(
            "fit: {} Newton steps, {} CG products, {} passes; preconditioner {:.2} s, products \
             {:.2} s, evaluations {:.2} s, step blocks {:.2} s, CG applies {:.2} s",
            c.newton_steps,
            c.cg_iterations,
            c.passes,
            c.preconditioner_seconds,
            c.product_seconds,
            c.evaluation_seconds,
            c.block_seconds,
            c.apply_seconds
        );
        let t = Instant::now();
        let model = pool(cfg.threads)
            .install(|| {
                RewardModel::from_estimate(
                    &data,
                    fitted.params,
                    fitted.report,
                    CovarianceKind::Expected,
                )
            })
            .unwrap();
        timed(&mut rows, "covariance_and_model", t);
        // The floor's kernels on this file, at this machine's speed: the f64 Gram the
        // covariance needs (the expected information at the estimate) and one f32 Gram of z
        // (the size of the preconditioner's).
        let t = Instant::now();
        let info = pool(cfg.threads).install(|| {
            hetreward::internals::likelihood::expected_information(&data, model.params())
        });
        timed(&mut rows, "floor_gram_f64", t);
        drop(info);
        if let FeatureMatrix::F64(z) = data.features() {
            let (n, d1) = (data.n(), data.d1());
            let t = Instant::now();
            let g = pool(cfg.threads).install(|| {
                hetreward::internals::linalg::gram_f32(n, d1, n as f64, |i, out: &mut [f32]| {
                    for (o, v) in out.iter_mut().zip(&z[i * d1..(i + 1) * d1]) {
                        *o = *v as f32;
                    }
                })
            });
            timed(&mut rows, "floor_gram_f32", t);
            drop(g);
        }
        if data.cluster().is_some() {
            // The floor of the leverage diagnostic (files with cluster ids): one f32 product of
            // the n x p information rows by the p x p inverse, at faer's best (whole-matrix,
            // parallel) speed; the rows here are zeros, as the speed does not depend on them.
            let (n, p) = (data.n(), data.n_params());
            let (grows, inverse) = (vec![0.0f32; n * p], vec![0.0f32; p * p]);
            let t = Instant::now();
            let product = pool(cfg.threads)
                .install(|| hetreward::internals::linalg::matmul_f32(&grows, &inverse, n, p, p));
            timed(&mut rows, "floor_leverage_f32", t);
            drop(product);
            // The CLI prints the heterogeneity diagnostic after every fit with cluster ids and
            // the annotators' leverage beside it, computed together.
            let t = Instant::now();
            let (h, l) =
                pool(cfg.threads).install(|| hetreward::cluster::diagnostics_of_fit(&data, &model));
            h.unwrap();
            l.unwrap();
            timed(&mut rows, "heterogeneity_and_leverage", t);
        }
        let t = Instant::now();
        std::fs::write(&model_path, model_file::to_bytes(&model)).unwrap();
        timed(&mut rows, "write_model", t);
        let t = Instant::now();
        // The CLI's report (cli/src/json.rs) is the fit report plus the estimates and SEs as
        // JSON; the bench writes the same values (the program is a separate crate).
        let text = serde_json::json!({
            "report": format!("{:?}", model.report()),
            "theta": model.theta(),
            "gamma": model.gamma(),
            "theta_se": model.theta_se(),
            "gamma_se": model.gamma_se(),
        });
        std::fs::write(&report_path, text.to_string() + "\n").unwrap();
        timed(&mut rows, "write_report", t);
    }
    std::fs::remove_file(&model_path).ok();
    std::fs::remove_file(&report_path).ok();
    let mut out = serde_json::Map::new();
    println!(
        "\n## process: hetreward fit {file}, phase by phase (median of {})",
        cfg.reps
    );
    let read_validate = median(rows["read_and_validate"].clone());
    let validate = median(rows["validate"].clone());
    let mut total = 0.0;
    for (key, v) in &rows {
        let m = median(v.clone());
        println!("{key:<22} {m:>8.3} s");
        out.insert(key.to_string(), json!(m));
        if !matches!(*key, "validate") && !key.contains("floor") {
            total += m;
        }
    }
    println!(
        "{:<22} {:>8.3} s  (read {:.3} s + validate {validate:.3} s)",
        "total (in process)",
        total,
        read_validate - validate
    );
    out.insert("total_s".into(), json!(total));
    let floor: f64 = [
        "fs_read_floor",
        "floor_gram_f64",
        "floor_gram_f32",
        "floor_leverage_f32",
    ]
    .iter()
    .filter_map(|k| rows.get(k).map(|v| median(v.clone())))
    .sum();
    println!(
        "{:<22} {floor:>8.3} s  (read + one f64 Gram + one f32 Gram{}); total = {:.2}x the floor",
        "floor",
        if rows.contains_key("floor_leverage_f32") {
            " + the leverage's f32 product"
        } else {
            ""
        },
        total / floor
    );
    out.insert("floor_s".into(), json!(floor));
    rep.put("process", Value::Object(out));
}

// ------------------------------------------------------------------------------------------

fn main() {
    let cfg = parse_args();
    // glibc raises its mmap threshold (up to 32 MB) after large blocks are freed, after which
    // freed multi-megabyte buffers stay in the heap and in RSS; `--glibc-default-malloc` keeps
    // that behaviour, otherwise the threshold is pinned at 1 MiB so RSS follows the live data.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !std::env::args().any(|a| a == "--glibc-default-malloc") {
        // SAFETY: mallopt only sets an allocator parameter.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        }
    }
    let wants = |w: &str| cfg.only.iter().any(|o| o == w);
    let mut rep = Report {
        out: BTreeMap::new(),
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "# hetreward paper_scale benchmark — n = {}, d1 = {}, d2 = {}, z {}, {} threads; {} cores ({cpu}); FMA kernels: {}",
        cfg.n,
        cfg.d1,
        cfg.d2,
        if cfg.f32 { "f32" } else { "f64" },
        cfg.threads,
        std::thread::available_parallelism().map_or(0, |v| v.get()),
        hetreward::internals::linalg::has_fma()
    );
    rep.put(
        "config",
        json!({"n": cfg.n, "d1": cfg.d1, "d2": cfg.d2, "threads": cfg.threads, "f32": cfg.f32,
               "reps": cfg.reps, "seed": cfg.seed, "cpu": cpu, "smoke": cfg.smoke}),
    );
    let world = World::new(cfg.d1, cfg.d2, cfg.seed);
    let needs_data = ["floors", "fit", "agd", "score", "naive", "memory"]
        .iter()
        .any(|w| wants(w))
        || cfg.export.is_some()
        || cfg.write_training.is_some();
    let mut model = None;
    if needs_data {
        let t = Instant::now();
        let data = pool(cfg.threads).install(|| world.training(cfg.n, cfg.seed, cfg.f32));
        println!(
            "generated {} comparisons in {:.2} s; z = {:.0} MB; RSS {:.0} MB",
            data.n(),
            t.elapsed().as_secs_f64(),
            mb(z_bytes(&data)),
            mb(status_bytes("VmRSS:"))
        );
        if let Some(path) = &cfg.write_training {
            write_training(path, &data);
        }
        if wants("memory") {
            memory_workload(&cfg, &data, &mut rep);
        }
        let mut fast_total = None;
        if wants("fit") || wants("score") || wants("agd") || cfg.export.is_some() {
            let m = if wants("fit") {
                let m = fit_workload(&cfg, &data, &mut rep);
                fast_total = rep.out["fit"]["total_s"].as_f64();
                m
            } else {
                let options = FitOptions {
                    threads: cfg.threads,
                    ..FitOptions::default()
                };
                fit_once(&data, &options, &Tuning::default()).model
            };
            model = Some(m);
        }
        let fl = wants("floors").then(|| floors(&cfg, &data, &mut rep));
        if let Some(fl) = &fl {
            fit_floor_ratios(fl, &mut rep);
        }
        if wants("agd") {
            let optimum = model.as_ref().map_or(f64::NAN, |m| m.report().neg_loglik);
            agd_workload(&cfg, &data, fl.as_ref(), optimum, &mut rep);
        }
        if wants("naive") {
            naive_workload(&cfg, &data, fast_total, &mut rep);
        }
        if let Some(dir) = &cfg.export {
            export(dir, &world, &data, model.as_ref(), &cfg);
        }
    }
    if wants("score") {
        if let Some(m) = &model {
            score_workload(&cfg, &world, m, &mut rep);
        }
    }
    if wants("precision") {
        precision_workload(&cfg, &world, &mut rep);
    }
    if wants("gram") {
        gram_workload(&cfg, &mut rep);
    }
    if wants("process") {
        process_workload(&cfg, &mut rep);
    }
    if wants("scaling") {
        scaling_workload(&cfg, &mut rep);
    }
    if cfg.smoke {
        // Correctness checks of the tiny configuration (CI); never a timing.
        let get = |w: &str, k: &str| rep.out.get(w).and_then(|v| v.get(k)).cloned();
        let mut failures = Vec::new();
        if get("fit", "converged") == Some(json!(false)) {
            failures.push("the fit did not converge");
        }
        if get("fit", "se_theta_rel_vs_tight").and_then(|v| v.as_f64()) > Some(1e-6) {
            failures.push("theta SEs are not stable to 1e-6 against a tighter tolerance");
        }
        if get("score", "same_choices") == Some(json!(false)) {
            failures.push("pruned and full pBoN chose differently");
        }
        if get("precision", "theta_shift_in_se").and_then(|v| v.as_f64()) > Some(1e-3) {
            failures.push("f32 storage moved theta by more than 1e-3 SE");
        }
        if !failures.is_empty() {
            eprintln!("smoke run FAILED: {}", failures.join("; "));
            std::process::exit(1);
        }
        println!("\nsmoke checks passed");
    }
    if let Some(path) = &cfg.json {
        std::fs::write(path, serde_json::to_string_pretty(&rep.out).unwrap()).unwrap();
        println!("\nwrote {path}");
    }
}
