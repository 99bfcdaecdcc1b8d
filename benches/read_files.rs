//! Cost of reading a training file, against the floor of reading its bytes (BENCHMARKS.md,
//! "Reading files").
//!
//!     cargo bench --bench read_files -- [--n N] [--d1 D1] [--d2 D2] [--reps R] [--f32] [--csv]
//!
//! Writes a paper-shaped safetensors training file (defaults: the paper's n = 33,845,
//! d1 = 2048, d2 = 38, z as F64: 555 MB) to the temporary folder, then times, in the same
//! process and with the page cache warm (the median of `--reps` runs each):
//!
//! * `fs::read`: the file's bytes into memory, nothing else (the floor any reader pays);
//! * `read_training`: what `hetreward fit` and `hetreward_dataset_load` do — header checks,
//!   decoding to f64, finiteness checks, the dataset's validation (identifiability check).
//!
//! It prints both and their ratio. Run it on an older commit to compare readers.
//!
//! With `--csv` the file is a training CSV instead (the same values, 17 significant digits),
//! and a third reader is timed in the same run: the csv crate's `Reader` with the
//! conversions the CSV reader made before issue 22 (trim, parse, finiteness check) — the
//! baseline of the bounded reader (`CsvTable`, on csv-core), whose cost it shows.

use hetreward::io::training::read_training;
use std::io::Write;
use std::time::Instant;

fn main() {
    let mut n = 33_845usize;
    let mut d1 = 2048usize;
    let mut d2 = 38usize;
    let mut reps = 5usize;
    let mut f32_z = false;
    let mut csv = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| -> usize {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{} needs a number", args[i]))
        };
        match args[i].as_str() {
            "--n" => n = value(i),
            "--d1" => d1 = value(i),
            "--d2" => d2 = value(i),
            "--reps" => reps = value(i),
            "--f32" => {
                f32_z = true;
                i -= 1;
            }
            "--csv" => {
                csv = true;
                i -= 1;
            }
            "--bench" => i -= 1,
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    if csv {
        return bench_csv(n, d1, d2, reps);
    }
    let path =
        std::env::temp_dir().join(format!("hetreward-read-{}.safetensors", std::process::id()));
    let bytes = write_file(&path, n, d1, d2, f32_z);
    println!(
        "file: n = {n}, d1 = {d1}, d2 = {d2}, z as {}: {:.0} MB",
        if f32_z { "F32" } else { "F64" },
        bytes as f64 / 1e6
    );
    let floor = median(reps, || {
        std::hint::black_box(std::fs::read(&path).unwrap());
    });
    let reader = median(reps, || {
        std::hint::black_box(read_training(&path).unwrap());
    });
    println!(
        "fs::read       {floor:.3} s  ({:.2} GB/s)",
        bytes as f64 / floor / 1e9
    );
    println!(
        "read_training  {reader:.3} s  = {:.2}x fs::read",
        reader / floor
    );
    std::fs::remove_file(&path).ok();
}

fn median(reps: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm the page cache and the allocator
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Writes `y [n]`, `psi0 [n]`, `psi [n, d2]`, `z [n, d1]` (seeded pseudo-random values).
fn write_file(path: &std::path::Path, n: usize, d1: usize, d2: usize, f32_z: bool) -> u64 {
    let zw = if f32_z { 4 } else { 8 };
    let (a, b, c, e) = (
        8 * n,
        16 * n,
        16 * n + 8 * n * d2,
        16 * n + 8 * n * d2 + zw * n * d1,
    );
    let header = format!(
        "{{\"y\":{{\"dtype\":\"F64\",\"shape\":[{n}],\"data_offsets\":[0,{a}]}},\
         \"psi0\":{{\"dtype\":\"F64\",\"shape\":[{n}],\"data_offsets\":[{a},{b}]}},\
         \"psi\":{{\"dtype\":\"F64\",\"shape\":[{n},{d2}],\"data_offsets\":[{b},{c}]}},\
         \"z\":{{\"dtype\":\"{}\",\"shape\":[{n},{d1}],\"data_offsets\":[{c},{e}]}}}}",
        if f32_z { "F32" } else { "F64" }
    );
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
    w.write_all(header.as_bytes()).unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..n {
        w.write_all(&((i % 2) as f64).to_le_bytes()).unwrap();
    }
    for _ in 0..n {
        w.write_all(&1.0f64.to_le_bytes()).unwrap();
    }
    for _ in 0..n * d2 {
        w.write_all(&(uniform() * 2.0 - 1.0).to_le_bytes()).unwrap();
    }
    for _ in 0..n * d1 {
        let v = uniform() * 2.0 - 1.0;
        if f32_z {
            w.write_all(&(v as f32).to_le_bytes()).unwrap();
        } else {
            w.write_all(&v.to_le_bytes()).unwrap();
        }
    }
    w.flush().unwrap();
    (8 + header.len() + e) as u64
}

/// `--csv`: the bounded CSV reader against the csv crate's reader, same file, same run.
fn bench_csv(n: usize, d1: usize, d2: usize, reps: usize) {
    let path = std::env::temp_dir().join(format!("hetreward-read-{}.csv", std::process::id()));
    let bytes = write_csv(&path, n, d1, d2);
    println!(
        "file: n = {n}, d1 = {d1}, d2 = {d2}, CSV: {:.0} MB",
        bytes as f64 / 1e6
    );
    let floor = median(reps, || {
        std::hint::black_box(std::fs::read(&path).unwrap());
    });
    let before = median(reps, || {
        std::hint::black_box(csv_crate_values(&path));
    });
    let table = median(reps, || {
        std::hint::black_box(hetreward::internals::io::CsvTable::read(&path).unwrap());
    });
    let reader = median(reps, || {
        std::hint::black_box(read_training(&path).unwrap());
    });
    println!("fs::read                 {floor:.3} s");
    println!(
        "csv crate (before)       {before:.3} s  = {:.2}x fs::read",
        before / floor
    );
    println!(
        "CsvTable (bounded, now)  {table:.3} s  = {:.2}x fs::read, {:.3}x the csv crate",
        table / floor,
        table / before
    );
    println!(
        "read_training            {reader:.3} s  = {:.2}x fs::read",
        reader / floor
    );
    std::fs::remove_file(&path).ok();
}

/// The CSV reader before issue 22: the csv crate's reader, fields trimmed, parsed, checked.
fn csv_crate_values(path: &std::path::Path) -> (Vec<String>, Vec<f64>) {
    let mut rdr = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .unwrap();
    let columns: Vec<String> = rdr.headers().unwrap().iter().map(str::to_string).collect();
    let mut values = Vec::new();
    for record in rdr.records() {
        for field in record.unwrap().iter() {
            let v: f64 = field.parse().unwrap();
            assert!(v.is_finite());
            values.push(v);
        }
    }
    (columns, values)
}

/// Writes a training CSV `y, psi0, z1..z{d1}, psi1..psi{d2}` (seeded pseudo-random values).
fn write_csv(path: &std::path::Path, n: usize, d1: usize, d2: usize) -> u64 {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut header = vec!["y".to_string(), "psi0".to_string()];
    header.extend((1..=d1).map(|j| format!("z{j}")));
    header.extend((1..=d2).map(|k| format!("psi{k}")));
    writeln!(w, "{}", header.join(",")).unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..n {
        write!(w, "{},1", i % 2).unwrap();
        for _ in 0..d1 + d2 {
            write!(w, ",{}", uniform() * 2.0 - 1.0).unwrap();
        }
        writeln!(w).unwrap();
    }
    w.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}
