//! safetensors files, read with ordinary reads: named tensors decoded to `f64` (from F32/F64,
//! or from integer dtypes where a tensor holds labels or ids).
//!
//! A library that lives inside a server must not take a signal because a file changed under
//! it, so nothing is memory-mapped: a file truncated while it is read is an [`Error::Io`]
//! ("changed while it was read"), never a SIGBUS. The header is read and checked first, in
//! full — JSON syntax, duplicate names, dtypes, shapes against byte ranges, byte ranges against
//! the file's size — and callers check every shape they rely on ([`SafetensorsFile::shape`])
//! before the first byte of tensor data is read ([`SafetensorsFile::read`]). Data are decoded
//! in fixed-size blocks straight into the output, so reading costs the output's memory plus
//! one block.

use super::ids;
use crate::error::{Error, Result};
use safetensors::tensor::TensorInfo;
use safetensors::Dtype;
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Largest accepted JSON header, in bytes (the safetensors format's own limit).
pub(crate) const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Most tensors a header may list (a training or scoring file needs at most five; a model
/// checkpoint has a few thousand): what the parsed header holds is bounded by it.
pub(crate) const MAX_TENSORS: usize = 65_536;

/// Bytes decoded per block while reading a tensor.
const BLOCK_BYTES: usize = 1 << 20;

/// An open safetensors file whose header has been read and checked.
pub struct SafetensorsFile {
    path: String,
    file: File,
    /// Offset of the data section (8 + header length).
    data_start: u64,
    tensors: HashMap<String, TensorInfo>,
}

impl SafetensorsFile {
    /// Opens `path` and reads and checks its header (no tensor data is read).
    ///
    /// Errors: [`Error::Io`] if the file cannot be opened or read; [`Error::Format`] naming
    /// the file if the header is malformed, names a tensor twice, has an unknown dtype, a shape
    /// whose size disagrees with its byte range, or byte ranges that do not exactly tile the
    /// rest of the file.
    pub fn open(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let io = |e: std::io::Error| Error::io(&name, &e);
        let bad =
            |detail: String| Error::format(&name, format!("not a safetensors file: {detail}"));
        let mut file = super::input_file::open(path)?;
        let size = file.metadata().map_err(io)?.len();
        let mut len_bytes = [0u8; 8];
        if size < 8 {
            return Err(bad(format!(
                "{size} bytes is shorter than the 8-byte header length"
            )));
        }
        read_exact(&mut file, &mut len_bytes, &name)?;
        let header_len = u64::from_le_bytes(len_bytes);
        if header_len > MAX_HEADER_BYTES || header_len > size - 8 {
            return Err(bad(format!(
                "the header announces {header_len} bytes; the file has {} after the length \
                 (and headers are at most {MAX_HEADER_BYTES} bytes)",
                size - 8
            )));
        }
        let mut header = vec![0u8; header_len as usize];
        read_exact(&mut file, &mut header, &name)?;
        let entries: HeaderEntries = serde_json::from_slice(&header)
            .map_err(|e| bad(format!("the header is not a JSON object of tensors: {e}")))?;
        drop(header);
        let mut tensors = HashMap::with_capacity(entries.0.len());
        for (key, info) in entries.0 {
            if tensors.contains_key(&key) {
                return Err(bad(format!(
                    "tensor `{key}` is named twice in the header: which one is meant is ambiguous"
                )));
            }
            tensors.insert(key, info);
        }
        check_layout(&tensors, size - 8 - header_len).map_err(bad)?;
        Ok(SafetensorsFile {
            path: name,
            file,
            data_start: 8 + header_len,
            tensors,
        })
    }

    /// True when the file has a tensor called `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The shape of tensor `name`, from the header (nothing is read). `integer_ok` allows
    /// integer and bool dtypes (labels, ids); otherwise only F32/F64.
    ///
    /// Errors: [`Error::Format`] naming the file and the tensor if it is missing or of another
    /// dtype.
    pub(crate) fn shape(&self, name: &str, integer_ok: bool) -> Result<&[usize]> {
        let info = self.info(name)?;
        if !accepted(info.dtype, integer_ok) {
            return Err(Error::format(
                &self.path,
                format!(
                    "tensor `{name}` has dtype {:?}; expected F32 or F64{}",
                    info.dtype,
                    if integer_ok {
                        " or an integer type"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(&info.shape)
    }

    /// [`SafetensorsFile::shape`], checked against `dims` (rank and, where given, each
    /// dimension); the error shows the shape found and the one expected.
    pub(crate) fn expect_shape(
        &self,
        name: &str,
        integer_ok: bool,
        dims: &[Option<usize>],
    ) -> Result<&[usize]> {
        let shape = self.shape(name, integer_ok)?;
        let ok = shape.len() == dims.len()
            && shape
                .iter()
                .zip(dims)
                .all(|(s, d)| d.is_none_or(|d| d == *s));
        if ok {
            return Ok(shape);
        }
        let want: Vec<String> = dims
            .iter()
            .map(|d| d.map_or("_".to_string(), |v| v.to_string()))
            .collect();
        Err(Error::format(
            &self.path,
            format!(
                "tensor `{name}` has shape {shape:?}; expected [{}]",
                want.join(", ")
            ),
        ))
    }

    /// The values of tensor `name` as `f64`, row-major (check its shape first).
    ///
    /// Errors: those of [`SafetensorsFile::shape`]; [`Error::Format`] naming the first
    /// non-finite value's row and column; [`Error::Io`] if the file cannot be read (for
    /// instance because it was truncated while being read) or the values cannot be held in
    /// memory.
    pub(crate) fn read(&self, name: &str, integer_ok: bool) -> Result<Vec<f64>> {
        let count = self.element_count(name, integer_ok)?;
        let mut values = Vec::new();
        values.try_reserve_exact(count).map_err(|_| {
            Error::io(
                &self.path,
                &std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("cannot allocate {count} values for tensor `{name}`"),
                ),
            )
        })?;
        self.for_each(name, integer_ok, |_, v| values.push(v))?;
        Ok(values)
    }

    /// Replaces each `out[i]` by `f(out[i], value_i)` for the values of tensor `name` (which
    /// must have `out.len()` elements), without holding the tensor in memory: e.g. `z = phi1 -
    /// phi0` from `phi0` already read into `out`. Errors as [`SafetensorsFile::read`].
    pub(crate) fn combine_into(
        &self,
        name: &str,
        out: &mut [f64],
        f: impl Fn(f64, f64) -> f64,
    ) -> Result<()> {
        let count = self.element_count(name, false)?;
        if count != out.len() {
            return Err(Error::Internal {
                detail: format!("tensor `{name}`: {count} values for {} slots", out.len()),
            });
        }
        self.for_each(name, false, |i, v| out[i] = f(out[i], v))
    }

    /// The file's path, for messages.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.tensors
            .get(name)
            .ok_or_else(|| Error::format(&self.path, format!("missing tensor `{name}`")))
    }

    fn element_count(&self, name: &str, integer_ok: bool) -> Result<usize> {
        Ok(self.shape(name, integer_ok)?.iter().product())
    }

    /// The ids held by tensor `name` (`cluster`, `group`; check its shape first), exact: every
    /// value of an integer dtype that fits 64 signed bits, and the integers a float tensor tells
    /// apart from their neighbours (below 2^53 in F64, 2^24 in F32).
    ///
    /// Errors: those of [`SafetensorsFile::shape`]; [`Error::Format`] naming the file, the
    /// tensor, the row and the value as stored, for the first value that is not such an id;
    /// [`Error::Io`] as [`SafetensorsFile::read`].
    pub(crate) fn read_ids(&self, name: &str) -> Result<Vec<i64>> {
        let count = self.element_count(name, true)?;
        let info = self.info(name)?;
        let mut out = crate::error::try_with_capacity::<i64>(name, count)?;
        let what = format!("{name} id");
        let mut push = |index: usize, id: std::result::Result<i64, (String, ids::Why)>| match id {
            Ok(id) => {
                out.push(id);
                Ok(())
            }
            Err((stored, why)) => Err(Error::format(
                &self.path,
                ids::refusal(
                    &format!("tensor `{name}`, {}", position(&info.shape, index)),
                    &what,
                    &stored,
                    why,
                ),
            )),
        };
        let visit = &mut push;
        match info.dtype {
            Dtype::I64 => self.stream(info, visit, |b| Ok(i64::from_le_bytes(b))),
            Dtype::I32 => self.stream(info, visit, |b| Ok(i32::from_le_bytes(b).into())),
            Dtype::I16 => self.stream(info, visit, |b| Ok(i16::from_le_bytes(b).into())),
            Dtype::I8 => self.stream(info, visit, |b| Ok(i8::from_le_bytes(b).into())),
            Dtype::U64 => self.stream(info, visit, |b| {
                let v = u64::from_le_bytes(b);
                ids::from_unsigned(v).map_err(|why| (v.to_string(), why))
            }),
            Dtype::U32 => self.stream(info, visit, |b| Ok(u32::from_le_bytes(b).into())),
            Dtype::U16 => self.stream(info, visit, |b| Ok(u16::from_le_bytes(b).into())),
            Dtype::U8 | Dtype::BOOL => self.stream(info, visit, |b: [u8; 1]| Ok(b[0].into())),
            Dtype::F64 => self.stream(info, visit, |b| {
                let v = f64::from_le_bytes(b);
                ids::from_float(v, 53).map_err(|why| (format!("{v:?}"), why))
            }),
            Dtype::F32 => self.stream(info, visit, |b| {
                let v = f32::from_le_bytes(b);
                ids::from_float(v.into(), 24).map_err(|why| (format!("{v:?}"), why))
            }),
            other => Err(Error::Internal {
                detail: format!("tensor `{name}`: dtype {other:?} read unchecked"),
            }),
        }?;
        Ok(out)
    }

    /// Streams the decoded values of `name` with their flat index, block by block; stops at
    /// the first non-finite value with a format error naming its position.
    fn for_each(
        &self,
        name: &str,
        integer_ok: bool,
        mut visit: impl FnMut(usize, f64),
    ) -> Result<()> {
        let info = self.info(name)?;
        if !accepted(info.dtype, integer_ok) {
            return Err(Error::Internal {
                detail: format!("tensor `{name}`: dtype {:?} read unchecked", info.dtype),
            });
        }
        let mut finite = |index: usize, v: f64| {
            if !v.is_finite() {
                return Err(Error::format(
                    &self.path,
                    format!(
                        "tensor `{name}`: non-finite value at {}",
                        position(&info.shape, index)
                    ),
                ));
            }
            visit(index, v);
            Ok(())
        };
        let visit = &mut finite;
        // One monomorphised loop per dtype, so the decoder is inlined into it.
        match info.dtype {
            Dtype::F64 => self.stream(info, visit, f64::from_le_bytes),
            Dtype::F32 => self.stream(info, visit, |b| f32::from_le_bytes(b) as f64),
            Dtype::I64 => self.stream(info, visit, |b| i64::from_le_bytes(b) as f64),
            Dtype::I32 => self.stream(info, visit, |b| i32::from_le_bytes(b) as f64),
            Dtype::I16 => self.stream(info, visit, |b| i16::from_le_bytes(b) as f64),
            Dtype::I8 => self.stream(info, visit, |b| i8::from_le_bytes(b) as f64),
            Dtype::U64 => self.stream(info, visit, |b| u64::from_le_bytes(b) as f64),
            Dtype::U32 => self.stream(info, visit, |b| u32::from_le_bytes(b) as f64),
            Dtype::U16 => self.stream(info, visit, |b| u16::from_le_bytes(b) as f64),
            _ => self.stream(info, visit, |b: [u8; 1]| b[0] as f64),
        }
    }

    /// Reads the tensor of `info` block by block and hands each decoded element to `visit`
    /// with its flat index, stopping at the first error `visit` returns.
    fn stream<const W: usize, T>(
        &self,
        info: &TensorInfo,
        visit: &mut impl FnMut(usize, T) -> Result<()>,
        decode: impl Fn([u8; W]) -> T,
    ) -> Result<()> {
        let (begin, end) = info.data_offsets;
        let mut reader = &self.file;
        reader
            .seek(SeekFrom::Start(self.data_start + begin as u64))
            .map_err(|e| Error::io(&self.path, &e))?;
        let mut buf = vec![0u8; BLOCK_BYTES.min(end - begin)];
        let mut index = 0;
        let mut left = end - begin;
        while left > 0 {
            let block = &mut buf[..BLOCK_BYTES.min(left)];
            read_exact(&mut reader, block, &self.path)?;
            for bytes in block.chunks_exact(W) {
                visit(index, decode(bytes.try_into().expect("W bytes")))?;
                index += 1;
            }
            left -= block.len();
        }
        Ok(())
    }
}

/// Reads exactly `buf.len()` bytes; running out of file means it shrank since it was opened.
fn read_exact(reader: &mut impl Read, buf: &mut [u8], path: &str) -> Result<()> {
    reader.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::io(
                path,
                &std::io::Error::new(
                    e.kind(),
                    "the file ended early: it was truncated or changed while it was read",
                ),
            )
        } else {
            Error::io(path, &e)
        }
    })
}

/// The header's tensors in file order, duplicates kept (serde's maps would silently keep the
/// last one), decoded straight into [`TensorInfo`] (a JSON value tree per entry took ~20 times
/// the header's size: 1.8 GB for an 83 MB header) and at most [`MAX_TENSORS`] of them.
/// `__metadata__` is checked as the format's reference implementation checks it (null or an
/// object of strings: [`MetadataStrings`]) and not kept.
struct HeaderEntries(Vec<(String, TensorInfo)>);

impl<'de> Deserialize<'de> for HeaderEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = HeaderEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<HeaderEntries, A::Error> {
                use serde::de::Error as _;
                let mut entries = Vec::new();
                let mut metadata = false;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "__metadata__" {
                        if std::mem::replace(&mut metadata, true) {
                            return Err(A::Error::custom(
                                "`__metadata__` appears twice: which one is meant is ambiguous",
                            ));
                        }
                        map.next_value::<MetadataStrings>()?;
                        continue;
                    }
                    if entries.len() == MAX_TENSORS {
                        return Err(A::Error::custom(format!("more than {MAX_TENSORS} tensors")));
                    }
                    let info = map
                        .next_value::<TensorInfo>()
                        .map_err(|e| A::Error::custom(format!("tensor `{key}`: {e}")))?;
                    entries.push((key, info));
                }
                Ok(HeaderEntries(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// The header's `__metadata__`, read as the format's reference implementation (the
/// `safetensors` crate, whose type for it is `Option<HashMap<String, String>>`) reads it: `null`
/// or an object whose every value is a string. Anything else — a nested object, a number, a
/// list — is refused naming the entry's key; nothing is kept.
struct MetadataStrings;

impl<'de> Deserialize<'de> for MetadataStrings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Strings;
        impl<'de> Visitor<'de> for Strings {
            type Value = MetadataStrings;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`__metadata__` as null or an object of strings")
            }
            fn visit_unit<E>(self) -> std::result::Result<MetadataStrings, E> {
                Ok(MetadataStrings)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<MetadataStrings, A::Error> {
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value_seed(EntryString(&key))?;
                }
                Ok(MetadataStrings)
            }
        }
        deserializer.deserialize_any(Strings)
    }
}

/// The value of `__metadata__` entry `.0`, which must be a string; the error of any other value
/// ("invalid type: map, expected a string as `__metadata__` entry `k` ...") names the key.
struct EntryString<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for EntryString<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for EntryString<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "a string as `__metadata__` entry `{}` (the format allows only strings there)",
            self.0
        )
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
        Ok(())
    }
}

