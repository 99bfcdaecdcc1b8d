//! Text that is not valid UTF-8, in and out.
//!
//! * **Requests**: a body with bytes that are not UTF-8 is a 400 naming the JSON field that
//!   holds them (`prompt`, `messages[0].content`). The body is decoded with every invalid
//!   sequence replaced by a marker character the valid parts do not contain (U+FFFD unless the
//!   body already has one), parsed, and the first string holding the marker is named.
//! * **Upstream answers**: a raw invalid byte (an answer cut inside a multi-byte character by
//!   `max_tokens`) becomes U+FFFD, as does a lone surrogate escape (`\ud83d` without its pair,
//!   which JSON parsers refuse); the answer is passed on, never an error.

use serde_json::Value;
use std::borrow::Cow;

/// Where the first invalid UTF-8 sequence of a request body is: the JSON path of the string
/// (or object key) holding it, e.g. `messages[0].content`, or `None` when the body is valid.
/// When the bytes are outside any string, or the body is not JSON once decoded, the path is
/// `"body"` and the byte offset is named.
pub fn invalid_field(body: &[u8]) -> Option<String> {
    let err = std::str::from_utf8(body).err()?;
    let offset = err.valid_up_to();
    let lossy = String::from_utf8_lossy(body);
    let marker = ['\u{FFFD}', '\u{FDD0}', '\u{FDD1}', '\u{FDEF}', '\u{10FFFF}']
        .into_iter()
        .find(|&m| {
            m == '\u{FFFD}' && !contains_valid_fffd(body) || m != '\u{FFFD}' && !lossy.contains(m)
        });
    let fallback = || format!("body (byte {offset})");
    let Some(marker) = marker else {
        return Some(fallback());
    };
    let text = if marker == '\u{FFFD}' {
        lossy.into_owned()
    } else {
        replace_invalid(body, marker)
    };
    let Ok(value) = serde_json::from_str::<Value>(&text) else {
        return Some(fallback());
    };
    Some(find_marker(&value, marker, "").unwrap_or_else(fallback))
}

/// Whether the valid parts of `body` already contain U+FFFD (its UTF-8 bytes EF BF BD).
fn contains_valid_fffd(body: &[u8]) -> bool {
    body.windows(3).any(|w| w == [0xEF, 0xBF, 0xBD])
}

/// `body` decoded with each maximal invalid sequence replaced by `marker`.
fn replace_invalid(mut body: &[u8], marker: char) -> String {
    let mut out = String::with_capacity(body.len());
    loop {
        match std::str::from_utf8(body) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = body.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push(marker);
                let skip = e.error_len().unwrap_or(rest.len());
                body = &rest[skip..];
            }
        }
    }
}

/// The path of the first string or key containing `marker`.
fn find_marker(value: &Value, marker: char, path: &str) -> Option<String> {
    match value {
        Value::String(s) if s.contains(marker) => Some(if path.is_empty() {
            "body".to_string()
        } else {
            path.to_string()
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_marker(v, marker, &format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let child = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            if k.contains(marker) {
                Some(child)
            } else {
                find_marker(v, marker, &child)
            }
        }),
        _ => None,
    }
}

/// An upstream's answer as JSON text that parses: invalid bytes replaced by U+FFFD and lone
/// surrogate escapes (`\udXXX` without a valid pair) by `\ufffd`. Borrowed when nothing
/// needed repair.
pub fn repair(bytes: &[u8]) -> Cow<'_, str> {
    let text = String::from_utf8_lossy(bytes);
    if !text.contains("\\u") && !text.contains("\\U") {
        return text;
    }
    match repair_surrogates(&text) {
        Some(fixed) => Cow::Owned(fixed),
        None => text,
    }
}

/// Replaces every lone surrogate escape by `\ufffd`; None when there is none.
fn repair_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex4 = |i: usize| -> Option<u16> {
        let s = text.get(i..i + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            i += 1;
            continue;
        }
        if b[i + 1] != b'u' {
            i += 2; // any other escape, including `\\`
            continue;
        }
        let Some(unit) = hex4(i + 2) else {
            i += 2;
            continue;
        };
        let is_high = (0xD800..0xDC00).contains(&unit);
        let is_low = (0xDC00..0xE000).contains(&unit);
        if is_high {
            let paired = b.get(i + 6) == Some(&b'\\')
                && b.get(i + 7) == Some(&b'u')
                && hex4(i + 8).is_some_and(|u| (0xDC00..0xE000).contains(&u));
            if paired {
                i += 12;
                continue;
            }
        }
        if is_high || is_low {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..i]);
            o.push_str("\\ufffd");
            i += 6;
            copied = i;
            continue;
        }
        i += 6;
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}
