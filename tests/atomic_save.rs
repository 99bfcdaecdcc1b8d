//! Atomic saves (issue 7): a process killed (SIGKILL) at a random moment while it saves models
//! over and over never leaves a half-written model under the target name — the target is always
//! absent (before the first save) or exactly one of the complete models. Also: concurrent
//! savers and a concurrent reader of one path.
//!
//! Temporary files (issue 10): created exclusively, so a file or symbolic link planted under
//! any name in a shared folder is never opened, followed or overwritten; short, so a target
//! with a legal 255-byte name saves; and a failed save leaves the target and the folder as
//! they were.
//!
//! The saving process is this test binary re-run with `HETREWARD_SAVE_LOOP` set: the test
//! `save_loop_child` then saves two large models (about 9 MB each) alternately until killed.

use hetreward::covariance::CovarianceKind;
use hetreward::fit::{FitReport, SolverKind, Termination};
use hetreward::io::model_file;
use hetreward::{Params, RewardModel};
use nalgebra::DMatrix;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "HETREWARD_SAVE_LOOP";

/// A model with `d1` features (payload ~ 4 d1^2 bytes), distinguishable by `tag`.
fn big_model(d1: usize, tag: f64) -> RewardModel {
    let theta = (0..d1).map(|j| tag + j as f64 * 1e-3).collect();
    let l = DMatrix::from_fn(d1, d1, |i, j| {
        if i == j {
            0.05
        } else if j < i {
            tag * 1e-6
        } else {
            0.0
        }
    });
    let report = FitReport {
        solver: SolverKind::Newton,
        iterations: 9,
        total_iterations: 27,
        starts: 3,
        converged: true,
        termination: Termination::Converged,
        grad_norm: 1e-10,
        neg_loglik: 0.6,
        seconds: tag,
        tol: 1e-8,
    };
    RewardModel::from_parts(
        Params {
            theta,
            gamma: vec![tag, -tag],
        },
        10_000,
        CovarianceKind::Expected,
        report,
        l,
        DMatrix::from_diagonal_element(2, 2, 0.01),
    )
    .unwrap()
}

const D1: usize = 1024;

/// The child: saves models A and B alternately to the path in `HETREWARD_SAVE_LOOP` until it is
/// killed. Does nothing in a normal test run.
#[test]
fn save_loop_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let models = [big_model(D1, 1.0), big_model(D1, 2.0)];
    // Tell the parent we are about to save (the first save may be killed too).
    println!("ready");
    for k in 0.. {
        model_file::save(&models[k % 2], &path).unwrap();
    }
}

fn spawn_saver(path: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "save_loop_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the saving child")
}

/// A small deterministic generator for the kill delays.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

#[test]
fn a_killed_save_never_leaves_a_partial_model() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("model.hrm");
    let a = model_file::to_bytes(&big_model(D1, 1.0));
    let b = model_file::to_bytes(&big_model(D1, 2.0));
    assert!(a.len() > 4_000_000, "{} bytes", a.len());
    let mut rng = 0x5EED_u64;
    let (mut absent, mut seen_a, mut seen_b) = (0, 0, 0);
    let kills = 30;
    let started = Instant::now();
    for kill in 0..kills {
        let mut child = spawn_saver(&target);
        // Kill at a random moment: 0-150 ms after the start (a save of ~8 MB with fsync takes
        // a few to tens of ms, so kills land before, during and between saves).
        std::thread::sleep(Duration::from_micros(next(&mut rng) % 150_000));
        child.kill().expect("SIGKILL the saver");
        child.wait().unwrap();
        match std::fs::read(&target) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => absent += 1,
            Err(e) => panic!("kill {kill}: cannot read the target: {e}"),
            Ok(bytes) => {
                if bytes == a {
                    seen_a += 1;
                } else if bytes == b {
                    seen_b += 1;
                } else {
                    panic!(
                        "kill {kill}: the target holds {} bytes that are neither model \
                         (a partial or mixed write)",
                        bytes.len()
                    );
                }
                model_file::load(&target).expect("the target loads");
            }
        }
        // Anything else in the folder is a leftover temporary file of a killed save, hidden
        // and short (`.hrw-PID-N-RANDOM.tmp`).
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                name == "model.hrm" || (name.starts_with(".hrw-") && name.ends_with(".tmp")),
                "unexpected file {name}"
            );
        }
    }
    let leftovers = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != "model.hrm")
        .count();
    println!(
        "atomic save: {kills} SIGKILLs of a process saving {}-byte models in {:.1} s: target \
         absent {absent}x (killed before the first rename), model A {seen_a}x, model B \
         {seen_b}x, never partial; {leftovers} leftover temporary files",
        a.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(absent + seen_a + seen_b, kills);
    assert!(
        seen_a + seen_b > 0,
        "no save ever completed: kills came too early"
    );
}

