use hetreward::fit::*;
use hetreward::sim::*;
fn main() {
    let data = paper_simulation(600, ActionDesign::Uniform, 11);
    let pr = |p: &Progress| {
        eprintln!(
            "start {} it {} nll {:.12} g {:.3e}",
            p.start, p.iteration, p.neg_loglik, p.grad_norm
        );
        true
    };
    let c = FitControl {
        progress: Some(&pr),
        cancel: None,
    };
    let f = fit(&data, &FitOptions::default(), &c).unwrap();
    println!("{:?}", f.report);
}
