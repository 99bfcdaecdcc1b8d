//! The C API's pBoN call as users make it (BENCHMARKS.md, "pBoN through the C API").
//!
//! ```text
//! cargo bench --bench select_capi -- [--n N] [--d1 D1] [--d2 D2] [--prompts P] [--reps R]
//! ```
//!
//! Fits a Wald model on `sim::high_dimensional` data (default: the paper's shape, n = 33,845,
//! d1 = 2048, d2 = 38; 2 threads), hands it to the C API (`hetreward_model_load_buffer`) and
//! times one `hetreward_model_select` of 128 `f32` candidates (drawn as the training z are)
//! on the calling thread, two ways in the same run, interleaved prompt by prompt:
//!
//! * with `out_candidates` (every candidate's figures: every SE is computed, which is what
//!   the call always did before the pruned path reached it);
//! * with `out_candidates` NULL (only the index: the pruned search of `select::select_best`).
//!
//! Both must choose the same index for every prompt (checked). A measurement tool, not a test.

use hetreward::fit::{FitControl, FitOptions};
use hetreward::inference::CovarianceKind;
use hetreward::internals::ffi::{
    hetreward_candidate, hetreward_model, hetreward_model_free, hetreward_model_load_buffer,
    hetreward_model_select, hetreward_reward, hetreward_status, HETREWARD_POLICY_PBON,
};
use hetreward::io::model_file;
use hetreward::select::{select_best, Policy};
use hetreward::sim::{high_dimensional, rng};
use hetreward::RewardModel;
use rand::Rng;
use rand_distr::StandardNormal;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |f: &str, d: usize| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (n, d1, d2) = (value("--n", 33_845), value("--d1", 2048), value("--d2", 38));
    let (prompts, reps) = (value("--prompts", 20), value("--reps", 5));
    const CANDIDATES: usize = 128;
    let t = Instant::now();
    let (data, _) = high_dimensional(n, d1, d2, 11);
    let options = FitOptions {
        threads: 2,
        ..FitOptions::default()
    };
    let model = RewardModel::estimate(
        &data,
        &options,
        CovarianceKind::Expected,
        &FitControl::default(),
    )
    .expect("fit");
    println!(
        "# pBoN through the C API: n = {n}, d1 = {d1}, d2 = {d2}; fitted in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let bytes = model_file::to_bytes(&model);
    let mut handle: *mut hetreward_model = std::ptr::null_mut();
    let s = hetreward_model_load_buffer(bytes.as_ptr(), bytes.len(), &mut handle);
    assert_eq!(s, hetreward_status::HETREWARD_OK);
    let mut r = rng(5);
    let mut figures = vec![hetreward_candidate_zero(); CANDIDATES];
    let (mut every, mut pruned) = (Vec::new(), Vec::new());
    let mut agree = true;
    let mut se_computed = 0;
    for _ in 0..prompts {
        let phi: Vec<f32> = (0..CANDIDATES * d1)
            .map(|_| r.sample::<f32, _>(StandardNormal))
            .collect();
        let call = |out: *mut hetreward_candidate| -> (f64, usize) {
            let mut index = usize::MAX;
            let t = Instant::now();
            let s = hetreward_model_select(
                handle,
                phi.as_ptr(),
                CANDIDATES,
                d1,
                std::ptr::null(),
                0.05,
                HETREWARD_POLICY_PBON,
                &mut index,
                out,
            );
            let dt = t.elapsed().as_secs_f64();
            assert_eq!(s, hetreward_status::HETREWARD_OK);
            (dt, index)
        };
        se_computed += select_best(&model, &phi, None, 0.05, Policy::Pbon)
            .expect("select_best")
            .se_computed;
        for _ in 0..reps {
            let (t_all, i_all) = call(figures.as_mut_ptr());
            let (t_pruned, i_pruned) = call(std::ptr::null_mut());
            every.push(t_all);
            pruned.push(t_pruned);
            agree &= i_all == i_pruned;
        }
    }
    hetreward_model_free(handle);
    let (a, b) = (median(every), median(pruned));
    println!(
        "hetreward_model_select, {CANDIDATES} candidates, 1 thread, median of {} calls:",
        prompts * reps
    );
    println!("  with out_candidates (every SE)    {:8.3} ms", 1e3 * a);
    println!("  out_candidates NULL (pruned)      {:8.3} ms", 1e3 * b);
    println!("  ratio                             {:8.1}x", a / b);
    println!("  same index on every prompt: {agree}");
    println!(
        "  SEs computed by the pruned search: {:.1} of {CANDIDATES} per prompt (mean)",
        se_computed as f64 / prompts as f64
    );
    assert!(agree, "the pruned call chose another index");
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
