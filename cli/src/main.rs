//! `hetreward`: the command-line interface, a thin shell over the library (docs/contract.md §5). It
//! validates arguments, reads files, calls the library and prints tables or JSON; it computes
//! nothing itself.
//!
//! Exit codes: 0 success; 2 bad input (arguments, data, files) and failures to write an output
//! (a file or standard output: full disk, I/O error); 3 not converged (`--require-converged` and the fit
//! missed its tolerance, or a step that must converge did not); 1 any other failure (singular information, internal error); 141 (= 128 + SIGPIPE,
//! what a shell reports for a program killed by SIGPIPE) silently, when the reader of standard
//! output went away (a closed pipe, e.g. `| head`) — nothing after that point happens, so `fit`
//! then publishes no file.
//!
//! Outputs never lose data: `fit` refuses (exit 2, before reading anything) an output that is
//! the same file as its input or as the other output (by identity: symbolic links, `./`, hard
//! links), checks that every output's folder accepts a new file, writes every output to an
//! exclusive temporary file beside it ([`hetreward::io::atomic`]) and renames them over the
//! targets only when everything, including standard output, succeeded. Standard output is held
//! in memory until the command has succeeded ([`Out`]): a failing command prints no result.
//! Every argument that is not a path is parsed through [`Utf8`], so a value that is not UTF-8
//! names its flag.

mod demo;
mod json;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand};
use demo::DemoOptions;
use hetreward::calibrate::{auto_reason, IntervalDiagnostics, IntervalMethod, IntervalOptions};
use hetreward::cluster::Heterogeneity;
use hetreward::codes::Coded;
use hetreward::covariance::CovarianceKind;
use hetreward::estimator::EstimatorOptions;
use hetreward::fit::{FitControl, FitOptions, Init, InitKind, Progress, SolverKind};
use hetreward::io::atomic::{self, PendingFile};
use hetreward::io::{model_file, scoring, training};
use hetreward::profile;
use hetreward::select::{self, DiffMethod, Policy};
use hetreward::{Dataset, Error, Params, RewardModel};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const EXAMPLES: &str = "\
Examples:
  hetreward demo                                        # the paper's pipeline on built-in data
  hetreward fit prefs.csv --out model.hrm --report report.json
  hetreward inspect model.hrm --json
  hetreward score model.hrm answers.safetensors --alpha 0.05 --json
  hetreward compare model.hrm pairs.csv --method exact
  hetreward select model.hrm candidates.safetensors --policy pbon --json
  hetreward serve --model model.hrm --upstream http://127.0.0.1:8081   # OpenAI-compatible pBoN gateway

Exit codes: 0 ok; 1 internal failure (e.g. singular information); 2 bad input (arguments, data,
files) or an output that cannot be written (a file, or stdout: e.g. a full disk); 3 not
converged (--require-converged and the fit missed its tolerance, or a step that must converge
did not); 141 (= 128 + SIGPIPE, no message) the reader of
stdout closed the pipe (e.g. `| head`): the command stops there and fit publishes no file.
fit never overwrites its input (--out or --report the same file as DATA, or --report the same
as --out, by identity: links and ./ included, is exit 2), writes only to absent or writable
regular files (not symbolic links, devices, FIFOs or read-only files: exit 2), and replaces its
outputs only when everything succeeded; a failed command leaves existing files as they were.";

#[derive(Parser)]
#[command(
    name = "hetreward",
    version,
    about = "Reward learning from heterogeneous human feedback, with confidence intervals",
    after_help = EXAMPLES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fit (theta, gamma) by maximum likelihood and write a model file.
    #[command(after_help = "\
Example:
  hetreward fit prefs.csv --out model.hrm --report report.json
  hetreward fit prefs.safetensors --out model.hrm --solver agd --max-iter 10000 --require-converged

DATA is .csv (header: cluster?, y, psi0, z1..z{d1}, psi1..psi{d2}) or .safetensors (tensors z
[n,d1] or phi0/phi1 [n,d1], psi0 [n], psi [n,d2], y [n], cluster [n] optional). A fit that stops
at --max-iter still writes the model (converged: false, a warning) unless --require-converged.")]
    Fit(FitArgs),
    /// Print a model file's estimates (with SEs and 95% CIs) and fit report.
    #[command(after_help = "\
Example:
  hetreward inspect model.hrm --json

JSON fields: n, d1, d2, theta, gamma, theta_se, gamma_se, covariance, solver, iterations,
converged, grad_norm, neg_loglik, seconds (+ termination, starts, total_iterations, tol).")]
    Inspect {
        /// The model file.
        model: PathBuf,
        /// Print JSON (the REPORT.json fields) instead of a table.
        #[arg(long)]
        json: bool,
        /// Show the paper's Wald intervals whatever interval method the model carries.
        #[arg(long)]
        wald: bool,
        /// Print every theta row (by default, above 50 theta coefficients the table shows a
        /// summary line and the 10 largest |z|; gamma is always in full).
        #[arg(long)]
        all_rows: bool,
    },
    /// Reward, SE and CI of each answer: r = theta . phi, se = sqrt(phi' S phi / n).
    #[command(after_help = "\
Example:
  hetreward score model.hrm answers.csv --alpha 0.05 --json

