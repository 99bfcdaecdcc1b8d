//! Fuzzes the CSV reader and the tables built on it. The first byte picks the model's d1 for the
//! scoring readers; the rest is the file. Any input is either read or rejected with an error;
//! nothing panics, and accepted tables have consistent shapes and finite values.
#![no_main]

use hetreward::data::Rows;
use hetreward::internals::io::{scoring, training, CsvTable};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, text)) = data.split_first() else {
        return;
    };
    let d1 = 1 + (first % 4) as usize;
    let Ok(table) = CsvTable::from_reader("<fuzz>", text) else {
        return;
    };
    assert_eq!(table.values.len(), table.rows * table.columns.len());
    assert!(table.values.iter().all(|v| v.is_finite()));
    if let Ok(data) = training::from_csv(&table, Rows::Whole) {
        assert!(data.n() > data.d1() + data.d2());
        assert!(data.y().iter().all(|&y| y == 0.0 || y == 1.0));
    }
    if let Ok(phi) = scoring::phi_from_csv(&table, d1) {
        assert_eq!(phi.phi.len(), phi.rows * d1);
    }
    if let Ok(pairs) = scoring::pairs_from_csv(&table, d1) {
        assert_eq!(pairs.phi0.len(), pairs.rows * d1);
        assert_eq!(pairs.phi1.len(), pairs.rows * d1);
    }
    if let Ok(c) = scoring::candidates_from_csv(&table, d1) {
        assert_eq!(c.phi.len(), c.rows * d1);
        assert_eq!(c.group.len(), c.rows);
    }
});
