//! The two upstreams (generation, embeddings): an HTTP client per upstream, the calls the
//! gateway makes, and the classification of their failures.
//!
//! API keys go in an `Authorization: Bearer` header and nowhere else (never in a message or
//! a log line). A request that fails to *connect* (nothing was sent) is retried once; the
//! client (hyper) also re-sends on its own a request that a pooled connection closed before
//! writing it. Nothing that may have reached the upstream is retried.

use crate::metrics::Metrics;
use crate::utf8;
use serde_json::{json, Value};
use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Which upstream (the `upstream` label of the error metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Generation,
    Embeddings,
}

impl Role {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Role::Generation => "generation",
            Role::Embeddings => "embeddings",
        }
    }
}

/// What went wrong with an upstream call.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// No connection (refused, unreachable, DNS).
    Refused(String),
    /// The connection broke before a whole answer came.
    Closed(String),
    /// An answer that is not what the API says (not JSON, wrong shape, 5xx).
    Garbage(String),
    /// The upstream timed out (reqwest's own timeout; stage timeouts are applied above).
    Timeout,
    /// A 4xx answer: passed on with its status and message.
    Status {
        status: u16,
        message: String,
        kind: Option<String>,
        param: Option<String>,
    },
}

impl Failure {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Failure::Refused(_) => "refused",
            Failure::Closed(_) => "closed",
            Failure::Garbage(_) => "garbage",
            Failure::Timeout => "timeout",
            Failure::Status { .. } => "status_4xx",
        }
    }
}

/// A failed upstream call: which upstream, the URL called, what went wrong.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamError {
    pub(crate) role: Role,
    pub(crate) url: String,
    pub(crate) failure: Failure,
}

impl UpstreamError {
    /// A sentence naming the upstream and what was wrong (no key, no header).
    pub(crate) fn describe(&self) -> String {
        let who = format!("{} upstream {}", self.role.label(), self.url);
        match &self.failure {
            Failure::Refused(d) => format!("{who} refused the connection ({d})"),
            Failure::Closed(d) => format!("{who} closed the connection without an answer ({d})"),
            Failure::Garbage(d) => format!("{who} answered garbage: {d}"),
            Failure::Timeout => format!("{who} timed out"),
            Failure::Status {
                status, message, ..
            } => format!("{who} answered HTTP {status}: {message}"),
        }
    }
}

/// One OpenAI-compatible upstream.
pub(crate) struct Upstream {
    pub(crate) role: Role,
    base: String,
    key: Option<String>,
    client: reqwest::Client,
    /// Set once the upstream answered fewer choices than its `n` asked: from then on the
    /// gateway sends `best_of` requests without `n`.
    ignores_n: AtomicBool,
}

