//! Files that change under the reader (issue 10): a training or scoring file truncated while
//! the library reads it must give an error (or, if the cut came too late to matter, the data),
//! never a signal. With the old memory-mapped reader the first truncation past the mapped
//! pages killed this test binary with SIGBUS.

use hetreward::io::{scoring, training};
use hetreward::Error;
use std::path::Path;
use std::time::Duration;

/// A safetensors training file: `y [n]`, `psi0 [n]`, `z [n, d1]`, all F64.
fn write_training(path: &Path, n: usize, d1: usize) -> Vec<u8> {
    let header = format!(
        "{{\"y\":{{\"dtype\":\"F64\",\"shape\":[{n}],\"data_offsets\":[0,{a}]}},\
         \"psi0\":{{\"dtype\":\"F64\",\"shape\":[{n}],\"data_offsets\":[{a},{b}]}},\
         \"z\":{{\"dtype\":\"F64\",\"shape\":[{n},{d1}],\"data_offsets\":[{b},{c}]}}}}",
        a = 8 * n,
        b = 16 * n,
        c = 16 * n + 8 * n * d1
    );
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    for i in 0..n {
        bytes.extend(((i % 2) as f64).to_le_bytes());
    }
    for _ in 0..n {
        bytes.extend(1.0f64.to_le_bytes());
    }
    for i in 0..n * d1 {
        bytes.extend((((i * 7919) % 1000) as f64 / 500.0 - 1.0).to_le_bytes());
    }
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// The outcome of a read raced against a truncation: data, or an I/O / format error.
fn acceptable<T>(result: hetreward::Result<T>) -> bool {
    match result {
        Ok(_) => true,
        Err(Error::Io { .. }) | Err(Error::Format { .. }) => true,
        Err(other) => panic!("unexpected error kind: {other:?}"),
    }
}

#[test]
fn truncating_a_file_while_it_is_read_is_an_error_not_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.safetensors");
    let (n, d1) = (100_000, 40); // 33.6 MB
    let bytes = write_training(&path, n, d1);
    let mut errors = 0;
    for round in 0..16u64 {
        std::fs::write(&path, &bytes).unwrap();
        let cut = (bytes.len() as u64 / 16) * round;
        let delay = Duration::from_micros(500 * (round % 8));
        let truncating = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len(cut).unwrap();
            })
        };
        let result = training::read_training(&path);
        errors += usize::from(result.is_err());
        assert!(acceptable(result), "round {round}");
        truncating.join().unwrap();
        // Once truncated, the file is refused before its data are read.
        match training::read_training(&path) {
            Err(Error::Format { .. }) | Err(Error::Io { .. }) => {}
            other => panic!(
                "round {round}: a truncated file was read: {:?}",
                other.map(|d| d.n())
            ),
        }
    }
    // The race is real: most reads were cut short (the file is read in ~30 ms).
    assert!(
        errors > 0,
        "no read was ever interrupted: the test did not test anything"
    );
}

#[test]
fn a_scoring_file_cut_under_the_reader_is_an_error_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phi.safetensors");
    let (m, d1) = (200_000, 20);
    let header = format!(
        "{{\"phi\":{{\"dtype\":\"F32\",\"shape\":[{m},{d1}],\"data_offsets\":[0,{}]}}}}",
        4 * m * d1
    );
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(std::iter::repeat_n(0.5f32.to_le_bytes(), m * d1).flatten());
    for round in 0..8u64 {
        std::fs::write(&path, &bytes).unwrap();
        let truncating = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_micros(300 * round));
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(64)
                    .unwrap();
            })
        };
        assert!(acceptable(scoring::read_phi(&path, d1)), "round {round}");
        truncating.join().unwrap();
    }
}

/// A sparse model file whose header is consistent with its (apparent) size of 4 TB: the reader
/// must not abort on the allocation — an error, not a dead host. Zeros behind the header are
/// refused from the dimensions at the payload's start (d1 = 0), before any allocation; a payload
/// whose d1 (2^20, d2 = 0) matches those 4 TB gets as far as the allocation, which fails.
#[test]
fn a_sparse_model_file_claiming_terabytes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.hrm");
    let d1: u64 = 1 << 20;
    let payload: u64 = 76 + 8 * (d1 * (d1 + 3) / 2);
    for with_dims in [false, true] {
        let mut header = b"HETRWRD\0".to_vec();
        header.extend(1u32.to_le_bytes());
        header.extend(payload.to_le_bytes());
        if with_dims {
            header.extend(7u64.to_le_bytes());
            header.extend((d1 as u32).to_le_bytes());
            header.extend(0u32.to_le_bytes());
        }
        std::fs::write(&path, &header).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        if f.set_len(20 + payload + 4).is_err() {
            eprintln!("this file system cannot hold a 4 TB sparse file; nothing to test");
            return;
        }
        match (with_dims, hetreward::io::model_file::load(&path)) {
            (false, Err(e @ Error::Format { .. })) => {
                assert!(e.to_string().contains("d1 = 0"), "{e}")
            }
            (true, Err(Error::Io { detail, .. })) => {
                assert!(detail.contains("cannot allocate"), "{detail}")
            }
            (_, other) => panic!("expected an error, got {:?}", other.map(|m| m.d1())),
        }
    }
}