PHI is .safetensors with tensor phi [m,d1] (F32 or F64) or .csv with columns phi1..phi{d1}.
JSON: {\"alpha\", \"rows\": [{\"reward\", \"se\", \"lower\", \"upper\"}]}.")]
    Score {
        /// The model file.
        model: PathBuf,
        /// The answers' features (PHI).
        phi: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Test reward differences r(a0) - r(a1): CI, p-value, win/tie/loss and the win rate.
    #[command(after_help = "\
Example:
  hetreward compare model.hrm pairs.safetensors --method exact --json

PAIRS is .safetensors with tensors phi0, phi1 [m,d1] or .csv with columns phi0_1..phi0_{d1},
phi1_1..phi1_{d1}. \"win\" means a0 is significantly better; win rate = (wins + ties/2) / m.
JSON: {\"alpha\", \"method\", \"pairs\": [{\"diff\", \"se\", \"lower\", \"upper\", \"p_value\",
\"verdict\"}], \"wins\", \"losses\", \"ties\", \"win_rate\"}.")]
    Compare {
        /// The model file.
        model: PathBuf,
        /// The pairs of answers (PAIRS).
        pairs: PathBuf,
        /// Variance of the difference: exact (both rewards share theta_hat; default),
        /// independent (the paper's formula) or bound (the paper's upper bound).
        #[arg(long, value_parser = choice::<DiffMethod>(), default_value = DiffMethod::default().name())]
        method: DiffMethod,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Choose the best candidate of each group (prompt): BoN or pessimistic BoN.
    #[command(after_help = "\
Example:
  hetreward select model.hrm candidates.csv --policy pbon --alpha 0.05 --json

CANDIDATES is .safetensors with phi [m,d1], group [m] (the prompt of each candidate) and optional
penalty [m], or .csv with columns group, penalty (optional), phi1..phi{d1}.
bon maximises reward - penalty; pbon maximises lower - penalty (lower = reward - q se).
Ties go to the lowest index. JSON: {\"alpha\", \"policy\", \"groups\": [{\"group\", \"index\",
\"row\", \"reward\", \"se\", \"lower\", \"penalty\", \"score\"}]}.")]
    Select {
        /// The model file.
        model: PathBuf,
        /// The candidates (CANDIDATES).
        candidates: PathBuf,
        /// bon (maximise the reward) or pbon (maximise its lower confidence bound; default).
        #[arg(long, value_parser = choice::<Policy>(), default_value = Policy::Pbon.name())]
        policy: Policy,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Run the paper's LLM pipeline on built-in simulated data (no files needed).
    #[command(after_help = "\
Example:
  hetreward demo --seed 7 --n 33845

Simulates annotators with demographic covariates (one channel adversarial), answers with
embedding-like features and a gold reward; fits; prints (a) rationality coefficients with CIs,
(b) reward CIs and win/tie/loss between two LLMs, (c) BoN vs pBoN gold rewards for N = 20..128,
(d) calibrated intervals (the method --intervals auto picks) beside the paper's.")]
    Demo {
        /// Seed of the simulation (same seed, same output).
        #[arg(long, value_parser = text::<u64>(), default_value_t = DemoOptions::default().seed, allow_hyphen_values = true)]
        seed: u64,
        /// Number of training comparisons (at most 1,000,000).
        #[arg(long, value_parser = text::<usize>(), default_value_t = DemoOptions::default().n, allow_hyphen_values = true)]
        n: usize,
        /// Worker threads (0 = all cores, at most 1,024); results do not depend on it.
        #[arg(long, value_parser = text::<usize>(), default_value_t = DemoOptions::default().threads, allow_hyphen_values = true)]
        threads: usize,
        /// Bootstrap refits of report (d), the calibrated intervals (10..=100000).
        #[arg(long, value_parser = text::<usize>(), default_value_t = DemoOptions::default().bootstrap_reps)]
        bootstrap_reps: usize,
    },
    /// Serve an OpenAI-compatible Best-of-N gateway in front of a completions server and an
    /// embeddings server (docs/serve.md).
    #[command(after_help = "\
Example:
  hetreward serve --model mt_bench.hrm --upstream http://127.0.0.1:8081 \\
                  --embeddings http://127.0.0.1:8082 --listen 127.0.0.1:8090

best_of candidates come from the upstream (one request with n, topped up in parallel when it
ignores n), are embedded in one batch by the embeddings server with the projection's template,
and the n best by the reward's lower confidence bound are returned with their intervals.
Prints `hetreward serve: listening on http://ADDR` once ready. API keys from the environment:
HETREWARD_UPSTREAM_API_KEY, HETREWARD_EMBEDDINGS_API_KEY. SIGTERM/SIGINT drain and exit 0;
SIGHUP reloads the model. Exit 2: bad arguments or model; 1: an upstream does not answer or
its embedding width differs from the projection's.")]
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The reward model file (.hrm).
    #[arg(long)]
    model: PathBuf,
    /// The feature projection (default: the model's path with .hrm -> .projection.safetensors).
    #[arg(long)]
    projection: Option<PathBuf>,
    /// Base URL of the OpenAI-compatible generation server (/v1/... is appended).
    #[arg(long, value_parser = text::<String>())]
    upstream: String,
    /// Base URL of the OpenAI-compatible embeddings server (default: the upstream).
    #[arg(long, value_parser = text::<String>())]
    embeddings: Option<String>,
    /// The `model` field sent to /v1/embeddings.
    #[arg(long, value_parser = text::<String>(), default_value = "embedding")]
    embeddings_model: String,
    /// Address to listen on (port 0: any free port).
    #[arg(long, value_parser = text::<std::net::SocketAddr>(), default_value = "127.0.0.1:8090")]
    listen: std::net::SocketAddr,
    /// Requests in flight beyond which the gateway answers 429.
    #[arg(long, value_parser = text::<usize>(), default_value_t = 64)]
    max_in_flight: usize,
    /// Timeout of the generation stage, in seconds.
    #[arg(long, value_parser = text::<f64>(), default_value_t = 120.0)]
    generation_timeout: f64,
    /// Timeout of the embedding stage, in seconds.
    #[arg(long, value_parser = text::<f64>(), default_value_t = 30.0)]
    embedding_timeout: f64,
    /// Largest best_of accepted.
    #[arg(long, value_parser = text::<usize>(), default_value_t = 64)]
    max_best_of: usize,
    /// Default significance level of the intervals (a request's `alpha` overrides it).
    #[arg(long, value_parser = text::<f64>(), default_value_t = 0.05)]
    alpha: f64,
    /// Async worker threads.
    #[arg(long, value_parser = text::<usize>(), default_value_t = 2)]
    workers: usize,
}

#[derive(clap::Args)]
struct CommonArgs {
    /// Significance level: (1 - alpha) confidence intervals.
    #[arg(long, value_parser = text::<f64>(), default_value_t = 0.05, allow_hyphen_values = true)]
    alpha: f64,
    /// Print JSON (field names are stable) instead of a table.
    #[arg(long)]
    json: bool,
    /// Use the paper's Wald intervals whatever interval method the model carries.
    #[arg(long)]
    wald: bool,
}

