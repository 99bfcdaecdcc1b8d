//! Fuzzes the safetensors reader (it reads from a path, so each input is written to a file in
//! the temporary folder first) and the tables built on it. The first byte picks the model's d1
//! for the scoring readers. Any input is read or rejected with an error; nothing panics.
#![no_main]

use hetreward::data::Rows;
use hetreward::internals::io::{scoring, training, SafetensorsFile};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("hetreward-fuzz-{}.safetensors", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, bytes)) = data.split_first() else {
        return;
    };
    let d1 = 1 + (first % 4) as usize;
    let path = scratch();
    std::fs::write(path, bytes).expect("write the scratch file");
    let Ok(file) = SafetensorsFile::open(path) else {
        return;
    };
    if let Ok(data) = training::from_safetensors(&file, Rows::Whole) {
        assert!(data.n() > data.d1() + data.d2());
    }
    if let Ok(phi) = scoring::phi_from_safetensors(&file, d1) {
        assert_eq!(phi.phi.len(), phi.rows * d1);
    }
    if let Ok(pairs) = scoring::pairs_from_safetensors(&file, d1) {
        assert_eq!(pairs.phi1.len(), pairs.rows * d1);
    }
    if let Ok(c) = scoring::candidates_from_safetensors(&file, d1) {
        assert_eq!(c.group.len(), c.rows);
    }
});
