//! The HTTP server: the router, the in-flight bound (429), request metrics and the
//! cancellation count, start-up (load, probe, bind), graceful shutdown and signals.

use crate::config::Config;
use crate::error::ApiError;
use crate::routes::{admin, completions, rerank};
use crate::state::{AppState, Loaded};
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Largest request body accepted (rerank requests can carry many documents).
const BODY_LIMIT: usize = 32 << 20;

/// Why the gateway could not start, with the process exit code the CLI uses: 2 for bad
/// arguments or an unloadable model, 1 for an upstream that does not answer, a width
/// mismatch or an address that cannot be bound.
#[derive(Debug, Clone)]
pub struct StartError {
    /// The exit code (1 or 2).
    pub code: i32,
    /// What went wrong (names the file, URL or numbers).
    pub message: String,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StartError {}

fn fail(code: i32, message: impl Into<String>) -> StartError {
    StartError {
        code,
        message: message.into(),
    }
}

/// A running gateway (from [`start`]): its address, and the handle that stops it.
pub struct Gateway {
    addr: SocketAddr,
    state: Arc<AppState>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Gateway {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Reloads the model and projection (as SIGHUP and `POST /admin/reload`).
    pub async fn reload(&self) -> Result<(), String> {
        self.state.reload().await.map(|_| ())
    }

    /// Stops accepting connections and waits until the requests in flight are answered.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task)
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }
}

/// Counts a request in the metrics; a request dropped before its answer (the client went
/// away, so its upstream futures were dropped too) counts as cancelled.
struct Tracker {
    st: Arc<AppState>,
    route: String,
    start: Instant,
    limited: bool,
    done: bool,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if self.limited {
            self.st.metrics.in_flight.dec();
        }
        if !self.done {
            self.st.metrics.cancelled.inc();
            self.record("cancelled");
        }
    }
}

impl Tracker {
    fn record(&self, status: &str) {
        let m = &self.st.metrics;
        m.requests
            .get_or_create(&crate::metrics::RouteStatus {
                route: self.route.clone(),
                status: status.to_string(),
            })
            .inc();
        m.duration
            .get_or_create(&crate::metrics::RouteLabel {
                route: self.route.clone(),
            })
            .observe(self.start.elapsed().as_secs_f64());
    }
}

async fn track(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    let limited = req.method() == Method::POST && route != "/admin/reload";
    let _permit = if limited {
        match Arc::clone(&st.in_flight).try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                let t = Tracker {
                    st: Arc::clone(&st),
                    route,
                    start: Instant::now(),
                    limited: false,
                    done: true,
                };
                t.record("429");
                return ApiError::too_many(st.config.max_in_flight).into_response();
            }
        }
    } else {
        None
    };
    if limited {
        st.metrics.in_flight.inc();
    }
    let mut tracker = Tracker {
        st: Arc::clone(&st),
        route,
        start: Instant::now(),
        limited,
        done: false,
    };
    let resp = next.run(req).await;
    tracker.done = true;
    tracker.record(resp.status().as_str());
    resp
}

async fn not_found(req: Request) -> Response {
    let mut e = ApiError::invalid(
        format!("no route {} {}", req.method(), req.uri().path()),
        None,
    );
    e.status = axum::http::StatusCode::NOT_FOUND;
    e.into_response()
}

fn router(st: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/completions", post(completions::completions))
        .route("/v1/chat/completions", post(completions::chat))
        .route("/v1/rerank", post(rerank::rerank))
        .route("/rerank", post(rerank::rerank))
        .route("/v2/rerank", post(rerank::rerank))
        .route("/v1/models", get(admin::models))
        .route("/health", get(admin::health))
        .route("/metrics", get(admin::metrics))
        .route("/admin/reload", post(admin::reload))
        .route_layer(middleware::from_fn_with_state(Arc::clone(&st), track))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(st)
}

