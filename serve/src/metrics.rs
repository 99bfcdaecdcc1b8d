//! The gateway's Prometheus metrics (`GET /metrics`, text format), with the
//! `prometheus-client` crate.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteStatus {
    pub(crate) route: String,
    pub(crate) status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteLabel {
    pub(crate) route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StageLabel {
    pub(crate) stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct UpstreamKind {
    pub(crate) upstream: String,
    pub(crate) kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ResultLabel {
    pub(crate) result: String,
}

fn request_histogram() -> Histogram {
    // 0.5 ms .. ~65 s
    Histogram::new(exponential_buckets(0.0005, 2.0, 18))
}

fn stage_histogram() -> Histogram {
    // 10 us .. ~84 s (selection is microseconds, generation seconds)
    Histogram::new(exponential_buckets(0.00001, 2.0, 24))
}

/// Every metric the gateway exports, and their registry.
pub(crate) struct Metrics {
    registry: Registry,
    pub(crate) requests: Family<RouteStatus, Counter>,
    pub(crate) duration: Family<RouteLabel, Histogram, fn() -> Histogram>,
    pub(crate) stages: Family<StageLabel, Histogram, fn() -> Histogram>,
    pub(crate) upstream_errors: Family<UpstreamKind, Counter>,
    pub(crate) in_flight: Gauge,
    pub(crate) cancelled: Counter,
    pub(crate) reloads: Family<ResultLabel, Counter>,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RouteStatus, Counter>::default();
        let duration = Family::<RouteLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            request_histogram,
        );
        let stages = Family::<StageLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            stage_histogram,
        );
        let upstream_errors = Family::<UpstreamKind, Counter>::default();
        let in_flight = Gauge::default();
        let cancelled = Counter::default();
        let reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "hetreward_requests",
            "Requests answered, by route and HTTP status",
            requests.clone(),
        );
        registry.register(
            "hetreward_request_duration_seconds",
            "Time from request to response, by route",
            duration.clone(),
        );
        registry.register(
            "hetreward_stage_duration_seconds",
            "Time per stage: generation (upstream), embedding (upstream), selection (in process)",
            stages.clone(),
        );
        registry.register(
            "hetreward_upstream_errors",
            "Upstream failures by upstream (generation, embeddings) and kind",
            upstream_errors.clone(),
        );
        registry.register(
            "hetreward_requests_in_flight",
            "Requests being processed",
            in_flight.clone(),
        );
        registry.register(
            "hetreward_requests_cancelled",
            "Requests whose client disconnected before the answer (upstream calls dropped)",
            cancelled.clone(),
        );
        registry.register(
            "hetreward_model_reloads",
            "Model reloads by result (ok, error)",
            reloads.clone(),
        );
        Metrics {
            registry,
            requests,
            duration,
            stages,
            upstream_errors,
            in_flight,
            cancelled,
            reloads,
        }
    }

    pub(crate) fn stage(&self, stage: &str, seconds: f64) {
        self.stages
            .get_or_create(&StageLabel {
                stage: stage.to_string(),
            })
            .observe(seconds);
    }

    pub(crate) fn upstream_error(&self, upstream: &str, kind: &str) {
        self.upstream_errors
            .get_or_create(&UpstreamKind {
                upstream: upstream.to_string(),
                kind: kind.to_string(),
            })
            .inc();
    }

    pub(crate) fn reload(&self, ok: bool) {
        self.reloads
            .get_or_create(&ResultLabel {
                result: if ok { "ok" } else { "error" }.to_string(),
            })
            .inc();
    }

    /// The text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}