/// Several threads saving to one path while another thread loads it: every load that finds the
/// file gets a complete model (the rename is atomic; the temporary names are unique).
#[test]
fn concurrent_saves_and_loads_of_one_path() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("shared.hrm");
    let models = [big_model(256, 1.0), big_model(256, 2.0)];
    let bytes = [
        model_file::to_bytes(&models[0]),
        model_file::to_bytes(&models[1]),
    ];
    let stop = std::sync::atomic::AtomicBool::new(false);
    let loads = std::thread::scope(|s| {
        for t in 0..4 {
            let (models, target) = (&models, &target);
            s.spawn(move || {
                for k in 0..25 {
                    model_file::save(&models[(t + k) % 2], target).unwrap();
                }
            });
        }
        let reader = s.spawn(|| {
            let mut loads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match std::fs::read(&target) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => panic!("{e}"),
                    Ok(b) => {
                        assert!(b == bytes[0] || b == bytes[1], "a partial model was read");
                        loads += 1;
                    }
                }
            }
            loads
        });
        // The savers are joined when the scope ends; stop the reader once they are done.
        std::thread::sleep(Duration::from_millis(10));
        while std::fs::read_dir(dir.path())
            .unwrap()
            .any(|e| e.unwrap().file_name() != "shared.hrm")
            || !target.exists()
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap()
    });
    let last = model_file::load(&target).unwrap();
    assert!(last == models[0] || last == models[1]);
    assert!(loads > 0);
    // No temporary file is left behind by saves that completed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// Every entry of a folder, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// A legal file name of 250 and of 255 bytes (NAME_MAX) saves and loads: the temporary name
/// does not grow with the target's.
#[test]
fn a_long_legal_file_name_saves() {
    let dir = tempfile::tempdir().unwrap();
    let model = big_model(8, 1.0);
    for len in [250, 255] {
        let name = format!("{}.hrm", "m".repeat(len - 4));
        let target = dir.path().join(&name);
        model_file::save(&model, &target).unwrap();
        assert_eq!(model_file::load(&target).unwrap(), model);
        // Saving again over an existing long name works too.
        model_file::save(&model, &target).unwrap();
    }
    assert_eq!(entries(dir.path()).len(), 2, "{:?}", entries(dir.path()));
}

/// Symbolic links planted under every name the old scheme used (`.NAME.tmp-PID-N`), and under
/// names of the current scheme's shape, never redirect a save: the file they point to is left
/// byte-for-byte as it was, and the target gets the model.
#[cfg(unix)]
#[test]
fn planted_symlinks_never_redirect_a_save() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"precious data").unwrap();
    let pid = std::process::id();
    for n in 0..64 {
        for name in [
            format!(".model.hrm.tmp-{pid}-{n}"),
            format!(".hrw-{pid}-{n}-0000000000000000.tmp"),
        ] {
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
    }
    let target = dir.path().join("model.hrm");
    let model = big_model(8, 2.0);
    for _ in 0..4 {
        model_file::save(&model, &target).unwrap();
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious data");
    assert_eq!(model_file::load(&target).unwrap(), model);
    assert!(!std::fs::symlink_metadata(&target)
        .unwrap()
        .file_type()
        .is_symlink());
    // Only the planted links, the victim and the target: no temporary file was left.
    assert_eq!(entries(dir.path()).len(), 128 + 2);
}

/// A save that cannot complete (the folder is missing; the target is a folder; the path names
/// no file) fails with an error naming the path and leaves the folder as it was.
#[test]
fn a_failed_save_leaves_everything_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let model = big_model(8, 1.0);
    let missing = dir.path().join("no/such/dir/model.hrm");
    let e = model_file::save(&model, &missing).unwrap_err().to_string();
    assert!(e.contains("model.hrm") && e.contains("No such file"), "{e}");
    let folder = dir.path().join("folder.hrm");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("inside"), b"x").unwrap();
    let e = model_file::save(&model, &folder).unwrap_err().to_string();
    assert!(e.contains("folder.hrm"), "{e}");
    assert_eq!(entries(&folder), ["inside"]);
    let e = model_file::save(&model, Path::new(""))
        .unwrap_err()
        .to_string();
    assert!(e.contains("path"), "{e}");
    assert_eq!(entries(dir.path()), ["folder.hrm"]);
}

/// A read-only folder: the save fails with the system's reason and the existing model is left
/// as it was (skipped when running as root, who may write anywhere).
#[cfg(unix)]
#[test]
fn a_read_only_folder_leaves_the_existing_model() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("model.hrm");
    model_file::save(&big_model(8, 1.0), &target).unwrap();
    let before = std::fs::read(&target).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
    let result = model_file::save(&big_model(8, 2.0), &target);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    if std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    }) {
        return; // root ignores the folder's permissions
    }
    let e = result.unwrap_err().to_string();
    assert!(e.contains("model.hrm") && e.contains("ermission"), "{e}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert_eq!(entries(dir.path()), ["model.hrm"]);
}