/// The format's layout rule: each tensor's byte range holds exactly its shape's elements, and
/// the ranges, in offset order, tile the data section of `data_len` bytes without gaps.
fn check_layout(
    tensors: &HashMap<String, TensorInfo>,
    data_len: u64,
) -> std::result::Result<(), String> {
    let mut ranges: Vec<(&String, &TensorInfo)> = tensors.iter().collect();
    ranges.sort_by_key(|(_, t)| t.data_offsets);
    let mut at = 0usize;
    for (name, t) in ranges {
        let (begin, end) = t.data_offsets;
        if begin != at || end < begin {
            return Err(format!(
                "tensor `{name}` has byte range [{begin}, {end}); expected it to start at {at}"
            ));
        }
        let bytes = t
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .and_then(|elements| elements.checked_mul(t.dtype.size()));
        if bytes != Some(end - begin) {
            return Err(format!(
                "tensor `{name}` has shape {:?} of {:?} but a byte range of {} bytes",
                t.shape,
                t.dtype,
                end - begin
            ));
        }
        at = end;
    }
    match (at as u64).cmp(&data_len) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(format!(
            "truncated: the header's tensors need {at} bytes of data, the file has {data_len}"
        )),
        std::cmp::Ordering::Less => Err(format!(
            "{} bytes follow the last tensor's data (the header's tensors need {at} bytes)",
            data_len - at as u64
        )),
    }
}

