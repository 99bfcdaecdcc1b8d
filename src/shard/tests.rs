use super::stats::merge_in_order;
use super::*;
use crate::data::{Dataset, Rows};
use crate::error::Error;
use crate::fit::{fit, FitControl, FitOptions, NewtonVariant};
use crate::likelihood::{expected_information, observed_hessian, score_outer_product};
use crate::likelihood::{nll_and_gradient, Curvature};
use crate::model::Params;
use crate::sim::{one_hot_groups, paper_simulation, ActionDesign};
use crate::testing::{contiguous, shuffled, split_rows, with_clusters};
use nalgebra::DMatrix;

fn fixture() -> (Dataset, Params) {
    let base = paper_simulation(600, ActionDesign::Uniform, 5);
    // Ids spread over every shard (i % 23), negative ones included.
    let data = with_clusters(&base, |i| (i % 23) as i64 - 5);
    let params = Params {
        theta: vec![0.3, 0.45, 0.2],
        gamma: vec![0.4, 0.25],
    };
    (data, params)
}

fn everything(params: &Params, p: usize) -> Request {
    let mut r = Request::at(params.clone());
    r.value = true;
    r.products = (0..3)
        .map(|k| (0..p).map(|j| ((j + 2 * k) as f64 * 0.7).sin()).collect())
        .collect();
    r.curvature = Curvature::Observed;
    r.expected = true;
    r.observed = true;
    r.meat = true;
    r.clusters = true;
    r
}

fn close(a: &[f64], b: &[f64], rtol: f64) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= rtol * (1.0 + y.abs()))
}

#[test]
fn merged_shards_equal_the_whole_dataset() {
    let (data, params) = fixture();
    let p = data.n_params();
    let request = everything(&params, p);
    let whole = ShardStats::compute(&data, &request).unwrap();
    let shards = split_rows(&data, &shuffled(data.n(), 4, 1));
    let parts = shards
        .iter()
        .map(|s| ShardStats::compute(s, &request).unwrap())
        .collect();
    let merged = merge_in_order(parts).unwrap();
    assert_eq!(merged.n(), 600);
    let n = 600.0;
    // Sums are n times the single-process means.
    let (nll, grad) = nll_and_gradient(&data, &params);
    assert!((merged.nll_sum().unwrap() / n - nll).abs() < 1e-13);
    let g: Vec<f64> = merged.grad_sum().unwrap().iter().map(|v| v / n).collect();
    assert!(close(&g, &grad, 1e-12));
    for k in 0..3 {
        assert!(close(
            merged.product(k).unwrap(),
            whole.product(k).unwrap(),
            1e-12
        ));
    }
    assert!(merged.product(3).is_err());
    let tol = 1e-12;
    let m = |a: DMatrix<f64>, b: DMatrix<f64>| (a - &b).abs().max() <= tol * b.abs().max();
    assert!(m(
        merged.expected(n).unwrap(),
        expected_information(&data, &params)
    ));
    assert!(m(
        merged.observed(n).unwrap(),
        observed_hessian(&data, &params)
    ));
    assert!(m(
        merged.meat(n).unwrap(),
        score_outer_product(&data, &params, false)
    ));
    // Clusters span shards: their sums are added by id before the outer products.
    assert_eq!(merged.clusters().unwrap().len(), 23);
    assert!(m(
        merged.cluster_meat(n).unwrap(),
        score_outer_product(&data, &params, true)
    ));
    // The clustered meat differs from the per-sample one (a test that can fail).
    assert!(
        (merged.cluster_meat(n).unwrap() - merged.meat(n).unwrap())
            .abs()
            .max()
            > 1e-3
    );
}