/// Loads a model; with `wald`, switches it to the paper's Wald intervals.
fn load_model(path: &Path, wald: bool) -> Result<RewardModel, Failure> {
    let model = model_file::load(path)?;
    Ok(if wald { model.wald() } else { model })
}

/// A clap parser of a library enum's names (its one definition, [`hetreward::codes`]): the
/// names are listed in `--help` and in the error for any other word.
fn choice<E: Coded + Send + Sync>() -> impl TypedValueParser<Value = E> {
    choice_of(E::ALL)
}

/// [`choice`] restricted to some of the values.
fn choice_of<E: Coded + Send + Sync>(values: &'static [E]) -> impl TypedValueParser<Value = E> {
    Utf8(PossibleValuesParser::new(values.iter().map(|v| v.name())))
        .map(|name| E::from_name(&name).expect("one of the listed names"))
}

/// A value parser that first requires its text to be UTF-8 and says which argument it is when
/// it is not (clap's own parsers say only "invalid UTF-8 was detected in one or more
/// arguments"), then parses it with `P`. Every argument that is not a path goes through it
/// ([`text`], [`choice`]); a path may be any bytes. The test
/// `every_argument_but_a_path_names_itself_when_not_utf8` walks every subcommand's arguments.
#[derive(Clone)]
struct Utf8<P>(P);

impl<P: TypedValueParser> TypedValueParser for Utf8<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        if value.to_str().is_none() {
            let arg = arg.map_or_else(|| "...".to_string(), ToString::to_string);
            let message = format!(
                "invalid value '{}' for '{arg}': not valid UTF-8\n",
                value.as_encoded_bytes().escape_ascii()
            );
            return Err(
                clap::Error::raw(clap::error::ErrorKind::InvalidUtf8, message).with_cmd(cmd),
            );
        }
        self.0.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        self.0.possible_values()
    }
}

/// `T`'s `FromStr` as a function (clap's parser of any `FromStr` type).
type FromText<T> = fn(&str) -> Result<T, <T as std::str::FromStr>::Err>;

/// The parser of a number or count argument: [`Utf8`], then `T`'s `FromStr` (clap's messages
/// for text that is not a `T` are unchanged: `invalid value 'abc' for '--alpha <ALPHA>': ...`).
fn text<T>() -> Utf8<FromText<T>>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    Utf8(str::parse::<T>)
}

/// Most coefficients `fit --profile` accepts: each interval costs dozens of dense constrained
/// fits (`O(n p^2)` per Newton iteration).
const MAX_PROFILE_COEFFICIENTS: usize = 64;

#[derive(clap::Args)]
struct FitArgs {
    /// Print every theta row of the coefficient table (by default, above 50 theta coefficients
    /// it shows a summary line and the 10 largest |z|; gamma is always in full).
    #[arg(long)]
    all_rows: bool,
    /// Also print every coefficient's 95% profile-likelihood interval (offline reports; at
    /// most 64 coefficients, dozens of constrained fits each; an unbounded side is inf).
    #[arg(long)]
    profile: bool,
    /// Training data: .csv (cluster?, y, psi0, z1..z{d1}, psi1..psi{d2}) or .safetensors.
    data: PathBuf,
    /// Where to write the model file (absent or a writable regular file; replaced only when
    /// the whole command succeeds).
    #[arg(long)]
    out: PathBuf,
    /// Solver: newton (default; fast, multi-start) or agd (the paper's Algorithm 1).
    #[arg(long, value_parser = choice::<SolverKind>(), default_value = FitOptions::default().solver.name())]
    solver: SolverKind,
    /// agd step size for theta.
    #[arg(long, value_parser = text::<f64>(), default_value_t = FitOptions::default().eta1, allow_hyphen_values = true)]
    eta1: f64,
    /// agd step size for gamma.
    #[arg(long, value_parser = text::<f64>(), default_value_t = FitOptions::default().eta2, allow_hyphen_values = true)]
    eta2: f64,
    /// Iteration cap (default: newton 100, agd 10000; at most 1,000,000,000).
    #[arg(long, value_parser = text::<usize>(), allow_hyphen_values = true)]
    max_iter: Option<usize>,
    /// Gradient-norm tolerance.
    #[arg(long, value_parser = text::<f64>(), default_value_t = FitOptions::default().tol, allow_hyphen_values = true)]
    tol: f64,
    /// Seed for random starts.
    #[arg(long, value_parser = text::<u64>(), default_value_t = FitOptions::default().seed, allow_hyphen_values = true)]
    seed: u64,
    /// Start: default (homogeneous fit, gamma = 0) or random (the paper's U(-1,1)).
    #[arg(
        long,
        value_parser = choice_of(&[InitKind::Default, InitKind::Random]),
        default_value = FitOptions::default().init.kind().name(),
    )]
    init: InitKind,
    /// Explicit starting theta, comma-separated (d1 values).
    #[arg(long, value_parser = text::<f64>(), value_delimiter = ',', allow_hyphen_values = true)]
    theta0: Option<Vec<f64>>,
    /// Explicit starting gamma, comma-separated (d2 values; default zeros with --theta0).
    #[arg(long, value_parser = text::<f64>(), value_delimiter = ',', allow_hyphen_values = true)]
    gamma0: Option<Vec<f64>>,
    /// Extra random starts of the newton solver (at most 1,000).
    #[arg(long, value_parser = text::<usize>(), default_value_t = FitOptions::default().restarts, allow_hyphen_values = true)]
    restarts: usize,
    /// Covariance: expected (the paper's), observed, robust or cluster.
    #[arg(long, value_parser = choice::<CovarianceKind>(), default_value = CovarianceKind::default().name())]
    covariance: CovarianceKind,
    /// Confidence intervals: wald (the paper's; default), bootstrap (parametric, percentile;
    /// small samples), resized (adaptively resized bootstrap; high dimension),
    /// cluster-jackknife (refits leaving out each annotator; needs a cluster column),
    /// cluster-onestep (the same by one Newton step each, no refits) or auto (with a cluster
    /// column cluster-onestep, else picks by d1/n and n per parameter; says what it picked).
    /// Seeded by --seed.
    #[arg(long, value_parser = choice::<IntervalMethod>(), default_value = IntervalOptions::default().method.name())]
    intervals: IntervalMethod,
    /// Bootstrap refits B (default 400 for bootstrap, 100 for resized; 10..=100000).
    #[arg(long, value_parser = text::<usize>(), allow_hyphen_values = true)]
    bootstrap_reps: Option<usize>,
    /// Worker threads (0 = all cores, at most 1,024); results do not depend on it.
    #[arg(long, value_parser = text::<usize>(), default_value_t = FitOptions::default().threads, allow_hyphen_values = true)]
    threads: usize,
    /// Also write the fit report as JSON here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Fail (exit 3, nothing written) unless the solver meets --tol.
    #[arg(long)]
    require_converged: bool,
}

