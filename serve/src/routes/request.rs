//! Reading a request body: UTF-8 (400 naming the field), JSON, an object.

use crate::error::ApiError;
use crate::utf8;
use serde_json::{Map, Value};

/// The body as a JSON object, or the 400 the contract gives a body that is not one.
pub fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if let Some(field) = utf8::invalid_field(body) {
        return Err(ApiError::invalid(
            format!("`{field}` is not valid UTF-8"),
            Some(&field),
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid(
            "the request body must be a JSON object",
            None,
        )),
        Err(e) => Err(ApiError::invalid(format!("malformed JSON: {e}"), None)),
    }
}

/// An optional integer field: `None` when absent or null; 400 when not an integer in
/// `[min, max]`.
pub fn opt_int(
    map: &Map<String, Value>,
    key: &str,
    min: u64,
    max: u64,
) -> Result<Option<usize>, ApiError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15)
                    .map(|f| f as u64)
            });
            match n {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n as usize)),
                _ => Err(ApiError::invalid(
                    format!("`{key}` must be an integer in [{min}, {max}], got {v}"),
                    Some(key),
                )),
            }
        }
    }
}

/// The intervals' `alpha` (a gateway extension field of every scoring route): `default` when
/// absent or null; 400 when not a number in (0, 1).
pub fn opt_alpha(map: &Map<String, Value>, default: f64) -> Result<f64, ApiError> {
    match map.get("alpha") {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_f64() {
            Some(a) if a > 0.0 && a < 1.0 => Ok(a),
            _ => Err(ApiError::invalid(
                format!("`alpha` must be a number in (0, 1), got {v}"),
                Some("alpha"),
            )),
        },
    }
}
