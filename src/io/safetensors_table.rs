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

use crate::error::{Error, Result};
use safetensors::tensor::TensorInfo;
use safetensors::Dtype;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
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
        let mut file = File::open(path).map_err(io)?;
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

    /// Streams the decoded values of `name` with their flat index, block by block; stops at
    /// the first non-finite value with a format error naming its position.
    fn for_each(&self, name: &str, integer_ok: bool, visit: impl FnMut(usize, f64)) -> Result<()> {
        let info = self.info(name)?;
        if !accepted(info.dtype, integer_ok) {
            return Err(Error::Internal {
                detail: format!("tensor `{name}`: dtype {:?} read unchecked", info.dtype),
            });
        }
        // One monomorphised loop per dtype, so the decoder is inlined into it.
        match info.dtype {
            Dtype::F64 => self.stream(name, info, visit, f64::from_le_bytes),
            Dtype::F32 => self.stream(name, info, visit, |b| f32::from_le_bytes(b) as f64),
            Dtype::I64 => self.stream(name, info, visit, |b| i64::from_le_bytes(b) as f64),
            Dtype::I32 => self.stream(name, info, visit, |b| i32::from_le_bytes(b) as f64),
            Dtype::I16 => self.stream(name, info, visit, |b| i16::from_le_bytes(b) as f64),
            Dtype::I8 => self.stream(name, info, visit, |b| i8::from_le_bytes(b) as f64),
            Dtype::U64 => self.stream(name, info, visit, |b| u64::from_le_bytes(b) as f64),
            Dtype::U32 => self.stream(name, info, visit, |b| u32::from_le_bytes(b) as f64),
            Dtype::U16 => self.stream(name, info, visit, |b| u16::from_le_bytes(b) as f64),
            _ => self.stream(name, info, visit, |b: [u8; 1]| b[0] as f64),
        }
    }

    fn stream<const W: usize>(
        &self,
        name: &str,
        info: &TensorInfo,
        mut visit: impl FnMut(usize, f64),
        decode: impl Fn([u8; W]) -> f64,
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
                let v = decode(bytes.try_into().expect("W bytes"));
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
/// the header's size: 1.8 GB for an 83 MB header) and at most [`MAX_TENSORS`] of them;
/// `__metadata__` is skipped unread.
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
                while let Some(key) = map.next_key::<String>()? {
                    if key == "__metadata__" {
                        map.next_value::<serde::de::IgnoredAny>()?;
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
        let path = dir.join("t.safetensors");
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend(json.as_bytes());
        bytes.extend(vec![0u8; data]);
        std::fs::write(&path, bytes).unwrap();
        path
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
