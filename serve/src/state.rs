//! What every request shares: the loaded model and projection (swapped atomically on reload;
//! a request keeps the `Arc` it started with), the upstreams, the metrics, the in-flight
//! bound.

use crate::config::Config;
use crate::metrics::Metrics;
use crate::projection::Projection;
use crate::upstream::{Role, Upstream};
use arc_swap::ArcSwap;
use hetreward::RewardModel;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A model and its projection, loaded together and checked to match.
pub(crate) struct Loaded {
    pub(crate) model: RewardModel,
    pub(crate) projection: Projection,
    pub(crate) model_path: PathBuf,
    pub(crate) projection_path: PathBuf,
    pub(crate) interval_method: &'static str,
}

impl Loaded {
    /// Loads both files; errors name the file and the mismatch.
    pub(crate) fn load(model_path: &Path, projection_path: &Path) -> Result<Loaded, String> {
        let model = hetreward::io::model_file::load(model_path)
            .map_err(|e| format!("{}: {e}", model_path.display()))?;
        let projection = Projection::load(projection_path)?;
        if projection.dim_out() != model.d1() {
            return Err(format!(
                "{}: the projection's dim_out {} differs from the model's d1 {} ({})",
                projection_path.display(),
                projection.dim_out(),
                model.d1(),
                model_path.display()
            ));
        }
        let interval_method = model.calibration().method().name();
        Ok(Loaded {
            model,
            projection,
            model_path: model_path.to_path_buf(),
            projection_path: projection_path.to_path_buf(),
            interval_method,
        })
    }

    /// The figures /admin/reload and /health report.
    pub(crate) fn figures(&self) -> Value {
        json!({
            "model": self.model_path.display().to_string(),
            "projection": self.projection_path.display().to_string(),
            "d1": self.model.d1(),
            "d2": self.model.d2(),
            "n": self.model.n(),
            "interval_method": self.interval_method,
            "dim_in": self.projection.dim_in(),
            "embedding_model": self.projection.embedding_model(),
            "text": self.projection.template(),
        })
    }
}

/// The gateway's shared state.
pub(crate) struct AppState {
    pub(crate) config: Config,
    pub(crate) loaded: ArcSwap<Loaded>,
    pub(crate) generation: Upstream,
    pub(crate) embeddings: Upstream,
    pub(crate) metrics: Metrics,
    pub(crate) in_flight: Arc<Semaphore>,
    /// The embeddings upstream's width, measured at start (0: not measured).
    pub(crate) embedding_width: AtomicUsize,
    /// Serialises reloads (a SIGHUP and an admin call at once load one after the other).
    pub(crate) reload_lock: tokio::sync::Mutex<()>,
    pub(crate) ids: AtomicUsize,
}

impl AppState {
    pub(crate) fn new(config: Config, loaded: Loaded) -> Result<AppState, String> {
        let generation = Upstream::new(
            Role::Generation,
            config.upstream_url(),
            config.upstream_api_key.clone(),
        )?;
        let embeddings = Upstream::new(
            Role::Embeddings,
            config.embeddings_url(),
            config.embeddings_api_key.clone(),
        )?;
        Ok(AppState {
            in_flight: Arc::new(Semaphore::new(config.max_in_flight)),
            config,
            loaded: ArcSwap::from_pointee(loaded),
            generation,
            embeddings,
            metrics: Metrics::new(),
            embedding_width: AtomicUsize::new(0),
            reload_lock: tokio::sync::Mutex::new(()),
            ids: AtomicUsize::new(0),
        })
    }

    /// A fresh id suffix for responses the gateway makes itself.
    pub(crate) fn next_id(&self) -> usize {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Reloads model + projection from their paths (off the runtime's threads) and swaps them
    /// in when they load and match the embedding width; else keeps the old ones. Counted in
    /// hetreward_model_reloads_total.
    pub(crate) async fn reload(self: &Arc<Self>) -> Result<Value, String> {
        let _guard = self.reload_lock.lock().await;
        let (model_path, projection_path) = {
            let cur = self.loaded.load();
            (cur.model_path.clone(), cur.projection_path.clone())
        };
        let width = self.embedding_width.load(Ordering::Relaxed);
        let result = tokio::task::spawn_blocking(move || {
            let loaded = Loaded::load(&model_path, &projection_path)?;
            if width != 0 && loaded.projection.dim_in() != width {
                return Err(format!(
                    "{}: the projection's dim_in {} differs from the embedding width {} of the \
                     embeddings upstream",
                    projection_path.display(),
                    loaded.projection.dim_in(),
                    width
                ));
            }
            Ok(loaded)
        })
        .await
        .map_err(|e| format!("reload task failed: {e}"))
        .and_then(|r| r);
        match result {
            Ok(loaded) => {
                let figures = loaded.figures();
                self.loaded.store(Arc::new(loaded));
                self.metrics.reload(true);
                Ok(figures)
            }
            Err(e) => {
                self.metrics.reload(false);
                Err(e)
            }
        }
    }
}