/// Validates the configuration, loads the model and projection, probes both upstreams
/// (refusing to start when the embedding width differs from the projection's `dim_in`),
/// binds the address and serves in the background of the current tokio runtime.
pub async fn start(config: Config) -> Result<Gateway, StartError> {
    config.validate().map_err(|e| fail(2, e))?;
    let (model_path, projection_path) = (config.model.clone(), config.projection_path());
    let loaded = tokio::task::spawn_blocking(move || Loaded::load(&model_path, &projection_path))
        .await
        .map_err(|e| fail(2, format!("loading the model failed: {e}")))?
        .map_err(|e| fail(2, e))?;
    let dim_in = loaded.projection.dim_in();
    let projection_path = loaded.projection_path.clone();
    let st = Arc::new(AppState::new(config, loaded).map_err(|e| fail(1, e))?);

    // Probes.
    let gen_limit = st
        .config
        .generation_timeout
        .min(std::time::Duration::from_secs(30));
    st.generation.probe(gen_limit).await.map_err(|e| {
        fail(
            1,
            format!("the generation upstream does not answer: {}", e.describe()),
        )
    })?;
    let probe = ["probe".to_string()];
    let emb = tokio::time::timeout(
        st.config.embedding_timeout,
        st.embeddings.embed(&st.config.embeddings_model, &probe),
    )
    .await
    .map_err(|_| {
        fail(
            1,
            format!(
                "the embeddings upstream {} did not answer a probe within {} s",
                st.embeddings.url("/v1/embeddings"),
                st.config.embedding_timeout.as_secs_f64()
            ),
        )
    })?
    .map_err(|e| {
        fail(
            1,
            format!("the embeddings upstream does not answer: {}", e.describe()),
        )
    })?;
    let width = emb.0.first().map_or(0, Vec::len);
    if width != dim_in {
        return Err(fail(
            1,
            format!(
                "the embeddings upstream {} returns vectors of width {width}, but the projection \
                 {} takes dim_in = {dim_in}: serve the embedder the model was fitted with",
                st.embeddings.url("/v1/embeddings"),
                projection_path.display()
            ),
        ));
    }
    st.embedding_width.store(width, Ordering::Relaxed);

    let listener = tokio::net::TcpListener::bind(st.config.listen)
        .await
        .map_err(|e| fail(1, format!("cannot listen on {}: {e}", st.config.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| fail(1, format!("no local address: {e}")))?;
    let (stop, stopped) = oneshot::channel::<()>();
    let app = router(Arc::clone(&st));
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Ok(Gateway {
        addr,
        state: st,
        stop: Some(stop),
        task,
    })
}

/// `hetreward serve`: builds a runtime of `config.workers` threads, [`start`]s the gateway,
/// prints `hetreward serve: listening on http://ADDR` on stdout, reloads on SIGHUP, and on
/// SIGTERM or SIGINT stops accepting, drains the requests in flight and returns.
pub fn run(config: Config) -> Result<(), StartError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers.max(1))
        .enable_all()
        .build()
        .map_err(|e| fail(1, format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async move {
        // Handlers first: a SIGTERM that comes while the model loads, or right after the
        // listening line, is then a drain and exit 0, not the default action's death.
        let mut signals = Signals::install();
        let gateway = start(config).await?;
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "hetreward serve: listening on {}", gateway.url());
            let _ = out.flush();
        }
        signals.wait_for_stop(&gateway).await;
        eprintln!("hetreward serve: draining the requests in flight");
        gateway
            .shutdown()
            .await
            .map_err(|e| fail(1, format!("server error: {e}")))?;
        eprintln!("hetreward serve: stopped");
        Ok(())
    })
}

/// The process's SIGTERM, SIGINT and SIGHUP streams, installed before anything else.
#[cfg(unix)]
struct Signals {
    streams: Option<[tokio::signal::unix::Signal; 3]>,
}

#[cfg(unix)]
impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        let streams = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(t), Ok(i), Ok(h)) => Some([t, i, h]),
            _ => None,
        };
        Signals { streams }
    }

    /// Waits for SIGTERM or SIGINT, reloading on each SIGHUP meanwhile.
    async fn wait_for_stop(&mut self, gateway: &Gateway) {
        let Some([term, int, hup]) = self.streams.as_mut() else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        loop {
            tokio::select! {
                _ = term.recv() => return,
                _ = int.recv() => return,
                _ = hup.recv() => match gateway.state.reload().await {
                    Ok(_) => eprintln!("hetreward serve: SIGHUP: model reloaded"),
                    Err(e) => eprintln!("hetreward serve: SIGHUP: reload failed, old model kept: {e}"),
                },
            }
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> Signals {
        Signals
    }

    async fn wait_for_stop(&mut self, _gateway: &Gateway) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
