//! Weighs faer against the crate's hand-written dense kernels (issue 12, BENCHMARKS.md
//! "Linear algebra: faer against the hand-written kernels"), same process, same inputs:
//! SYRK / Gram (`A^T A`, lower triangle), Cholesky, triangular inverse and GEMM, at a large
//! and a small size. Prints the best of `--reps` wall times, the ratio, the largest relative
//! difference between the two results and whether faer's results are bit-identical on 1 and
//! 2 threads.
//!
//! `cargo bench --bench faer_weigh -- [--sizes 2048,256] [--rows 16384] [--reps 3]`
//!
//! Measured at the commit that introduced it, when `hetreward::linalg` still held its own
//! blocked kernels; after the move to faer it compares the crate's wrappers with bare faer
//! calls (their overhead).

use faer::linalg::matmul::triangular::BlockStructure;
use faer::{Accum, Mat, MatRef, Par};
use nalgebra::DMatrix;
use std::time::Instant;

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn best<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    (best, out.unwrap())
}

fn rand_buf(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        })
        .collect()
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

fn lower_of(m: MatRef<'_, f64>) -> Vec<f64> {
    let n = m.nrows();
    let mut v = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            v[j * n + i] = m[(i, j)];
        }
    }
    v
}

fn lower_dm(m: &DMatrix<f64>) -> Vec<f64> {
    let n = m.nrows();
    let mut v = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            v[j * n + i] = m[(i, j)];
        }
    }
    v
}

fn faer_syrk(a: &[f64], rows: usize, p: usize) -> Mat<f64> {
    let av = MatRef::from_row_major_slice(a, rows, p);
    let mut c = Mat::<f64>::zeros(p, p);
    faer::linalg::matmul::triangular::matmul(
        c.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        av.transpose(),
        BlockStructure::Rectangular,
        av,
        BlockStructure::Rectangular,
        1.0 / rows as f64,
        Par::rayon(0),
    );
    c
}

fn faer_chol(a: &DMatrix<f64>) -> Mat<f64> {
    let n = a.nrows();
    let mut l = Mat::from_fn(n, n, |i, j| a[(i, j)]);
    let par = Par::rayon(0);
    let mut mem = faer::dyn_stack::MemBuffer::new(
        faer::linalg::cholesky::llt::factor::cholesky_in_place_scratch::<f64>(
            n,
            par,
            Default::default(),
        ),
    );
    faer::linalg::cholesky::llt::factor::cholesky_in_place(
        l.as_mut(),
        Default::default(),
        par,
        faer::dyn_stack::MemStack::new(&mut mem),
        Default::default(),
    )
    .expect("SPD");
    l
}

fn faer_trinv(l: &Mat<f64>) -> Mat<f64> {
    let n = l.nrows();
    let mut x = Mat::<f64>::zeros(n, n);
    faer::linalg::triangular_inverse::invert_lower_triangular(
        x.as_mut(),
        l.as_ref(),
        Par::rayon(0),
    );
    x
}

fn faer_gemm(a: &DMatrix<f64>, b: &DMatrix<f64>) -> Mat<f64> {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let av = MatRef::from_column_major_slice(a.as_slice(), m, k);
    let bv = MatRef::from_column_major_slice(b.as_slice(), k, n);
    let mut c = Mat::<f64>::zeros(m, n);
    faer::linalg::matmul::matmul(c.as_mut(), Accum::Replace, av, bv, 1.0, Par::rayon(0));
    c
}

fn bits(m: &Mat<f64>) -> Vec<u64> {
    let mut v = Vec::with_capacity(m.nrows() * m.ncols());
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            v.push(m[(i, j)].to_bits());
        }
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--sizes", "2048,256")
        .split(',')
        .map(|s| s.parse().expect("--sizes: integers"))
        .collect();
    let rows: usize = arg(&args, "--rows", "16384").parse().expect("--rows");
    let reps: usize = arg(&args, "--reps", "3").parse().expect("--reps");
    println!(
        "rayon threads {}; SYRK rows {rows}; best of {reps}",
        rayon::current_num_threads()
    );
    println!(
        "{:<18} {:>6} {:>11} {:>11} {:>9} {:>10} {:>12}",
        "kernel", "size", "project s", "faer s", "ratio", "max rel", "faer 1v2 thr"
    );
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .iter()
        .map(|&t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        })
        .collect();
    let same_bits = |f: &(dyn Fn() -> Mat<f64> + Sync)| {
        let one = pools[0].install(|| bits(&f()));
        let two = pools[1].install(|| bits(&f()));
        one == two
    };
    let row = |name: &str, p: usize, tp: f64, tf: f64, rel: f64, same: bool| {
        println!(
            "{name:<18} {p:>6} {tp:>11.4} {tf:>11.4} {:>8.2}x {rel:>10.1e} {:>12}",
            tp / tf,
            if same { "identical" } else { "DIFFERENT" }
        );
    };
    for &p in &sizes {
        let n = if p >= 1024 { rows } else { rows.min(4 * p) };
        let a = rand_buf(n * p, p as u64);
        // SYRK / Gram: A^T A / n over row-major rows.
        let (tp, g) = best(reps, || {
            hetreward::internals::linalg::gram(n, p, n as f64, |i, out| {
                out.copy_from_slice(&a[i * p..(i + 1) * p])
            })
        });
        let (tf, gf) = best(reps, || faer_syrk(&a, n, p));
        let same = same_bits(&|| faer_syrk(&a, n, p));
        row(
            "syrk/gram",
            p,
            tp,
            tf,
            max_rel(&lower_dm(&g), &lower_of(gf.as_ref())),
            same,
        );
        // Cholesky of the (well-conditioned) Gram.
        let mut spd = g.clone();
        for i in 0..p {
            spd[(i, i)] += 0.01;
        }
        let (tp, l) = best(reps, || {
            hetreward::internals::linalg::cholesky(&spd, "A").unwrap()
        });
        let (tf, lf) = best(reps, || faer_chol(&spd));
        let same = same_bits(&|| faer_chol(&spd));
        row(
            "cholesky",
            p,
            tp,
            tf,
            max_rel(&lower_dm(&l), &lower_of(lf.as_ref())),
            same,
        );
        // Triangular inverse of the factor.
        let (tp, x) = best(reps, || {
            let mut x = l.clone();
            hetreward::internals::linalg::lower_inverse_in_place(&mut x);
            x
        });
        let (tf, xf) = best(reps, || faer_trinv(&lf));
        let same = same_bits(&|| faer_trinv(&lf));
        row(
            "triangular inverse",
            p,
            tp,
            tf,
            max_rel(&lower_dm(&x), &lower_of(xf.as_ref())),
            same,
        );
        // GEMM, square.
        let b1 = DMatrix::from_vec(p, p, rand_buf(p * p, 7));
        let b2 = DMatrix::from_vec(p, p, rand_buf(p * p, 8));
        let (tp, c) = best(reps, || hetreward::internals::linalg::matmul(&b1, &b2));
        let (tf, cf) = best(reps, || faer_gemm(&b1, &b2));
        let same = same_bits(&|| faer_gemm(&b1, &b2));
        let cf_v: Vec<f64> = (0..p * p).map(|k| cf[(k % p, k / p)]).collect();
        row("gemm", p, tp, tf, max_rel(c.as_slice(), &cf_v), same);
    }
}