/// Exit status when the reader of standard output went away (EPIPE): 128 + SIGPIPE, what a
/// shell reports for a program killed by SIGPIPE. No message is printed.
const BROKEN_PIPE_EXIT: u8 = 141;

/// Why a command failed.
enum Failure {
    /// Print `hetreward: error: MESSAGE` on stderr and exit with `code`.
    Error { code: u8, message: String },
    /// The reader of stdout closed the pipe: stop quietly with [`BROKEN_PIPE_EXIT`].
    BrokenPipe,
}

impl From<Error> for Failure {
    /// The exit code of docs/errors.md's table: 2 bad input, 3 not converged
    /// (HETREWARD_NOT_CONVERGED: --require-converged and the tolerance not met, or a resized
    /// bootstrap that cannot estimate its inflation), 1 any other failure.
    fn from(e: Error) -> Self {
        let code = match e {
            Error::NotConverged { .. } => 3,
            ref e if e.is_bad_input() => 2,
            _ => 1,
        };
        Failure::Error {
            code,
            message: e.to_string(),
        }
    }
}

impl Failure {
    /// A failed write to standard output: quiet for a closed pipe, exit 2 otherwise.
    fn stdout(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Error {
                code: 2,
                message: format!("I/O error on <stdout>: {e}"),
            }
        }
    }

    fn exit(self) -> ExitCode {
        match self {
            Failure::Error { code, message } => {
                // Nothing more can be done if stderr is broken too; the exit code still tells.
                let _ = writeln!(std::io::stderr(), "hetreward: error: {message}");
                ExitCode::from(code)
            }
            Failure::BrokenPipe => ExitCode::from(BROKEN_PIPE_EXIT),
        }
    }
}

/// A command's standard output, held in memory until the command has succeeded: a failing
/// command prints no result, whatever it had computed before it failed. [`Out::publish`] writes
/// it (every write error is returned: Rust ignores SIGPIPE, so a closed pipe is an `EPIPE`
/// error here, not a signal); `fit` publishes before it renames its files over their targets,
/// so a closed or full stdout publishes no file.
struct Out(Vec<u8>);

impl Out {
    fn new() -> Self {
        Out(Vec::new())
    }

    /// Appends formatted text (use through `outln!`); writing to memory cannot fail.
    fn write_fmt(&mut self, args: std::fmt::Arguments) -> Result<(), Failure> {
        self.0.write_fmt(args).map_err(Failure::stdout)
    }

    /// Writes everything held so far to standard output and flushes it.
    fn publish(&mut self) -> Result<(), Failure> {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&self.0)
            .and_then(|()| stdout.flush())
            .map_err(Failure::stdout)?;
        self.0.clear();
        Ok(())
    }
}

/// `println!` to an [`Out`], returning a [`Failure`] from the enclosing function on error.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {
        $out.write_fmt(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// A warning on stderr; a failure to print it is ignored (there is nowhere else to say it).
fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "hetreward: warning: {message}");
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let mut out = Out::new();
    let result = match cli.command {
        Command::Fit(args) => run_fit(args, &mut out),
        Command::Inspect {
            model,
            json,
            wald,
            all_rows,
        } => run_inspect(&model, json, wald, all_rows, &mut out),
        Command::Score { model, phi, common } => run_score(&model, &phi, &common, &mut out),
        Command::Compare {
            model,
            pairs,
            method,
            common,
        } => run_compare(&model, &pairs, method, &common, &mut out),
        Command::Select {
            model,
            candidates,
            policy,
            common,
        } => run_select(&model, &candidates, policy, &common, &mut out),
        Command::Demo {
            seed,
            n,
            threads,
            bootstrap_reps,
        } => run_demo(seed, n, threads, bootstrap_reps, &mut out),
        Command::Serve(args) => run_serve(args),
    };
    match result.and_then(|()| out.publish()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit(),
    }
}

/// Prints clap's help, version or usage error and exits with clap's code (0 for help and
/// version, 2 for usage errors) — or with the stdout failure if the help cannot be printed.
fn clap_exit(e: clap::Error) -> ExitCode {
    let code = e.exit_code();
    let printed = e.print().and_then(|()| std::io::stdout().flush());
    match printed {
        Err(err) if code == 0 => Failure::stdout(err).exit(),
        _ => ExitCode::from(u8::try_from(code).unwrap_or(2)),
    }
}

/// A progress bar for fits: drawn on stderr only when it is a terminal, and only once the fit
/// has run for a moment (short fits print nothing). Shows the iteration within the current
/// start, the ETA to the iteration cap, and the gradient norm.
struct FitProgress {
    bar: ProgressBar,
    started: Instant,
    shown: AtomicBool,
    start: AtomicUsize,
}

impl FitProgress {
    /// `None` when stderr is not a terminal.
    fn new() -> Option<Self> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "fit [{elapsed_precise}] {bar:30} {pos}/{len} it, ETA {eta} | {msg}",
        )
        .expect("valid template");
        bar.set_style(style);
        Some(FitProgress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
            start: AtomicUsize::new(usize::MAX),
        })
    }

    /// The fit's observer: updates the bar and never cancels.
    fn observe(&self, p: &Progress) -> bool {
        if !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() > Duration::from_millis(500)
        {
            self.shown.store(true, Ordering::Relaxed);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        if self.start.swap(p.start, Ordering::Relaxed) != p.start {
            self.bar.reset();
        }
        self.bar.set_length(p.max_iter as u64);
        self.bar.set_position(p.iteration as u64);
        self.bar.set_message(format!(
            "start {} | grad norm {:.3e} | mean NLL {:.6}",
            p.start + 1,
            p.grad_norm,
            p.neg_loglik
        ));
        true
    }
}

