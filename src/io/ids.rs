//! Integer ids read from a numeric column or tensor (cluster ids of training data, group ids of
//! candidates): one rule, one message.

/// The ids in `values` (`what` names them in messages: "cluster id", "group id"), each an
/// integer below 2^53 in magnitude (where `f64` holds every integer exactly); `place(row)`
/// names the offending cell ("column `cluster`, data row 8" — 1-based in CSV — or "tensor
/// `cluster`, row 7").
pub(crate) fn integer_ids(
    values: &[f64],
    what: &str,
    place: impl Fn(usize) -> String,
) -> std::result::Result<Vec<i64>, String> {
    values
        .iter()
        .enumerate()
        .map(|(r, &v)| {
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok(v as i64)
            } else {
                Err(format!("{}: {what} {v} is not an integer", place(r)))
            }
        })
        .collect()
}
