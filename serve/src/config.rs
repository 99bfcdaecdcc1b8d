//! The gateway's configuration: what `hetreward serve`'s flags set, with the contract's
//! defaults, checked by [`Config::validate`].

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable with the Bearer key for the generation upstream.
pub const UPSTREAM_KEY_ENV: &str = "HETREWARD_UPSTREAM_API_KEY";
/// Environment variable with the Bearer key for the embeddings upstream (falls back to
/// [`UPSTREAM_KEY_ENV`] when the embeddings upstream is the generation upstream).
pub const EMBEDDINGS_KEY_ENV: &str = "HETREWARD_EMBEDDINGS_API_KEY";

/// Everything the gateway is configured by. Build one with [`Config::new`] (the defaults),
/// set fields, then [`Config::validate`] (done again by [`crate::run`]).
#[derive(Clone)]
pub struct Config {
    /// The reward model file (`.hrm`).
    pub model: PathBuf,
    /// The projection file; `None`: the model's path with `.hrm` replaced by
    /// `.projection.safetensors`.
    pub projection: Option<PathBuf>,
    /// Base URL of the OpenAI-compatible generation server (`/v1/...` is appended).
    pub upstream: String,
    /// Base URL of the OpenAI-compatible embeddings server; `None`: the upstream.
    pub embeddings: Option<String>,
    /// The `model` field sent to `/v1/embeddings`.
    pub embeddings_model: String,
    /// Address to listen on (port 0: a free port).
    pub listen: SocketAddr,
    /// Requests in flight beyond which the gateway answers 429.
    pub max_in_flight: usize,
    /// Timeout of the generation stage (all candidates).
    pub generation_timeout: Duration,
    /// Timeout of the embedding stage (one batch call).
    pub embedding_timeout: Duration,
    /// Largest `best_of` accepted.
    pub max_best_of: usize,
    /// Default `alpha` of the intervals.
    pub alpha: f64,
    /// Tokio worker threads.
    pub workers: usize,
    /// Timeout of each health probe.
    pub probe_timeout: Duration,
    /// Bearer key for the generation upstream (never logged; see [`Config::with_env_keys`]).
    pub upstream_api_key: Option<String>,
    /// Bearer key for the embeddings upstream (never logged).
    pub embeddings_api_key: Option<String>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |k: &Option<String>| k.as_ref().map(|_| "<redacted>");
        f.debug_struct("Config")
            .field("model", &self.model)
            .field("projection", &self.projection)
            .field("upstream", &self.upstream)
            .field("embeddings", &self.embeddings)
            .field("embeddings_model", &self.embeddings_model)
            .field("listen", &self.listen)
            .field("max_in_flight", &self.max_in_flight)
            .field("generation_timeout", &self.generation_timeout)
            .field("embedding_timeout", &self.embedding_timeout)
            .field("max_best_of", &self.max_best_of)
            .field("alpha", &self.alpha)
            .field("workers", &self.workers)
            .field("probe_timeout", &self.probe_timeout)
            .field("upstream_api_key", &redact(&self.upstream_api_key))
            .field("embeddings_api_key", &redact(&self.embeddings_api_key))
            .finish()
    }
}

impl Config {
    /// The contract's defaults for a model and an upstream; no API keys.
    pub fn new(model: impl Into<PathBuf>, upstream: impl Into<String>) -> Config {
        Config {
            model: model.into(),
            projection: None,
            upstream: upstream.into(),
            embeddings: None,
            embeddings_model: "embedding".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8090)),
            max_in_flight: 64,
            generation_timeout: Duration::from_secs(120),
            embedding_timeout: Duration::from_secs(30),
            max_best_of: 64,
            alpha: 0.05,
            workers: 2,
            probe_timeout: Duration::from_secs(2),
            upstream_api_key: None,
            embeddings_api_key: None,
        }
    }

    /// Reads the API keys from [`UPSTREAM_KEY_ENV`] and [`EMBEDDINGS_KEY_ENV`] (the embeddings
    /// key falls back to the upstream's when no separate embeddings URL is set). Empty
    /// variables count as unset.
    pub fn with_env_keys(mut self) -> Config {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        self.upstream_api_key = var(UPSTREAM_KEY_ENV);
        self.embeddings_api_key = var(EMBEDDINGS_KEY_ENV).or_else(|| {
            if self.embeddings.is_none() {
                self.upstream_api_key.clone()
            } else {
                None
            }
        });
        self
    }

    /// The projection path: the flag's, or the model's with `.hrm` -> `.projection.safetensors`.
    pub fn projection_path(&self) -> PathBuf {
        self.projection
            .clone()
            .unwrap_or_else(|| default_projection(&self.model))
    }

    /// The embeddings base URL (the upstream's when unset), without a trailing slash.
    pub fn embeddings_url(&self) -> String {
        base_url(self.embeddings.as_deref().unwrap_or(&self.upstream))
    }

    /// The generation base URL, without a trailing slash.
    pub fn upstream_url(&self) -> String {
        base_url(&self.upstream)
    }

    /// Checks every value; the error names the flag.
    pub fn validate(&self) -> Result<(), String> {
        for (flag, url) in [
            ("--upstream", Some(self.upstream.as_str())),
            ("--embeddings", self.embeddings.as_deref()),
        ] {
            if let Some(url) = url {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "{flag} {url:?}: expected an http:// or https:// URL"
                    ));
                }
            }
        }
        if self.embeddings_model.is_empty() {
            return Err("--embeddings-model: empty".into());
        }
        if self.max_in_flight == 0 {
            return Err("--max-in-flight: must be at least 1".into());
        }
        if self.max_best_of == 0 {
            return Err("--max-best-of: must be at least 1".into());
        }
        if self.workers == 0 {
            return Err("--workers: must be at least 1".into());
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(format!("--alpha {}: must be in (0, 1)", self.alpha));
        }
        for (flag, t) in [
            ("--generation-timeout", self.generation_timeout),
            ("--embedding-timeout", self.embedding_timeout),
        ] {
            if t.is_zero() {
                return Err(format!("{flag}: must be positive"));
            }
        }
        Ok(())
    }
}

/// `X.hrm` -> `X.projection.safetensors` (any other name: `.projection.safetensors` appended).
pub fn default_projection(model: &Path) -> PathBuf {
    let s = model.as_os_str().to_string_lossy();
    match s.strip_suffix(".hrm") {
        Some(stem) => PathBuf::from(format!("{stem}.projection.safetensors")),
        None => PathBuf::from(format!("{s}.projection.safetensors")),
    }
}

fn base_url(url: &str) -> String {
    let u = url.trim_end_matches('/');
    u.strip_suffix("/v1").unwrap_or(u).to_string()
}