/// Runs `work` with a progress observer (when stderr is a terminal) and clears the bar after.
fn with_progress<T>(work: impl FnOnce(&FitControl) -> T) -> T {
    let progress = FitProgress::new();
    let observe = |p: &Progress| progress.as_ref().is_none_or(|bar| bar.observe(p));
    let control = FitControl {
        progress: progress.as_ref().map(|_| &observe as _),
        cancel: None,
    };
    let out = work(&control);
    if let Some(p) = &progress {
        p.bar.finish_and_clear();
    }
    out
}

fn run_fit(args: FitArgs, out: &mut Out) -> Result<(), Failure> {
    check_fit_outputs(&args)?;
    let data = training::read_training(&args.data)?;
    if args.profile && data.n_params() > MAX_PROFILE_COEFFICIENTS {
        return Err(Error::invalid(
            "profile",
            format!(
                "--profile supports at most {MAX_PROFILE_COEFFICIENTS} coefficients; the data \
                 has {}",
                data.n_params()
            ),
        )
        .into());
    }
    let init = match (&args.theta0, &args.gamma0, args.init) {
        (Some(theta), gamma, InitKind::Default) => Init::Explicit(Params {
            theta: theta.clone(),
            gamma: gamma.clone().unwrap_or_else(|| vec![0.0; data.d2()]),
        }),
        (None, Some(_), _) => {
            return Err(Error::invalid("gamma0", "--gamma0 needs --theta0").into())
        }
        (Some(_), _, InitKind::Random) => {
            return Err(
                Error::invalid("init", "--init random cannot be combined with --theta0").into(),
            )
        }
        (None, None, InitKind::Default) => Init::Default,
        (None, None, InitKind::Random) => Init::Random,
        (_, _, InitKind::Explicit) => unreachable!("not among --init's values"),
    };
    let estimator = EstimatorOptions {
        fit: FitOptions {
            solver: args.solver,
            eta1: args.eta1,
            eta2: args.eta2,
            max_iter: args.max_iter,
            tol: args.tol,
            seed: args.seed,
            init,
            restarts: args.restarts,
            threads: args.threads,
        },
        covariance: args.covariance,
        intervals: IntervalOptions {
            method: args.intervals,
            reps: args.bootstrap_reps,
        },
        require_converged: args.require_converged,
    }
    .check()?;
    // --require-converged and the tolerance not met: exit 3, nothing written.
    let model = with_progress(|control| estimator.estimate(&data, control))?;
    let r = model.report();
    if !r.converged {
        warn(&format!("not converged: {}", r.shortfall()));
    }
    // Every output goes to a temporary file first; they are published (renamed over their
    // targets) only once everything, standard output included, has succeeded.
    let mut model_out = PendingFile::create(&args.out)?;
    model_out.write_all(&model_file::to_bytes(&model))?;
    let diagnostics = model.diagnostics_on(&data);
    // The annotator-heterogeneity diagnostic of a fit whose data have cluster ids (issue 20)
    // and beside it the annotators' leverage (which coefficients rest on few annotators),
    // both from the model's inverse information (no second Gram product).
    let (heterogeneity, leverage) = match data.cluster() {
        Some(_) => {
            let (h, l) = hetreward::parallel::run_in_pool(args.threads, || {
                hetreward::cluster::diagnostics_of_fit(&data, &model)
            })?;
            (Some(h), Some(l))
        }
        None => (None, None),
    };
    let report_out = match &args.report {
        Some(path) => {
            let mut f = PendingFile::create(path)?;
            let report = json::model_report(
                &model,
                &diagnostics,
                heterogeneity.as_ref(),
                leverage.as_ref(),
            );
            f.write_all((pretty(&report) + "\n").as_bytes())?;
            Some(f)
        }
        None => None,
    };
    print_model(&model, &diagnostics, args.all_rows, out)?;
    print_auto_fallback(&data, &model, args.threads, out)?;
    if let Some(h) = &heterogeneity {
        print_heterogeneity(h, &model, out)?;
    }
    if let Some(l) = &leverage {
        print_leverage(l, &model, out)?;
    }
    if args.profile {
        print_profile(&data, &model, args.threads, out)?;
    }
    out.publish()?;
    if let Some(f) = report_out {
        f.commit()?;
    }
    model_out.commit()?;
    Ok(())
}

/// When `auto` fell back from the one-step to the exact cluster jackknife, the
/// annotator and the coefficient that made the one-step impossible.
fn print_auto_fallback(
    data: &Dataset,
    model: &RewardModel,
    threads: usize,
    out: &mut Out,
) -> Result<(), Failure> {
    let c = model.calibration();
    if c.requested() == IntervalMethod::Auto && c.method() == IntervalMethod::ClusterJackknife {
        let why = hetreward::parallel::run_in_pool(threads, || {
            hetreward::cluster::one_step_obstacle(data, model.params())
        })?;
        if let Some(why) = why {
            outln!(out, "fallback: {why}; auto used the exact refits instead");
        }
    }
    Ok(())
}

/// The annotators' leverage diagnostics of a fit whose data have cluster ids: the largest
/// annotator leverage against the balanced `p / G`, the coefficient with the fewest effective
/// annotators, and the warning naming every coefficient that rests on few annotators.
fn print_leverage(
    l: &hetreward::Result<hetreward::cluster::leverage::Leverage>,
    model: &RewardModel,
    out: &mut Out,
) -> Result<(), Failure> {
    let l = match l {
        Ok(l) => l,
        Err(e) => {
            outln!(out, "leverage: not computed ({e})");
            return Ok(());
        }
    };
    let name = |c: usize| json::coefficient_name(model.d1(), c);
    let top = (0..l.clusters())
        .max_by(|&a, &b| l.leverage[a].total_cmp(&l.leverage[b]))
        .unwrap_or(0);
    let fewest = (0..l.coefficients())
        .min_by(|&a, &b| l.effective[a].total_cmp(&l.effective[b]))
        .unwrap_or(0);
    outln!(
        out,
        "leverage: {} annotators; largest leverage {:.3} (annotator {}; balanced {:.3}); fewest \
         effective annotators {:.1} for {} (annotator {} carries {:.0}% of its information)",
        l.clusters(),
        l.leverage[top],
        l.ids[top],
        l.coefficients() as f64 / l.clusters() as f64,
        l.effective[fewest],
        name(fewest),
        l.ids[l.top[fewest]],
        100.0 * l.partial_of(l.top[fewest], fewest)
    );
    if let Some(w) = &l.warning {
        outln!(out, "warning: {w}");
    }
    Ok(())
}

