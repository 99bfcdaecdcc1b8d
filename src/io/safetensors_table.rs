//! safetensors files, memory-mapped: named tensors read as `f64` (from F32/F64, or from
//! integer dtypes where a tensor holds labels or ids).

use crate::error::{Error, Result};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use std::path::Path;

/// A memory-mapped safetensors file.
pub struct SafetensorsFile {
    path: String,
    map: Mmap,
}

/// A tensor converted to `f64`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, row-major.
    pub values: Vec<f64>,
}

impl SafetensorsFile {
    /// Maps `path` into memory (no copy) and checks the header.
    pub fn open(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::io(&name, &e))?;
        // SAFETY: the map is read-only; as with every mmap, the file must not be truncated by
        // another process while we read it.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(&name, &e))?;
        SafeTensors::deserialize(&map)
            .map_err(|e| Error::format(&name, format!("not a safetensors file: {e:?}")))?;
        Ok(SafetensorsFile { path: name, map })
    }

    fn parsed(&self) -> SafeTensors<'_> {
        SafeTensors::deserialize(&self.map).expect("header checked in open()")
    }

    /// True when the file has a tensor called `name`.
    pub fn has(&self, name: &str) -> bool {
        self.parsed().tensor(name).is_ok()
    }

    /// The tensor `name` as `f64`. `integer_ok` allows integer and bool dtypes (labels, ids);
    /// otherwise only F32/F64. Errors name the file, the tensor and the first non-finite index.
    pub fn tensor(&self, name: &str, integer_ok: bool) -> Result<Tensor> {
        let st = self.parsed();
        let view = st
            .tensor(name)
            .map_err(|_| Error::format(&self.path, format!("missing tensor `{name}`")))?;
        let data = view.data();
        let values: Vec<f64> = match view.dtype() {
            Dtype::F64 => decode::<8>(data, f64::from_le_bytes),
            Dtype::F32 => decode::<4>(data, |b| f32::from_le_bytes(b) as f64),
            Dtype::I64 if integer_ok => decode::<8>(data, |b| i64::from_le_bytes(b) as f64),
            Dtype::I32 if integer_ok => decode::<4>(data, |b| i32::from_le_bytes(b) as f64),
            Dtype::I16 if integer_ok => decode::<2>(data, |b| i16::from_le_bytes(b) as f64),
            Dtype::I8 if integer_ok => decode::<1>(data, |b| i8::from_le_bytes(b) as f64),
            Dtype::U64 if integer_ok => decode::<8>(data, |b| u64::from_le_bytes(b) as f64),
            Dtype::U32 if integer_ok => decode::<4>(data, |b| u32::from_le_bytes(b) as f64),
            Dtype::U16 if integer_ok => decode::<2>(data, |b| u16::from_le_bytes(b) as f64),
            Dtype::U8 | Dtype::BOOL if integer_ok => data.iter().map(|&b| b as f64).collect(),
            other => {
                return Err(Error::format(
                    &self.path,
                    format!(
                        "tensor `{name}` has dtype {other:?}; expected F32 or F64{}",
                        if integer_ok {
                            " or an integer type"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        };
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::format(
                &self.path,
                format!(
                    "tensor `{name}`: non-finite value at {}",
                    position(view.shape(), i)
                ),
            ));
        }
        Ok(Tensor {
            shape: view.shape().to_vec(),
            values,
        })
    }

    /// The file's path, for messages.
    pub fn path(&self) -> &str {
        &self.path
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

fn decode<const W: usize>(data: &[u8], f: impl Fn([u8; W]) -> f64) -> Vec<f64> {
    data.chunks_exact(W)
        .map(|c| f(c.try_into().expect("chunk of W bytes")))
        .collect()
}

impl Tensor {
    /// Checks the rank and, where given, each dimension; `what` names the tensor in errors.
    pub fn expect_shape(&self, path: &str, what: &str, dims: &[Option<usize>]) -> Result<()> {
        let ok = self.shape.len() == dims.len()
            && self
                .shape
                .iter()
                .zip(dims)
                .all(|(s, d)| d.is_none_or(|d| d == *s));
        if ok {
            Ok(())
        } else {
            let want: Vec<String> = dims
                .iter()
                .map(|d| d.map_or("_".to_string(), |v| v.to_string()))
                .collect();
            Err(Error::format(
                path,
                format!(
                    "tensor `{what}` has shape {:?}; expected [{}]",
                    self.shape,
                    want.join(", ")
                ),
            ))
        }
    }
}
