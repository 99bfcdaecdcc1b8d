//! `hetreward`: the command-line interface, a thin shell over the library (SPEC §5).
//!
//! Exit codes: 0 success; 2 bad input (arguments, data, files); 3 `--require-converged` and the
//! fit did not converge; 1 any other failure (singular information, internal error).

use clap::{Parser, Subcommand, ValueEnum};
use hetreward::fit::{FitControl, FitOptions, Init, SolverKind};
use hetreward::inference::CovarianceKind;
use hetreward::io::{json, model_file, training};
use hetreward::{Error, Params, RewardModel};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "hetreward",
    version,
    about = "Reward learning from heterogeneous human feedback, with confidence intervals"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fit (theta, gamma) by maximum likelihood and write a model file.
    ///
    /// Example: hetreward fit prefs.csv --out model.hrm --report report.json
    Fit(FitArgs),
    /// Run the paper's pipeline on built-in simulated data (no files needed).
    ///
    /// Example: hetreward demo --seed 7 --n 600
    Demo {
        /// Seed of the simulation.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Number of training comparisons.
        #[arg(long, default_value_t = 600)]
        n: usize,
    },
    /// Print a model file's estimates and fit report.
    ///
    /// Example: hetreward inspect model.hrm --json
    Inspect {
        /// The model file.
        model: PathBuf,
        /// Print JSON (the REPORT.json fields) instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum SolverArg {
    Newton,
    Agd,
}

#[derive(Clone, Copy, ValueEnum)]
enum InitArg {
    Default,
    Random,
}

#[derive(Clone, Copy, ValueEnum)]
enum CovarianceArg {
    Expected,
    Observed,
    Robust,
    Cluster,
}

#[derive(clap::Args)]
struct FitArgs {
    /// Training data: .csv (cluster?, y, psi0, z1..z{d1}, psi1..psi{d2}) or .safetensors.
    data: PathBuf,
    /// Where to write the model file.
    #[arg(long)]
    out: PathBuf,
    /// Solver: newton (default; fast, multi-start) or agd (the paper's Algorithm 1).
    #[arg(long, value_enum, default_value = "newton")]
    solver: SolverArg,
    /// agd step size for theta.
    #[arg(long, default_value_t = 0.1)]
    eta1: f64,
    /// agd step size for gamma.
    #[arg(long, default_value_t = 0.08)]
    eta2: f64,
    /// Iteration cap (default: newton 100, agd 10000).
    #[arg(long)]
    max_iter: Option<usize>,
    /// Gradient-norm tolerance.
    #[arg(long, default_value_t = 1e-8)]
    tol: f64,
    /// Seed for random starts.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Start: default (homogeneous fit, gamma = 0) or random (the paper's U(-1,1)).
    #[arg(long, value_enum, default_value = "default")]
    init: InitArg,
    /// Explicit starting theta, comma-separated (d1 values).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    theta0: Option<Vec<f64>>,
    /// Explicit starting gamma, comma-separated (d2 values; default zeros with --theta0).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    gamma0: Option<Vec<f64>>,
    /// Extra random starts of the newton solver.
    #[arg(long, default_value_t = 2)]
    restarts: usize,
    /// Covariance: expected (the paper's), observed, robust or cluster.
    #[arg(long, value_enum, default_value = "expected")]
    covariance: CovarianceArg,
    /// Worker threads (0 = all cores); results do not depend on it.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Also write the fit report as JSON here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Fail (exit 3, nothing written) unless the solver meets --tol.
    #[arg(long)]
    require_converged: bool,
}