/// The annotator-heterogeneity diagnostic of a fit whose data have cluster ids,
/// with its warning unless the model's intervals are already cluster-aware.
fn print_heterogeneity(
    h: &hetreward::Result<Heterogeneity>,
    model: &RewardModel,
    out: &mut Out,
) -> Result<(), Failure> {
    let h = match h {
        Ok(h) => h,
        Err(e) => {
            outln!(out, "heterogeneity: not computed ({e})");
            return Ok(());
        }
    };
    let name = |c: usize| json::coefficient_name(model.d1(), c);
    let d1 = model.d1();
    let (theta_max, gamma_max) = (
        h.design_effects[..d1].iter().fold(0.0f64, |m, &v| m.max(v)),
        h.design_effects[d1..].iter().fold(0.0f64, |m, &v| m.max(v)),
    );
    outln!(
        out,
        "heterogeneity: {} clusters; design effect (cluster-robust / model variance) max {:.2} \
         over theta, {:.2} over gamma; most significant {} {:.2} ({:.1} noise SDs above 1): an \
         interval assuming independent comparisons covers it ~{:.0}%",
        h.clusters,
        theta_max,
        gamma_max,
        name(h.worst),
        h.design_effects[h.worst],
        h.excess_z[h.worst],
        100.0 * h.independent_coverage
    );
    if let Some(w) = &h.warning {
        if model.calibration().method().is_cluster() {
            outln!(
                out,
                "note: {w} (this model's intervals are cluster-aware: {})",
                model.calibration().method().name()
            );
        } else {
            outln!(out, "warning: {w}");
        }
    }
    Ok(())
}

/// The 95% profile-likelihood interval of every coefficient of `model`, fitted to `data`.
fn print_profile(
    data: &Dataset,
    model: &RewardModel,
    threads: usize,
    out: &mut Out,
) -> Result<(), Failure> {
    const ALPHA: f64 = 0.05;
    let intervals = hetreward::parallel::run_in_pool(threads, || {
        (0..data.n_params())
            .map(|c| profile::coefficient_interval(data, model.params(), c, ALPHA))
            .collect::<hetreward::Result<Vec<_>>>()
    })??;
    let fits: usize = intervals.iter().map(|p| p.fits).sum();
    outln!(
        out,
        "profile-likelihood 95% intervals ({fits} constrained fits):"
    );
    outln!(
        out,
        "{:<12} {:>12} {:>12} {:>12}",
        "coefficient",
        "estimate",
        "lower",
        "upper"
    );
    // Rows in the stacked order (theta, then gamma), named as the coefficient table names them.
    let table = model.coefficients(ALPHA)?;
    for (row, p) in table.rows().iter().zip(&intervals) {
        let name = row.name();
        outln!(
            out,
            "{name:<12} {:>12.6} {:>12.6} {:>12.6}",
            p.estimate,
            p.lower,
            p.upper
        );
    }
    Ok(())
}

/// Checks `fit`'s outputs before any work: no output is the same file as DATA or as the other
/// output, and each names a file that is absent or a writable regular file (not a symbolic
/// link, folder, device, pipe or socket) in a folder that accepts a new file.
fn check_fit_outputs(args: &FitArgs) -> Result<(), Failure> {
    let mut outputs = vec![("--out", args.out.as_path())];
    if let Some(report) = &args.report {
        outputs.push(("--report", report.as_path()));
    }
    let data = FileIdentity::of(&args.data);
    for (i, &(flag, path)) in outputs.iter().enumerate() {
        // The library's one rule of what names an output file, reported under the flag.
        atomic::split(path).map_err(|e| match e {
            Error::InvalidArgument { reason, .. } => Error::invalid(flag, reason),
            other => other,
        })?;
        let id = FileIdentity::of(path);
        if id.same_as(&data) {
            return Err(Error::invalid(
                flag,
                format!(
                    "`{}` is the training data DATA (`{}`): refusing to overwrite an input",
                    path.display(),
                    args.data.display()
                ),
            )
            .into());
        }
        for &(other_flag, other) in &outputs[..i] {
            if id.same_as(&FileIdentity::of(other)) {
                return Err(Error::invalid(
                    flag,
                    format!(
                        "`{}` is the same file as {other_flag} (`{}`): each output needs its \
                         own file",
                        path.display(),
                        other.display()
                    ),
                )
                .into());
            }
        }
    }
    for &(flag, path) in &outputs {
        if let Some(reason) = std::fs::symlink_metadata(path)
            .ok()
            .as_ref()
            .and_then(atomic::not_replaceable)
        {
            return Err(Error::invalid(flag, format!("`{}` {reason}", path.display())).into());
        }
        atomic::check_writable(path)?;
    }
    Ok(())
}

/// What makes two paths the same file, whatever their spelling: the file they reach (following
/// symbolic links; hard links share it) and the directory entry a rename would replace (the
/// folder's identity and the file name).
#[derive(Debug)]
struct FileIdentity {
    file: Option<(u64, u64)>,
    entry: Option<(u64, u64, std::ffi::OsString)>,
}

impl FileIdentity {
    fn of(path: &Path) -> Self {
        let entry = atomic::split(path)
            .ok()
            .and_then(|(dir, name)| node(&dir).map(|(dev, ino)| (dev, ino, name.to_os_string())));
        FileIdentity {
            file: node(path),
            entry,
        }
    }

    fn same_as(&self, other: &FileIdentity) -> bool {
        (self.file.is_some() && self.file == other.file)
            || (self.entry.is_some() && self.entry == other.entry)
    }
}

