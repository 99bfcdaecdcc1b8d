use super::*;
use crate::select::{compare, DiffMethod};
use crate::stats::{critical_value, two_sided_p_value};

fn model(method: IntervalMethod) -> RewardModel {
    crate::testing::simulated_model(300, 21, method, 40, 3)
}

fn unit(d: usize, j: usize) -> Vec<f64> {
    let mut e = vec![0.0; d];
    e[j] = 1.0;
    e
}

#[test]
fn wald_rows_are_the_textbook_wald_test() {
    let m = model(IntervalMethod::Wald);
    let t = coefficients(&m, 0.05).unwrap();
    assert_eq!(t.method(), IntervalMethod::Wald);
    assert_eq!((t.theta().len(), t.gamma().len()), (m.d1(), m.d2()));
    let q = critical_value(0.05);
    for c in t.rows() {
        let (est, se) = match c.block {
            Block::Theta => (m.theta()[c.index], m.theta_se()[c.index]),
            Block::Gamma => (m.gamma()[c.index], m.gamma_se()[c.index]),
        };
        assert_eq!((c.estimate, c.se, c.z), (est, se, est / se));
        assert_eq!((c.lower, c.upper), (est - q * se, est + q * se));
        assert_eq!(c.p_value, two_sided_p_value(est / se));
        // At alpha = p the CI touches 0: the p-value and the interval are one test.
        let at_p = coefficient_unchecked(&m, c.block, c.index, c.p_value);
        let edge = if est > 0.0 { at_p.lower } else { at_p.upper };
        assert!(edge.abs() <= 1e-9 * se, "{}: {edge}", c.name());
    }
    // theta_j's test is the comparison of e_j with the zero answer; gamma_k's interval is the
    // rationality interval of psi = e_k, psi0 = 0.
    for j in 0..m.d1() {
        let c = compare(
            &m,
            &unit(m.d1(), j),
            &vec![0.0; m.d1()],
            0.05,
            DiffMethod::Exact,
        )
        .unwrap();
        let row = t.theta()[j];
        assert!((c.p_value - row.p_value).abs() <= 1e-12 * row.p_value.max(1e-300) + 1e-15);
        assert!((c.lower - row.lower).abs() <= 1e-12 * row.se);
    }
    for k in 0..m.d2() {
        let r = m.rationality_interval(0.0, &unit(m.d2(), k), 0.05).unwrap();
        let row = t.gamma()[k];
        assert!((r.lower - row.lower).abs() <= 1e-12 * row.se);
        assert!((r.upper - row.upper).abs() <= 1e-12 * row.se);
    }
    assert!(matches!(
        coefficients(&m, 1.0),
        Err(crate::Error::InvalidArgument { .. })
    ));
}

#[test]
fn bootstrap_rows_are_the_same_functionals_everywhere() {
    for method in [IntervalMethod::Bootstrap, IntervalMethod::Resized] {
        let m = model(method);
        let t = coefficients(&m, 0.1).unwrap();
        assert_eq!(t.method(), method);
        for j in 0..m.d1() {
            let e = unit(m.d1(), j);
            let row = t.theta()[j];
            // Bit-identical to the reward interval of e_j and to compare(e_j, 0).
            assert_eq!(
                row.interval(),
                m.reward_interval(&e, 0.1),
                "{method:?} theta[{j}]"
            );
            let c = compare(&m, &e, &vec![0.0; m.d1()], 0.1, DiffMethod::Exact).unwrap();
            assert_eq!(
                (row.p_value, row.lower, row.upper),
                (c.p_value, c.lower, c.upper)
            );
            assert_eq!(row.z, row.estimate / row.se);
            assert!(row.lower <= row.upper);
        }
        for k in 0..m.d2() {
            let r = m.rationality_interval(0.0, &unit(m.d2(), k), 0.1).unwrap();
            assert_eq!(t.gamma()[k].interval(), r, "{method:?} gamma[{k}]");
        }
        if method == IntervalMethod::Resized {
            let a = m.calibration().alpha_hat();
            assert_eq!(t.theta()[0].estimate, m.theta()[0] / a);
        }
        // The paper's table stays reachable.
        let wald = coefficients(&m.wald(), 0.1).unwrap();
        assert_eq!(wald.method(), IntervalMethod::Wald);
        assert_eq!(wald.theta()[0].se, m.theta_se()[0]);
    }
}

#[test]
fn display_is_compact_for_large_d1_unless_all_rows_are_asked_for() {
    let m = model(IntervalMethod::Wald);
    let small = coefficients(&m, 0.05).unwrap();
    let text = small.display(false).to_string();
    assert_eq!(text.lines().count(), 1 + m.d1() + m.d2());
    assert!(text.starts_with("parameter"));
    assert!(
        text.contains("ci95_lower") && text.contains("theta[0] ") && text.contains("gamma[1] ")
    );
    assert_eq!(text, small.display(true).to_string());
    // A table with many theta rows (built from repeated rows: the renderer is what is tested).
    let d1 = 3 * COMPACT_THETA_ROWS;
    let mut rows: Vec<Coefficient> = (0..d1)
        .map(|j| Coefficient {
            index: j,
            z: j as f64 - 20.0,
            p_value: if j % 3 == 0 { 0.001 } else { 0.5 },
            ..small.theta()[j % m.d1()]
        })
        .collect();
    rows.extend_from_slice(small.gamma());
    let big = CoefficientTable {
        alpha: 0.05,
        method: IntervalMethod::Wald,
        d1,
        rows,
    };
    let compact = big.display(false).to_string();
    assert_eq!(
        compact.lines().count(),
        1 + 1 + COMPACT_THETA_SHOWN + 1 + m.d2()
    );
    assert!(compact.contains(&format!(
        "theta: {d1} coefficients, {} with p < 0.05",
        d1 / 3
    )));
    // The largest |z| first: theta[149] (z = 129), then 148, ...
    let first = compact.lines().nth(2).unwrap();
    assert!(first.starts_with(&format!("theta[{}] ", d1 - 1)), "{first}");
    assert!(compact.contains("gamma[0] ") && compact.contains("gamma[1] "));
    let full = big.display(true).to_string();
    assert_eq!(full.lines().count(), 1 + d1 + m.d2());
}

#[test]
fn stacked_indices_round_trip_at_the_block_boundary() {
    let d1 = 3;
    let expected = [
        (Block::Theta, 0),
        (Block::Theta, 1),
        (Block::Theta, 2),
        (Block::Gamma, 0),
        (Block::Gamma, 1),
    ];
    for (stacked, &(block, index)) in expected.iter().enumerate() {
        assert_eq!(Block::of_stacked(stacked, d1), (block, index));
        assert_eq!(block.stacked(index, d1), stacked);
    }
}