/// A failure with its exit code.
struct Failure {
    code: u8,
    message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure {
            code: if e.is_bad_input() { 2 } else { 1 },
            message: e.to_string(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fit(args) => run_fit(args),
        Command::Inspect { model, json } => run_inspect(model, json),
        Command::Demo { seed, n } => run_demo(seed, n),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("hetreward: error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run_fit(args: FitArgs) -> Result<(), Failure> {
    let data = training::read_training(&args.data)?;
    let init = match (&args.theta0, &args.gamma0, args.init) {
        (Some(theta), gamma, InitArg::Default) => Init::Explicit(Params {
            theta: theta.clone(),
            gamma: gamma.clone().unwrap_or_else(|| vec![0.0; data.d2()]),
        }),
        (None, Some(_), _) => {
            return Err(Error::invalid("gamma0", "--gamma0 needs --theta0").into())
        }
        (Some(_), _, InitArg::Random) => {
            return Err(
                Error::invalid("init", "--init random cannot be combined with --theta0").into(),
            )
        }
        (None, None, InitArg::Default) => Init::Default,
        (None, None, InitArg::Random) => Init::Random,
    };
    let options = FitOptions {
        solver: match args.solver {
            SolverArg::Newton => SolverKind::Newton,
            SolverArg::Agd => SolverKind::Agd,
        },
        eta1: args.eta1,
        eta2: args.eta2,
        max_iter: args.max_iter,
        tol: args.tol,
        seed: args.seed,
        init,
        restarts: args.restarts,
        threads: args.threads,
    };
    let kind = match args.covariance {
        CovarianceArg::Expected => CovarianceKind::Expected,
        CovarianceArg::Observed => CovarianceKind::Observed,
        CovarianceArg::Robust => CovarianceKind::Robust,
        CovarianceArg::Cluster => CovarianceKind::Cluster,
    };
    let model = RewardModel::estimate(&data, &options, kind, &FitControl::default())?;
    let r = model.report();
    if !r.converged {
        let msg = format!(
            "{} stopped ({}) after {} iterations with gradient norm {:.3e} > tol {:.1e}",
            r.solver.name(),
            r.termination.name(),
            r.iterations,
            r.grad_norm,
            r.tol
        );
        if args.require_converged {
            return Err(Failure {
                code: 3,
                message: format!("not converged: {msg}"),
            });
        }
        eprintln!("hetreward: warning: not converged: {msg}");
    }
    model_file::save(&model, &args.out)?;
    let report = json::model_report(&model);
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&report).expect("JSON of numbers") + "\n";
        std::fs::write(path, text).map_err(|e| Error::io(path.display().to_string(), &e))?;
    }
    print_table(&model);
    Ok(())
}

fn run_inspect(path: PathBuf, as_json: bool) -> Result<(), Failure> {
    let model = model_file::load(&path)?;
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json::model_report(&model)).expect("JSON of numbers")
        );
    } else {
        print_table(&model);
    }
    Ok(())
}

fn run_demo(seed: u64, n: usize) -> Result<(), Failure> {
    use hetreward::sim::{paper_phi, paper_simulation, ActionDesign};
    if n <= 5 {
        return Err(Error::invalid("n", format!("need more than 5 comparisons, got {n}")).into());
    }
    let data = paper_simulation(n, ActionDesign::Uniform, seed);
    println!("Paper §6.1 simulation (a0 ~ U(0,1), a1 ~ U(0,2)), n = {n}, seed = {seed}");
    let model = RewardModel::estimate(&data, &FitOptions::default(), CovarianceKind::Expected, &FitControl::default())?;
    print_table(&model);
    println!("\n{:<12} {:>10} {:>10} {:>10} {:>10} {:>10}", "(s, a)", "true r", "reward", "se", "lower", "upper");
    for (s, a) in [(0.5, 0.25), (0.5, 0.5), (1.0, 0.25), (1.0, 0.5)] {
        let phi = paper_phi(s, a);
        let ci = model.score(&phi, 0.05)?;
        let truth = hetreward::model::dot(&hetreward::sim::PAPER_THETA, &phi);
        println!(
            "({s:<4}, {a:<4}) {truth:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>10.4}",
            ci.reward, ci.se, ci.lower, ci.upper
        );
    }
    Ok(())
}

fn print_table(model: &RewardModel) {
    let r = model.report();
    println!(
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
    let q = hetreward::stats::critical_value(0.05);
    println!(
        "{:<12} {:>12} {:>12} {:>12} {:>12}",
        "parameter", "estimate", "se", "ci95_lower", "ci95_upper"
    );
    let rows = model
        .theta()
        .iter()
        .zip(model.theta_se())
        .enumerate()
        .map(|(j, (v, s))| (format!("theta[{j}]"), *v, *s))
        .chain(
            model
                .gamma()
                .iter()
                .zip(model.gamma_se())
                .enumerate()
                .map(|(k, (v, s))| (format!("gamma[{k}]"), *v, *s)),
        );
    for (name, v, s) in rows {
        println!(
            "{name:<12} {v:>12.6} {s:>12.6} {:>12.6} {:>12.6}",
            v - q * s,
            v + q * s
        );
    }
}