#[test]
fn merge_is_associative_and_order_changes_only_rounding() {
    let (data, params) = fixture();
    let request = everything(&params, data.n_params());
    let shards = split_rows(&data, &contiguous(data.n(), 3));
    let s: Vec<ShardStats> = shards
        .iter()
        .map(|d| ShardStats::compute(d, &request).unwrap())
        .collect();
    let mut left = s[0].clone();
    left.merge(&s[1]).unwrap();
    left.merge(&s[2]).unwrap();
    let mut right = s[1].clone();
    right.merge(&s[2]).unwrap();
    let mut right_total = s[0].clone();
    right_total.merge(&right).unwrap();
    let mut reversed = s[2].clone();
    reversed.merge(&s[1]).unwrap();
    reversed.merge(&s[0]).unwrap();
    for other in [&right_total, &reversed] {
        assert_eq!(left.n(), other.n());
        assert_eq!(left.sections, other.sections);
        for (x, y) in [
            (&left.grad, &other.grad),
            (&left.products, &other.products),
            (&left.expected, &other.expected),
            (&left.observed, &other.observed),
            (&left.meat, &other.meat),
        ] {
            assert!(close(x, y, 1e-12));
        }
        assert!((left.nll - other.nll).abs() <= 1e-12 * left.nll.abs());
        assert_eq!(
            left.clusters.keys().collect::<Vec<_>>(),
            other.clusters.keys().collect::<Vec<_>>()
        );
        for (a, b) in left.clusters.values().zip(other.clusters.values()) {
            assert!(close(a, b, 1e-12));
        }
    }
    // A fixed merge order is reproducible to the bit.
    let again = merge_in_order(s.clone()).unwrap();
    assert_eq!(again, left);
}

#[test]
fn merging_answers_to_different_requests_is_refused() {
    let (data, params) = fixture();
    let mut a = Request::at(params.clone());
    a.value = true;
    let mut b = a.clone();
    b.expected = true;
    let sa = ShardStats::compute(&data, &a).unwrap();
    let sb = ShardStats::compute(&data, &b).unwrap();
    let err = merge_in_order(vec![sa.clone(), sb]).unwrap_err();
    assert!(
        matches!(&err, Error::DimensionMismatch { arg, .. } if arg == "shard 1"),
        "{err}"
    );
    // A section that was not requested is an error, not zeros.
    assert!(sa.expected(1.0).is_err() && sa.clusters().is_err());
    let other = one_hot_groups(200, &[0.3, 0.2], &[0.5], 1);
    let so = ShardStats::compute(&other, &Request::at(Params::zeros(2, 1))).unwrap();
    assert!(matches!(
        sa.clone().merge(&so),
        Err(Error::DimensionMismatch { .. })
    ));
}