/// (device, inode) of what `path` reaches (links followed), if it exists.
#[cfg(unix)]
fn node(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Without inodes: a hash of the canonical path stands for the file.
#[cfg(not(unix))]
fn node(path: &Path) -> Option<(u64, u64)> {
    use std::hash::{Hash, Hasher};
    let canonical = std::fs::canonicalize(path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canonical.hash(&mut h);
    Some((0, h.finish()))
}

fn run_inspect(
    path: &Path,
    as_json: bool,
    wald: bool,
    all_rows: bool,
    out: &mut Out,
) -> Result<(), Failure> {
    let model = load_model(path, wald)?;
    if as_json {
        let report = json::model_report(&model, &model.diagnostics(), None, None);
        outln!(out, "{}", pretty(&report));
    } else {
        print_model(&model, &model.diagnostics(), all_rows, out)?;
    }
    Ok(())
}

fn run_score(model: &Path, phi: &Path, common: &CommonArgs, out: &mut Out) -> Result<(), Failure> {
    let model = load_model(model, common.wald)?;
    let input = scoring::read_phi(phi, model.d1())?;
    let rows = model.score_batch(&input.phi, common.alpha)?;
    if common.json {
        outln!(out, "{}", pretty(&json::score_report(common.alpha, &rows)));
        return Ok(());
    }
    let level = ci_label(common.alpha);
    outln!(
        out,
        "{:>6} {:>12} {:>12} {:>12} {:>12}",
        "row",
        "reward",
        "se",
        format!("{level}_lower"),
        format!("{level}_upper")
    );
    for (i, r) in rows.iter().enumerate() {
        outln!(
            out,
            "{i:>6} {:>12.6} {:>12} {:>12.6} {:>12.6}",
            r.reward,
            se_text(r.se, 6),
            r.lower,
            r.upper
        );
    }
    Ok(())
}

/// A standard error as the text tables print it: `unbounded` for the infinite SE of an
/// unbounded interval (weight on a coefficient one annotator carries alone), else `prec`
/// decimals.
fn se_text(se: f64, prec: usize) -> String {
    if se == f64::INFINITY {
        "unbounded".into()
    } else {
        format!("{se:.prec$}")
    }
}

fn run_compare(
    model: &Path,
    pairs: &Path,
    method: DiffMethod,
    common: &CommonArgs,
    out: &mut Out,
) -> Result<(), Failure> {
    let model = load_model(model, common.wald)?;
    let input = scoring::read_pairs(pairs, model.d1())?;
    let d1 = input.d1;
    let comparisons = (0..input.rows)
        .map(|i| {
            let row = i * d1..(i + 1) * d1;
            select::compare(
                &model,
                &input.phi0[row.clone()],
                &input.phi1[row],
                common.alpha,
                method,
            )
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let tally = select::win_rate(&comparisons);
    if common.json {
        outln!(
            out,
            "{}",
            pretty(&json::compare_report(
                common.alpha,
                method,
                &comparisons,
                &tally
            ))
        );
        return Ok(());
    }
    let level = ci_label(common.alpha);
    if model.calibration().uses_draws() {
        outln!(
            out,
            "diff = r(a0) - r(a1); {level} CI from the model's {} draws (exact); win = a0 significantly better",
            model.calibration().method().name()
        );
    } else {
        outln!(
            out,
            "diff = r(a0) - r(a1); {level} CI with the {} variance; win = a0 significantly better",
            method.name()
        );
    }
    outln!(
        out,
        "{:>6} {:>12} {:>12} {:>12} {:>12} {:>10} {:>8}",
        "pair",
        "diff",
        "se",
        "lower",
        "upper",
        "p_value",
        "verdict"
    );
    for (i, c) in comparisons.iter().enumerate() {
        outln!(
            out,
            "{i:>6} {:>12.6} {:>12} {:>12.6} {:>12.6} {:>10.4} {:>8}",
            c.diff,
            se_text(c.se, 6),
            c.lower,
            c.upper,
            c.p_value,
            c.verdict.name()
        );
    }
    outln!(
        out,
        "wins {}, ties {}, losses {}; win rate of a0 over a1 {:.2}%",
        tally.wins,
        tally.ties,
        tally.losses,
        100.0 * tally.win_rate
    );
    Ok(())
}

fn run_select(
    model: &Path,
    candidates: &Path,
    policy: Policy,
    common: &CommonArgs,
    out: &mut Out,
) -> Result<(), Failure> {
    let model = load_model(model, common.wald)?;
    let input = scoring::read_candidates(candidates, model.d1())?;
    let choices = scoring::select_groups(&model, &input, common.alpha, policy)?;
    if common.json {
        outln!(
            out,
            "{}",
            pretty(&json::select_report(common.alpha, policy, &choices))
        );
        return Ok(());
    }
    outln!(
        out,
        "policy {}: maximise {} - penalty; lower = {} lower bound",
        policy.name(),
        match policy {
            Policy::Bon => "reward",
            Policy::Pbon => "lower",
        },
        ci_label(common.alpha)
    );
    outln!(
        out,
        "{:>8} {:>10} {:>6} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "group",
        "candidates",
        "index",
        "row",
        "reward",
        "se",
        "lower",
        "penalty",
        "score"
    );
    for g in &choices {
        let c = &g.candidate;
        outln!(
            out,
            "{:>8} {:>10} {:>6} {:>6} {:>11.5} {:>11} {:>11.5} {:>11.5} {:>11.5}",
            g.group,
            g.size,
            g.index,
            g.row,
            c.interval.reward,
            se_text(c.interval.se, 5),
            c.interval.lower,
            c.penalty,
            c.score
        );
    }
    Ok(())
}

fn run_demo(
    seed: u64,
    n: usize,
    threads: usize,
    bootstrap_reps: usize,
    out: &mut Out,
) -> Result<(), Failure> {
    let options = DemoOptions {
        seed,
        n,
        threads,
        bootstrap_reps,
        ..DemoOptions::default()
    };
    let report = with_progress(|control| demo::run(&options, control))?;
    outln!(out, "{report}");
    Ok(())
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON of numbers and strings")
}

/// "ci95" for alpha = 0.05, "ci99.5" for alpha = 0.005.
fn ci_label(alpha: f64) -> String {
    format!("ci{}", (1000.0 * (1.0 - alpha)).round() / 10.0)
}

/// Prints `model` with its interval diagnostics `d` (`model.diagnostics()`, or
/// `model.diagnostics_on(data)` at fit time, when the data's cluster ids are known).
fn print_model(
    model: &RewardModel,
    d: &IntervalDiagnostics,
    all_rows: bool,
    out: &mut Out,
) -> Result<(), Failure> {
    let r = model.report();
    outln!(
        out,
        "n = {}, d1 = {}, d2 = {}; solver {} ({}, {} iterations, |grad| = {:.2e}); mean NLL {:.6}; covariance {}",
        model.n(),
        model.d1(),
        model.d2(),
        r.solver.name(),
        r.termination.name(),
        r.iterations,
        r.grad_norm,
        r.neg_loglik,
        model.covariance().name()
    );
    let c = model.calibration();
    let picked = if c.requested() == IntervalMethod::Auto {
        " (picked by auto)"
    } else {
        ""
    };
    match c.method() {
        IntervalMethod::Wald => outln!(out, "intervals: wald (the paper's){picked}"),
        IntervalMethod::Bootstrap => outln!(
            out,
            "intervals: bootstrap{picked}, percentile of B = {} refits (seed {}, {} did not converge)",
            c.reps(),
            c.seed(),
            c.diverged()
        ),
        IntervalMethod::ClusterJackknife | IntervalMethod::ClusterOneStep => outln!(
            out,
            "intervals: {}{picked}, G = {} clusters, t({}) quantiles ({} refits did not converge)",
            c.method().name(),
            c.reps(),
            c.reps().saturating_sub(1),
            c.diverged()
        ),
        IntervalMethod::Resized | IntervalMethod::Auto => outln!(
            out,
            "intervals: resized{picked}, B = {} refits (seed {}, {} did not converge); shrink {:.4}, alpha_hat {:.4}, c_hat {:.4}",
            c.reps(),
            c.seed(),
            c.diverged(),
            c.shrink(),
            c.alpha_hat(),
            c.c_hat()
        ),
    }
    if c.requested() == IntervalMethod::Auto {
        outln!(out, "auto: {}", auto_reason(c.method()));
    }
    if let Some(why) = c.unbounded_description(model.d1()) {
        outln!(out, "warning: unbounded: {why}");
    }
    outln!(
        out,
        "diagnostics: d1/n = {:.4}; MLE finite: {}; max |gamma_hat| = {:.4}; diverged refits {:.1}%",
        d.d1_over_n,
        if d.mle_finite { "yes" } else { "no" },
        d.max_abs_gamma,
        100.0 * d.diverged_share
    );
    if let Some(w) = &d.warning {
        outln!(out, "warning: {w}");
    }
    let table = model.coefficients(0.05)?;
    outln!(out, "{}", table.display(all_rows).to_string().trim_end());
    Ok(())
}

/// A timeout flag in seconds as a duration (positive and finite, at most a day).
fn seconds(flag: &str, value: f64) -> Result<std::time::Duration, Failure> {
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(std::time::Duration::from_secs_f64(value))
    } else {
        Err(Failure::Error {
            code: 2,
            message: format!("{flag} {value}: must be a number of seconds in (0, 86400]"),
        })
    }
}

/// `hetreward serve`: the flags as a `hetreward_serve::Config` (API keys from the
/// environment), then the gateway until SIGTERM/SIGINT. Exit 2: bad arguments or an
/// unloadable model; 1: an upstream that cannot be probed or a width mismatch.
fn run_serve(args: ServeArgs) -> Result<(), Failure> {
    let mut config = hetreward_serve::Config::new(args.model, args.upstream);
    config.projection = args.projection;
    config.embeddings = args.embeddings;
    config.embeddings_model = args.embeddings_model;
    config.listen = args.listen;
    config.max_in_flight = args.max_in_flight;
    config.generation_timeout = seconds("--generation-timeout", args.generation_timeout)?;
    config.embedding_timeout = seconds("--embedding-timeout", args.embedding_timeout)?;
    config.max_best_of = args.max_best_of;
    config.alpha = args.alpha;
    config.workers = args.workers;
    let config = config.with_env_keys();
    hetreward_serve::run(config).map_err(|e| Failure::Error {
        code: u8::try_from(e.code).unwrap_or(1),
        message: e.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::builder::ValueParser;
    use clap::CommandFactory;
    use std::ffi::OsString;

    /// Issue 22: a non-UTF-8 value names its argument, for every argument of every subcommand
    /// that is not a path (a path may be any bytes and reaches the file system as it is).
    #[cfg(unix)]
    #[test]
    fn every_argument_but_a_path_names_itself_when_not_utf8() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'0', 0xff]);
        let cli = Cli::command();
        let mut named = Vec::new();
        for sub in cli.get_subcommands() {
            for arg in sub.get_arguments() {
                if !arg.get_action().takes_values() {
                    continue;
                }
                // Every other required argument gets a plain value, so parsing reaches `arg`.
                let mut argv: Vec<OsString> = vec!["hetreward".into(), sub.get_name().into()];
                for other in sub.get_arguments() {
                    let value: OsString = if other.get_id() == arg.get_id() {
                        bad.clone()
                    } else if other.is_required_set() {
                        "x.csv".into()
                    } else {
                        continue;
                    };
                    if let Some(long) = other.get_long() {
                        argv.push(format!("--{long}").into());
                    }
                    argv.push(value);
                }
                let is_path = arg.get_value_parser().type_id() == ValueParser::path_buf().type_id();
                let result = Cli::try_parse_from(&argv);
                let shown = format!("{} {}", sub.get_name(), arg.get_id());
                if is_path {
                    assert!(
                        result.is_ok(),
                        "{shown}: a path may be any bytes: {:?}",
                        result.err().map(|e| e.to_string())
                    );
                    continue;
                }
                let message = result.err().map(|e| e.to_string()).unwrap_or_default();
                let long = format!("--{}", arg.get_long().expect("only paths are positional"));
                assert!(
                    message.contains(&format!("for '{long} <"))
                        && message.contains("'0\\xff'")
                        && message.contains("not valid UTF-8"),
                    "{shown}: {message}"
                );
                named.push(shown);
            }
        }
        // The walk saw the arguments it is about (a broken walk would check nothing).
        for shown in [
            "score alpha",
            "fit solver",
            "fit theta0",
            "fit threads",
            "demo n",
        ] {
            assert!(
                named.iter().any(|n| n == shown),
                "{shown} not walked: {named:?}"
            );
        }
    }
}
