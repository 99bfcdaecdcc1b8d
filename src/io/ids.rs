//! Integer ids read from files (cluster ids of training data, group ids of candidates): one rule
//! of what an id is, one message for a value that is not one.
//!
//! Every id a format can hold exactly is accepted, whole: any 64-bit signed integer written in
//! a CSV field (parsed from its text, never through a double: `9007199254740993` is that
//! number, not 2^53), every value of an integer tensor that fits 64 signed bits, and the
//! integers a float tensor tells apart from their neighbours (|v| < 2^53 in F64, 2^24 in F32).
//! A refused value is quoted as it was written (CSV) or stored (safetensors), with its place.

/// The columns (CSV) and tensors (safetensors) of docs/contract.md §6 that hold integer ids: their CSV text
/// is kept so that ids are parsed exactly.
pub(crate) const ID_COLUMNS: [&str; 2] = ["cluster", "group"];

/// Why a written value is not an id.
pub(crate) type Why = &'static str;

const NOT_INTEGER: Why = "is not an integer";
const OUT_OF_RANGE: Why =
    "is outside the range of 64-bit ids (-9223372036854775808 to 9223372036854775807)";

/// The id written in `text` (a CSV field, surrounding whitespace ignored): an integer in
/// decimal notation, optionally with a fraction of zeros or an exponent (`7`, `-3`, `7.0`,
/// `1e3`, `1.5e1`), computed exactly from the digits.
pub(crate) fn from_text(text: &str) -> Result<i64, Why> {
    let t = text.trim();
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_only(whole) || !digits_only(fraction) {
        return Err(NOT_INTEGER);
    }
    // The value is digits x 10^scale, with the digits' leading and trailing zeros dropped.
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let significant = digits.trim_end_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let (sign, magnitude) = match e.as_bytes().first() {
                Some(b'-') => (-1, &e[1..]),
                Some(b'+') => (1, &e[1..]),
                _ => (1, e),
            };
            if magnitude.is_empty() || !digits_only(magnitude) {
                return Err(NOT_INTEGER);
            }
            // Beyond i64 either way: the value is out of range or not an integer.
            magnitude
                .parse::<i64>()
                .map_or(sign * i64::MAX, |m| sign * m)
        }
    };
    let scale = exponent
        .saturating_sub(fraction.len() as i64)
        .saturating_add((digits.len() - significant.len()) as i64);
    if scale < 0 {
        return Err(NOT_INTEGER);
    }
    if scale > 19 - significant.len() as i64 {
        return Err(OUT_OF_RANGE);
    }
    let magnitude =
        significant.parse::<u128>().map_err(|_| OUT_OF_RANGE)? * 10u128.pow(scale as u32);
    let value = if negative {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    i64::try_from(value).map_err(|_| OUT_OF_RANGE)
}

/// The id held by a float of `mantissa_bits` significant bits (53 for F64, 24 for F32): an
/// integer below 2^mantissa_bits in magnitude; from there on a float no longer tells neighbouring
/// integers apart (2^53 + 1 is stored as 2^53).
pub(crate) fn from_float(v: f64, mantissa_bits: u32) -> Result<i64, Why> {
    if v.fract() != 0.0 || !v.is_finite() {
        return Err(NOT_INTEGER);
    }
    if v.abs() >= (1u64 << mantissa_bits) as f64 {
        return Err(if mantissa_bits == 24 {
            "is at or beyond 2^24, where an F32 tensor cannot tell neighbouring integers apart: store \
             ids in an integer dtype (I64)"
        } else {
            "is at or beyond 2^53, where an F64 tensor cannot tell neighbouring integers apart: store \
             ids in an integer dtype (I64)"
        });
    }
    Ok(v as i64)
}

/// The id held by an unsigned 64-bit integer.
pub(crate) fn from_unsigned(v: u64) -> Result<i64, Why> {
    i64::try_from(v).map_err(|_| OUT_OF_RANGE)
}

/// The message of a refused id: "`place`: `what` `written` `why`", e.g. "column `cluster`,
/// data row 8: cluster id `2.5` is not an integer".
pub(crate) fn refusal(place: &str, what: &str, written: &str, why: Why) -> String {
    format!("{place}: {what} `{written}` {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_ids_are_exact() {
        for (text, id) in [
            ("7", 7),
            (" -3 ", -3),
            ("+12", 12),
            ("7.0", 7),
            ("7.", 7),
            ("1e3", 1000),
            ("1.5e1", 15),
            ("150e-1", 15),
            ("-0", 0),
            ("0.000", 0),
            ("0e999999999999999999999", 0),
            ("007", 7),
            ("9007199254740993", 9007199254740993),
            ("9223372036854775807", i64::MAX),
            ("-9223372036854775808", i64::MIN),
            ("9.223372036854775807e18", i64::MAX),
        ] {
            assert_eq!(from_text(text), Ok(id), "{text}");
        }
        for text in [
            "1.5",
            "2.5",
            "1e-1",
            "9007199254740993.5",
            "0.1e1e1",
            "",
            "-",
            "e3",
            "1x",
        ] {
            assert_eq!(from_text(text), Err(NOT_INTEGER), "{text}");
        }
        for text in [
            "9223372036854775808",
            "-9223372036854775809",
            "1e19",
            "1e99999999999999999999",
            "123456789012345678901234567890",
        ] {
            assert_eq!(from_text(text), Err(OUT_OF_RANGE), "{text}");
        }
    }

    #[test]
    fn float_and_unsigned_ids() {
        assert_eq!(from_float(9007199254740991.0, 53), Ok((1 << 53) - 1));
        assert_eq!(from_float(-9007199254740991.0, 53), Ok(1 - (1 << 53)));
        // 2^53 + 1 is stored as 2^53: neither is an id a float can hold.
        assert!(from_float(9007199254740992.0, 53)
            .unwrap_err()
            .contains("2^53"));
        assert!(from_float(16777216.0, 24).unwrap_err().contains("2^24"));
        assert_eq!(from_float(16777215.0, 24), Ok((1 << 24) - 1));
        for v in [1.5, f64::NAN, f64::INFINITY] {
            assert_eq!(from_float(v, 53), Err(NOT_INTEGER), "{v}");
        }
        assert_eq!(from_unsigned(i64::MAX as u64), Ok(i64::MAX));
        assert_eq!(from_unsigned(u64::MAX), Err(OUT_OF_RANGE));
        assert_eq!(
            refusal(
                "column `cluster`, data row 8",
                "cluster id",
                "2.5",
                NOT_INTEGER
            ),
            "column `cluster`, data row 8: cluster id `2.5` is not an integer"
        );
    }
}
