//! Fuzzes the model-file loader: any bytes are either rejected with a format error naming the
//! input, or parsed into a model that serialises back to exactly the same bytes (a version-1
//! file: to a current-version file that reads back as the same model) and scores without
//! panicking.
#![no_main]

use hetreward::io::model_file::{from_bytes, to_bytes, OLDEST_VERSION};
use hetreward::Error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match from_bytes(data, "<fuzz>") {
        Ok(model) => {
            let bytes = to_bytes(&model);
            if data[8..12] != OLDEST_VERSION.to_le_bytes() {
                assert_eq!(bytes, data, "an accepted model file is not canonical");
            } else {
                let again = from_bytes(&bytes, "<fuzz>").expect("an upgraded file reads back");
                assert_eq!(
                    again, model,
                    "an upgraded model file reads back differently"
                );
            }
            let phi = vec![0.5; model.d1()];
            if let Ok(ci) = model.score(&phi, 0.05) {
                // Unbounded only where the model records an unbounded coefficient.
                let recorded = !model.calibration().unbounded().is_empty();
                assert!(
                    (ci.lower.is_finite() && ci.upper.is_finite()) || (ci.is_unbounded() && recorded)
                );
            }
            let psi = vec![0.5; model.d2()];
            let _ = model.rationality(1.0, &psi);
        }
        Err(Error::Format { path, .. }) => assert_eq!(path, "<fuzz>"),
        Err(other) => panic!("not a format error: {other:?}"),
    }
});