impl Upstream {
    pub(crate) fn new(role: Role, base: String, key: Option<String>) -> Result<Upstream, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // llama-server (cpp-httplib) closes idle keep-alive connections after 5 s: drop
            // ours first, so a request seldom meets a connection the server is closing.
            .pool_idle_timeout(Duration::from_secs(4))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Upstream {
            role,
            base,
            key,
            client,
            ignores_n: AtomicBool::new(false),
        })
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) fn ignores_n(&self) -> bool {
        self.ignores_n.load(Ordering::Relaxed)
    }

    pub(crate) fn set_ignores_n(&self) {
        self.ignores_n.store(true, Ordering::Relaxed);
    }

    fn error(&self, path: &str, failure: Failure) -> UpstreamError {
        UpstreamError {
            role: self.role,
            url: self.url(path),
            failure,
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut rb = self.client.request(method, self.url(path));
        if let Some(key) = &self.key {
            rb = rb.bearer_auth(key);
        }
        rb
    }

    /// Sends a request, retrying once when the connection could not be made (nothing sent);
    /// returns the response with its body unread.
    async fn send_raw(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, UpstreamError> {
        let build = || {
            let mut rb = self.request(method.clone(), path);
            if let Some(b) = body {
                rb = rb.json(b);
            }
            if let Some(t) = timeout {
                rb = rb.timeout(t);
            }
            rb
        };
        match build().send().await {
            Ok(r) => Ok(r),
            Err(e) if e.is_connect() => build()
                .send()
                .await
                .map_err(|e| self.error(path, classify(&e))),
            Err(e) => Err(self.error(path, classify(&e))),
        }
    }

    /// [`Upstream::send_raw`] with the whole body read.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Option<Duration>,
    ) -> Result<(u16, Vec<u8>), UpstreamError> {
        let resp = self.send_raw(method, path, body, timeout).await?;
        let status = resp.status().as_u16();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| self.error(path, classify(&e)))?;
        Ok((status, bytes.to_vec()))
    }

    /// POSTs JSON for a streamed answer: the response when it is 2xx (body unread), else the
    /// error its body gives.
    pub(crate) async fn post_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<reqwest::Response, UpstreamError> {
        let resp = self
            .send_raw(reqwest::Method::POST, path, Some(body), None)
            .await?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(resp);
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| self.error(path, classify(&e)))?;
        Err(self
            .parse(path, status, &bytes)
            .err()
            .unwrap_or_else(|| self.error(path, Failure::Garbage(format!("HTTP {status}")))))
    }

    /// POSTs JSON and parses a JSON answer (repaired to valid UTF-8); 4xx and 5xx are errors.
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, UpstreamError> {
        let (status, bytes) = self
            .send(reqwest::Method::POST, path, Some(body), None)
            .await?;
        self.parse(path, status, &bytes)
    }

    fn parse(&self, path: &str, status: u16, bytes: &[u8]) -> Result<Value, UpstreamError> {
        let text = utf8::repair(bytes);
        if (400..500).contains(&status) {
            let (message, kind, param) = crate::error::upstream_error_fields(&text);
            return Err(self.error(
                path,
                Failure::Status {
                    status,
                    message,
                    kind,
                    param,
                },
            ));
        }
        if !(200..300).contains(&status) {
            let (message, _, _) = crate::error::upstream_error_fields(&text);
            return Err(self.error(path, Failure::Garbage(format!("HTTP {status}: {message}"))));
        }
        serde_json::from_str::<Value>(&text).map_err(|e| {
            let head: String = text.chars().take(80).collect();
            self.error(
                path,
                Failure::Garbage(format!("a body that is not JSON ({e}): {head:?}")),
            )
        })
    }

    /// GET passed through: status and body.
    pub(crate) async fn get_raw(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), UpstreamError> {
        self.send(reqwest::Method::GET, path, None, Some(timeout))
            .await
    }

    /// Whether the upstream answers: GET /v1/models, else /health, 2xx within `timeout`.
    pub(crate) async fn probe(&self, timeout: Duration) -> Result<(), UpstreamError> {
        let first = self.get_raw("/v1/models", timeout).await;
        if let Ok((s, _)) = &first {
            if (200..300).contains(s) {
                return Ok(());
            }
        }
        match self.get_raw("/health", timeout).await {
            Ok((s, _)) if (200..300).contains(&s) => Ok(()),
            Ok((s, body)) => {
                let (m, _, _) = crate::error::upstream_error_fields(&utf8::repair(&body));
                Err(self.error("/health", Failure::Garbage(format!("HTTP {s}: {m}"))))
            }
            Err(e) => Err(e),
        }
    }

    /// Embeds `input` in one `/v1/embeddings` call: one f32 vector per input, in input order.
    pub(crate) async fn embed(
        &self,
        model: &str,
        input: &[String],
    ) -> Result<(Vec<Vec<f32>>, Option<Value>), UpstreamError> {
        let path = "/v1/embeddings";
        let answer = self
            .post_json(path, &json!({"input": input, "model": model}))
            .await?;
        parse_embeddings(&answer, input.len())
            .map(|v| (v, answer.get("usage").cloned()))
            .map_err(|d| self.error(path, Failure::Garbage(d)))
    }

    /// Counts the failure in the error metric.
    pub(crate) fn count(&self, metrics: &Metrics, e: &UpstreamError) {
        metrics.upstream_error(self.role.label(), e.failure.kind());
    }
}

/// The embeddings of an OpenAI `/v1/embeddings` answer (`data[i].embedding`, ordered by
/// `data[i].index`), checked to be `count` vectors of one width.
pub fn parse_embeddings(answer: &Value, count: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no `data` list in the embeddings answer")?;
    if data.len() != count {
        return Err(format!("{} embeddings for {count} inputs", data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (pos, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            Some(i) => i
                .as_u64()
                .map(|i| i as usize)
                .filter(|&i| i < count)
                .ok_or_else(|| format!("data[{pos}].index is not an index below {count}"))?,
            None => pos,
        };
        let vec = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("data[{pos}].embedding is not a list of numbers"))?;
        let mut e = Vec::with_capacity(vec.len());
        for v in vec {
            let x = v
                .as_f64()
                .ok_or_else(|| format!("data[{pos}].embedding holds a non-number"))?;
            e.push(x as f32);
        }
        if out[index].replace(e).is_some() {
            return Err(format!("index {index} appears twice in data"));
        }
    }
    let out: Vec<Vec<f32>> = out.into_iter().map(Option::unwrap_or_default).collect();
    if let Some(first) = out.first() {
        if first.is_empty() || out.iter().any(|e| e.len() != first.len()) {
            return Err("embeddings of different or zero widths".into());
        }
    }
    Ok(out)
}

/// Names what went wrong in a reqwest error, from its kind and source chain.
fn classify(e: &reqwest::Error) -> Failure {
    let mut detail = String::new();
    let mut src: Option<&dyn std::error::Error> = e.source();
    while let Some(s) = src {
        detail = s.to_string();
        src = s.source();
    }
    if detail.is_empty() {
        detail = e.to_string();
    }
    // reqwest's Display includes the URL but never headers, so no key can leak here.
    if e.is_timeout() {
        Failure::Timeout
    } else if e.is_connect() {
        Failure::Refused(detail)
    } else if e.is_decode() || detail.contains("parse") || detail.contains("invalid HTTP") {
        // hyper's parse errors: an answer that is not HTTP at all
        Failure::Garbage(format!("not an HTTP answer ({detail})"))
    } else {
        Failure::Closed(detail)
    }
}
