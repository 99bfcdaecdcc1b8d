//! The companion feature projection (`MODEL.projection.safetensors`, docs/model-format.md,
//! "Companion: feature projection"): the map from a raw text embedding to the model's
//! features, and the text template the embedder sees.

use safetensors::tensor::{Dtype, SafeTensors};
use std::path::Path;

/// The format tag a projection file must carry in its metadata.
pub const FORMAT: &str = "hetreward-projection-1";

/// A feature projection: `phi = float32((e - mean) @ components.T)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    mean: Vec<f64>,
    /// The components transposed: `dim_in x dim_out`, row-major (row `i` holds every
    /// feature's weight of embedding element `i`), so [`Projection::apply_into`] runs the d1
    /// sums side by side.
    components_t: Vec<f64>,
    dim_in: usize,
    dim_out: usize,
    text: String,
    embedding_model: Option<String>,
}

impl Projection {
    /// Reads a projection file. Errors name the path and what is wrong.
    ///
    /// Only a regular file is read: a FIFO or a device named like one would block start-up
    /// or reload in `open`, so it is refused naming what it is.
    pub fn load(path: &Path) -> Result<Projection, String> {
        let kind = std::fs::metadata(path)
            .map_err(|e| format!("{}: cannot read the projection file: {e}", path.display()))?
            .file_type();
        if !kind.is_file() {
            return Err(format!(
                "{}: the projection file is {}, not a regular file",
                path.display(),
                if kind.is_dir() {
                    "a folder"
                } else {
                    "a FIFO, socket or device"
                }
            ));
        }
        let bytes = std::fs::read(path)
            .map_err(|e| format!("{}: cannot read the projection file: {e}", path.display()))?;
        Projection::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses a projection file's bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Projection, String> {
        let (_, header) = SafeTensors::read_metadata(bytes)
            .map_err(|e| format!("not a safetensors file: {e}"))?;
        let meta = header.metadata().clone().unwrap_or_default();
        match meta.get("format").map(String::as_str) {
            Some(FORMAT) => {}
            Some(other) => return Err(format!("format is {other:?}, not {FORMAT:?}")),
            None => return Err(format!("no `format` metadata (expected {FORMAT:?})")),
        }
        let tensors =
            SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
        let read = |name: &str| -> Result<(Vec<usize>, Vec<f64>), String> {
            let t = tensors
                .tensor(name)
                .map_err(|_| format!("no tensor `{name}`"))?;
            if t.dtype() != Dtype::F64 {
                return Err(format!("tensor `{name}` is {:?}, not F64", t.dtype()));
            }
            let values = t
                .data()
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            Ok((t.shape().to_vec(), values))
        };
        let (mean_shape, mean) = read("mean")?;
        let (comp_shape, components) = read("components")?;
        if mean_shape.len() != 1 || comp_shape.len() != 2 || comp_shape[1] != mean_shape[0] {
            return Err(format!(
                "mean {mean_shape:?} (D,) and components {comp_shape:?} (d1, D) do not match"
            ));
        }
        let (dim_in, dim_out) = (mean_shape[0], comp_shape[0]);
        if dim_in == 0 || dim_out == 0 {
            return Err("empty projection (D or d1 is 0)".into());
        }
        for (key, want) in [("dim_in", dim_in), ("dim_out", dim_out)] {
            if let Some(v) = meta.get(key) {
                if v.trim().parse::<usize>().ok() != Some(want) {
                    return Err(format!("metadata {key} = {v:?} but the tensors say {want}"));
                }
            }
        }
        let text = meta
            .get("text")
            .cloned()
            .ok_or("no `text` metadata (the template with {question} and {answer})")?;
        if !text.contains("{question}") || !text.contains("{answer}") {
            return Err(format!(
                "metadata `text` {text:?} lacks {{question}} or {{answer}}"
            ));
        }
        if let Some(bad) = mean.iter().chain(&components).find(|v| !v.is_finite()) {
            return Err(format!("non-finite value {bad} in the projection"));
        }
        let mut components_t = vec![0.0; components.len()];
        for (k, row) in components.chunks_exact(dim_in).enumerate() {
            for (i, &c) in row.iter().enumerate() {
                components_t[i * dim_out + k] = c;
            }
        }
        Ok(Projection {
            mean,
            components_t,
            dim_in,
            dim_out,
            text,
            embedding_model: meta.get("embedding_model").cloned(),
        })
    }

    /// D: the embedding width the projection takes.
    pub fn dim_in(&self) -> usize {
        self.dim_in
    }

    /// d1: the number of features (the model's d1).
    pub fn dim_out(&self) -> usize {
        self.dim_out
    }

    /// The text template, with `{question}` and `{answer}`.
    pub fn template(&self) -> &str {
        &self.text
    }

    /// The `embedding_model` metadata, if any.
    pub fn embedding_model(&self) -> Option<&str> {
        self.embedding_model.as_deref()
    }

    /// The text embedded for an answer: the template with both placeholders replaced in one
    /// pass (a question or answer that itself contains `{answer}` is not substituted again).
    pub fn render(&self, question: &str, answer: &str) -> String {
        let mut out = String::with_capacity(self.text.len() + question.len() + answer.len());
        let mut rest = self.text.as_str();
        loop {
            let q = rest.find("{question}");
            let a = rest.find("{answer}");
            let (at, len, with) = match (q, a) {
                (Some(q), Some(a)) if q < a => (q, 10, question),
                (Some(q), None) => (q, 10, question),
                (_, Some(a)) => (a, 8, answer),
                (None, None) => break,
            };
            out.push_str(&rest[..at]);
            out.push_str(with);
            rest = &rest[at + len..];
        }
        out.push_str(rest);
        out
    }

    /// Appends the features of one embedding (length D) to `out`: each feature is the dot
    /// product `(e - mean) . components[k]` accumulated in f64 in index order, then rounded to
    /// f32, exactly as examples/llama-cpp/pbon.cpp's `Projection::apply`. The d1 sums advance
    /// together, one embedding element at a time: each sum adds the same terms in the same
    /// order as a row-by-row dot product (so the same bits), but the d1 independent chains
    /// vectorise instead of waiting on one addition's latency per term.
    pub fn apply_into(&self, e: &[f32], out: &mut Vec<f32>) -> Result<(), String> {
        if e.len() != self.dim_in {
            return Err(format!(
                "embedding width {} differs from the projection's dim_in {}",
                e.len(),
                self.dim_in
            ));
        }
        let mut sums = vec![0.0f64; self.dim_out];
        for ((&x, &m), weights) in e
            .iter()
            .zip(&self.mean)
            .zip(self.components_t.chunks_exact(self.dim_out))
        {
            let centred = f64::from(x) - m;
            for (s, &c) in sums.iter_mut().zip(weights) {
                *s += centred * c;
            }
        }
        out.extend(sums.iter().map(|&s| s as f32));
        Ok(())
    }
}