#[test]
fn requests_are_checked() {
    let (data, params) = fixture();
    let mut r = Request::at(Params::zeros(2, 2));
    assert!(matches!(
        ShardStats::compute(&data, &r),
        Err(Error::DimensionMismatch { .. })
    ));
    r.params = params.clone();
    r.products = vec![vec![1.0; 4]];
    assert!(matches!(
        ShardStats::compute(&data, &r),
        Err(Error::DimensionMismatch { arg, .. }) if arg == "products[0]"
    ));
    r.products = vec![vec![1.0, f64::NAN, 0.0, 0.0, 0.0]];
    assert!(matches!(
        ShardStats::compute(&data, &r),
        Err(Error::NonFinite { .. })
    ));
    let plain = paper_simulation(100, ActionDesign::Uniform, 1);
    let mut r = Request::at(params);
    r.clusters = true;
    assert!(matches!(
        ShardStats::compute(&plain, &r),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn bytes_round_trip_exactly() {
    let (data, params) = fixture();
    for request in [everything(&params, 5), Request::at(params.clone())] {
        let stats = ShardStats::compute(&data, &request).unwrap();
        let bytes = stats.to_bytes();
        assert_eq!(ShardStats::from_bytes(&bytes).unwrap(), stats);
    }
}

fn format_detail(bytes: &[u8]) -> String {
    match ShardStats::from_bytes(bytes) {
        Err(Error::Format { detail, .. }) => detail,
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn damaged_bytes_are_refused_with_what_is_wrong() {
    let (data, params) = fixture();
    let bytes = ShardStats::compute(&data, &everything(&params, 5))
        .unwrap()
        .to_bytes();
    assert!(format_detail(&bytes[..10]).contains("shorter"));
    let mut b = bytes.clone();
    b[0] = b'X';
    assert!(format_detail(&b).contains("magic"));
    let mut b = bytes.clone();
    b[8] = 2;
    assert!(format_detail(&b).contains("version 2"));
    // Every single-bit flip past the version is caught by the checksum.
    for at in [
        12,
        40,
        60,
        bytes.len() / 2,
        bytes.len() - 5,
        bytes.len() - 1,
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        assert!(format_detail(&b).contains("checksum"), "byte {at}");
    }
    assert!(format_detail(&bytes[..bytes.len() - 8]).contains("checksum"));
    // A well-formed checksum over an inconsistent header: the length check names it.
    let mut b = bytes[..bytes.len() - 4].to_vec();
    b[12] = 200; // d1
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    assert!(format_detail(&b).contains("do not match the header"));
    // Huge dimensions are refused before any allocation.
    let mut b = bytes[..bytes.len() - 4].to_vec();
    b[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    assert!(format_detail(&b).contains("do not match the header"));
}

#[test]
fn summaries_catch_mismatched_shards() {
    let a = one_hot_groups(200, &[0.3, 0.2], &[0.5], 1);
    let b = one_hot_groups(300, &[0.3, 0.2, 0.1], &[0.5], 2);
    let c = with_clusters(&a, |i| i as i64);
    let sa = ShardSummary::of(&a);
    let total = merge_summaries(&[sa, sa]).unwrap();
    assert_eq!(
        (total.n, total.d1, total.d2, total.clustered),
        (400, 2, 1, false)
    );
    let err = merge_summaries(&[sa, sa, ShardSummary::of(&b)]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("shard 2") && text.contains("d1 = 3"),
        "{text}"
    );
    let err = merge_summaries(&[sa, ShardSummary::of(&c)]).unwrap_err();
    assert!(err.to_string().contains("with cluster ids"), "{err}");
    let mut damaged = sa;
    damaged.d2 = 2;
    assert!(merge_summaries(&[sa, damaged]).is_err());
    assert!(merge_summaries(&[]).is_err());
}

#[test]
fn any_header_with_a_valid_checksum_is_read_or_refused_never_a_panic() {
    // Every header byte set to values that stress sizes (0, 1, 0x7f, 0xff), the checksum made
    // valid again so that the header checks, not the CRC, must catch the damage.
    let (data, params) = fixture();
    let small = split_rows(&data, &[(0..40).collect()]).remove(0);
    let mut request = everything(&params, 5);
    request.products.truncate(1);
    let bytes = ShardStats::compute(&small, &request).unwrap().to_bytes();
    let body = bytes.len() - 4;
    for at in 0..56 {
        for value in [0u8, 1, 0x7f, 0xff] {
            let mut b = bytes[..body].to_vec();
            if b[at] == value {
                continue;
            }
            b[at] = value;
            let crc = crc32fast::hash(&b);
            b.extend_from_slice(&crc.to_le_bytes());
            match ShardStats::from_bytes(&b) {
                Err(Error::Format { .. }) => {}
                // Only the row count (bytes 32..40) may change without breaking the layout.
                Ok(s) => assert!((32..40).contains(&at), "byte {at} = {value}: read {s:?}"),
                Err(e) => panic!("byte {at} = {value}: {e}"),
            }
        }
    }
}

#[test]
fn requests_round_trip_through_bytes_and_damage_is_refused() {
    let (data, params) = fixture();
    let mut expected = everything(&params, 5);
    expected.curvature = Curvature::Expected;
    for request in [
        everything(&params, 5),
        expected,
        Request::at(params.clone()),
    ] {
        let bytes = request.to_bytes();
        let back = Request::from_bytes(&bytes).unwrap();
        assert_eq!(back, request);
        // The answer computed from the bytes is the answer to the request.
        let answer = ShardStats::compute(&data, &back).unwrap();
        answer.check_answers(&request, data.n() as u64).unwrap();
    }
    let bytes = everything(&params, 5).to_bytes();
    let detail = |b: &[u8]| match Request::from_bytes(b) {
        Err(Error::Format { detail, .. }) => detail,
        other => panic!("expected a format error, got {other:?}"),
    };
    assert!(detail(&bytes[..10]).contains("shorter"));
    assert!(detail(
        &ShardStats::compute(&data, &Request::at(params.clone()))
            .unwrap()
            .to_bytes()
    )
    .contains("magic"));
    let mut flipped = bytes.clone();
    flipped[40] ^= 1;
    assert!(detail(&flipped).contains("checksum"));
    let mut truncated = bytes[..bytes.len() - 12].to_vec();
    let crc = crc32fast::hash(&truncated);
    truncated.extend_from_slice(&crc.to_le_bytes());
    assert!(detail(&truncated).contains("do not match the header"));
}

#[test]
fn answers_are_checked_against_their_request() {
    let (data, params) = fixture();
    let request = everything(&params, 5);
    let answer = ShardStats::compute(&data, &request).unwrap();
    let n = data.n() as u64;
    answer.check_answers(&request, n).unwrap();
    // A shard missing from the merge, another request, other parameters' dimensions.
    let wrong = [
        answer.check_answers(&request, n + 1),
        answer.check_answers(&Request::at(params.clone()), n),
        answer.check_answers(&everything(&Params::zeros(2, 2), 4), n),
    ];
    for err in wrong {
        assert!(
            matches!(&err, Err(Error::DimensionMismatch { arg, .. }) if arg == "answer"),
            "{err:?}"
        );
    }
}

/// Identifiability is the merged data's (issue 22): shards of 2 rows (fewer than the 5
/// parameters, with psi0 in the span of each shard's psi) fit to the one-process model, a
/// total of too few rows fails at the summaries naming them, and a psi0 that does not
/// identify the scale in the merged data is singular information, not a model.
#[test]
fn identifiability_is_checked_on_the_merged_shards_only() {
    let data = paper_simulation(600, ActionDesign::Uniform, 5);
    let parts: Vec<Vec<usize>> = (0..300).map(|k| vec![2 * k, 2 * k + 1]).collect();
    let shards = split_rows(&data, &parts);
    // As a whole training set, a 2-row shard is refused.
    let (d1, d2) = (data.d1(), data.d2());
    let two = &shards[0];
    let whole = Dataset::new(
        d1,
        d2,
        two.z().to_vec(),
        two.psi0().to_vec(),
        two.psi().to_vec(),
        two.y().to_vec(),
        None,
    );
    assert!(whole.is_err_and(|e| e.to_string().contains("2 samples cannot identify 5")));
    let options = FitOptions {
        tol: 1e-12,
        ..FitOptions::default()
    };
    let control = FitControl::default();
    let mut oracle = driver::LocalOracle::new(shards);
    let got = driver::fit_distributed(&mut oracle, &options, NewtonVariant::Auto, &control, None)
        .unwrap();
    let want = fit(&data, &options, &control).unwrap();
    for (a, b) in got.fit.params.theta.iter().zip(&want.params.theta) {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
    }
    for (a, b) in got.fit.params.gamma.iter().zip(&want.params.gamma) {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
    }

    // Too few rows in all: refused at the summaries, before any round.
    let few = split_rows(&data, &[vec![0, 1], vec![2, 3], vec![4]]);
    let summaries: Vec<ShardSummary> = few.iter().map(ShardSummary::of).collect();
    let err = merge_summaries(&summaries).unwrap_err().to_string();
    assert!(
        err.contains("shards") && err.contains("5 samples cannot identify 5 parameters"),
        "{err}"
    );

    // psi0 = the first column of psi on every row: the scale is not identifiable.
    let psi0: Vec<f64> = (0..data.n()).map(|i| data.psi_row(i)[0]).collect();
    let flat = Dataset::with_rows(
        Rows::Shard,
        d1,
        d2,
        data.z().to_vec(),
        psi0,
        data.psi().to_vec(),
        data.y().to_vec(),
        None,
    )
    .unwrap();
    let mut oracle = driver::LocalOracle::new(split_rows(&flat, &contiguous(600, 4)));
    let result =
        driver::fit_distributed(&mut oracle, &options, NewtonVariant::Auto, &control, None)
            .and_then(|f| f.model(crate::covariance::CovarianceKind::Expected));
    assert!(
        matches!(result, Err(Error::SingularInformation { .. })),
        "{:?}",
        result.err()
    );
}