/// Whether this reader accepts `dtype`: F32 and F64 always, integer and bool dtypes (labels,
/// ids) when `integer_ok`.
fn accepted(dtype: Dtype, integer_ok: bool) -> bool {
    match dtype {
        Dtype::F64 | Dtype::F32 => true,
        Dtype::I64 | Dtype::I32 | Dtype::I16 | Dtype::I8 => integer_ok,
        Dtype::U64 | Dtype::U32 | Dtype::U16 | Dtype::U8 | Dtype::BOOL => integer_ok,
        _ => false,
    }
}

/// "row R, column C" (rank 2), "row R" (rank 1) or "flat index I" of a flat index in `shape`.
fn position(shape: &[usize], flat: usize) -> String {
    match shape {
        [_] => format!("row {flat}"),
        [_, cols] if *cols > 0 => format!("row {}, column {}", flat / cols, flat % cols),
        _ => format!("flat index {flat}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with_header(dir: &Path, json: &str, data: usize) -> std::path::PathBuf {
        file_with_data(dir, json, &vec![0u8; data])
    }

    fn file_with_data(dir: &Path, json: &str, data: &[u8]) -> std::path::PathBuf {
        let path = dir.join("t.safetensors");
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend(json.as_bytes());
        bytes.extend(data);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn metadata_is_null_or_an_object_of_strings() {
        let dir = tempfile::tempdir().unwrap();
        let y = r#""y":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}"#;
        let with = |metadata: &str| {
            file_with_header(
                dir.path(),
                &format!("{{\"__metadata__\":{metadata},{y}}}"),
                8,
            )
        };
        for ok in [
            r#"{"format":"pt","n":"1"}"#,
            "{}",
            "null",
            r#"{"k":"a \"quoted\" \u00e9"}"#,
        ] {
            assert!(SafetensorsFile::open(&with(ok)).unwrap().has("y"), "{ok}");
        }
        // As the reference implementation: a value that is not a string is refused, by key.
        for (metadata, needle) in [
            (
                r#"{"format":"pt","config":{"nested":"x"}}"#,
                "invalid type: map, expected a string as `__metadata__` entry `config`",
            ),
            (
                r#"{"n":1}"#,
                "integer `1`, expected a string as `__metadata__` entry `n`",
            ),
            (r#"{"l":["a"]}"#, "entry `l`"),
            (r#"{"b":null}"#, "entry `b`"),
            (
                r#""text""#,
                "expected `__metadata__` as null or an object of strings",
            ),
            (
                "[]",
                "expected `__metadata__` as null or an object of strings",
            ),
        ] {
            let e = error(&with(metadata));
            assert!(e.contains(needle), "{metadata}: {e}");
        }
        let twice = file_with_header(
            dir.path(),
            &format!(r#"{{"__metadata__":{{}},{y},"__metadata__":{{}}}}"#),
            8,
        );
        assert!(error(&twice).contains("`__metadata__` appears twice"));
    }

    #[test]
    fn ids_are_read_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let one = |dtype: &str, data: &[u8]| {
            let path = file_with_data(
                dir.path(),
                &format!(
                    r#"{{"cluster":{{"dtype":"{dtype}","shape":[{}],"data_offsets":[0,{}]}}}}"#,
                    data.len()
                        / serde_json::from_str::<Dtype>(&format!("\"{dtype}\""))
                            .unwrap()
                            .size(),
                    data.len()
                ),
                data,
            );
            SafetensorsFile::open(&path).unwrap().read_ids("cluster")
        };
        let big = [1i64 << 53, (1 << 53) + 1, i64::MAX, i64::MIN, -1];
        let bytes: Vec<u8> = big.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(one("I64", &bytes).unwrap(), big);
        let bytes: Vec<u8> = [7u64, i64::MAX as u64]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(one("U64", &bytes).unwrap(), [7, i64::MAX]);
        assert_eq!(one("I8", &[0xFF, 3]).unwrap(), [-1, 3]);
        assert_eq!(one("U8", &[0xFF]).unwrap(), [255]);
        let bytes: Vec<u8> = [1.0f64, -9007199254740991.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(one("F64", &bytes).unwrap(), [1, -9007199254740991]);
        // Refused values are quoted as stored, with their row.
        let bytes: Vec<u8> = [0u64, u64::MAX]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let e = one("U64", &bytes).unwrap_err().to_string();
        assert!(
            e.contains("tensor `cluster`, row 1: cluster id `18446744073709551615` is outside"),
            "{e}"
        );
        let bytes: Vec<u8> = [1.0f64, 9007199254740993.0, 2.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let e = one("F64", &bytes).unwrap_err().to_string();
        assert!(
            e.contains("row 1: cluster id `9007199254740992.0` is at or beyond 2^53"),
            "{e}"
        );
        let bytes: Vec<u8> = [2.5f64].iter().flat_map(|v| v.to_le_bytes()).collect();
        let e = one("F64", &bytes).unwrap_err().to_string();
        assert!(
            e.contains("row 0: cluster id `2.5` is not an integer"),
            "{e}"
        );
        let e = one("F32", &16777217.0f32.to_le_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cluster id `16777216.0` is at or beyond 2^24"),
            "{e}"
        );
    }

    fn error(path: &Path) -> String {
        let e = SafetensorsFile::open(path).err().expect("refused");
        assert!(matches!(e, Error::Format { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("t.safetensors"), "{e}");
        e
    }

    #[test]
    fn what_a_header_may_hold_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let entry = |i: usize| {
            format!("\"t{i}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}")
        };
        let many: Vec<String> = (0..=MAX_TENSORS).map(entry).collect();
        let path = file_with_header(dir.path(), &format!("{{{}}}", many.join(",")), 0);
        let e = error(&path);
        assert!(e.contains("more than 65536 tensors"), "{e}");
        // At the limit, and with metadata (skipped), the header is read.
        let path = file_with_header(
            dir.path(),
            &format!(
                "{{\"__metadata__\":{{\"k\":\"v\"}},{}}}",
                many[..MAX_TENSORS].join(",")
            ),
            0,
        );
        let f = SafetensorsFile::open(&path).unwrap();
        assert!(f.has("t0") && f.has(&format!("t{}", MAX_TENSORS - 1)));
        // A bad entry names its tensor; a name twice is still ambiguous.
        let path = file_with_header(
            dir.path(),
            r#"{"y":{"dtype":"F99","shape":[1],"data_offsets":[0,8]}}"#,
            8,
        );
        assert!(error(&path).contains("tensor `y`"));
        let path = file_with_header(
            dir.path(),
            r#"{"y":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"y":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}"#,
            16,
        );
        assert!(error(&path).contains("named twice"));
    }
}
