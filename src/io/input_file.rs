//! Opening an input file: the one rule by which every reader — training and scoring tables,
//! model files — opens what it reads, whether called by the CLI, the C API or a binding.
//!
//! Only a regular file is read (symbolic links are followed). A FIFO, a socket, a device or a
//! folder is refused with an [`Error::Io`] naming the path and what it is: none has a size the
//! readers can check against, a device such as `/dev/zero` never ends, and a FIFO with no
//! writer (a `data.csv` made by `mkfifo`) blocks `open(2)` forever. `/dev/stdin` follows the
//! same rule: it is read when standard input is redirected from a regular file
//! (`hetreward inspect /dev/stdin < model.hrm`) and refused when it is a pipe or a terminal.
//!
//! **The bound.** Opening an input never waits for another process. The path is examined first
//! (`stat`) and a node that is not a regular file is refused without being opened (opening a
//! device can do things of its own). The file is then opened with `O_NONBLOCK | O_NOCTTY`, so
//! that a node swapped for a FIFO or a terminal in between returns at once instead of waiting
//! for a writer, and the open descriptor — what is read — is examined again (`fstat`) and
//! refused unless it is a regular file. `O_NONBLOCK` is then cleared (it means nothing for a
//! regular file, but the descriptor is an ordinary one from then on). Reading a regular file
//! ends within its size and each reader's own limits; a file system that stops answering (a hung
//! network mount) is beyond what any open call can bound.
//!
//! The cost is four system calls per input file opened (`stat`, `fstat` and two `fcntl`): 7 µs
//! more than a plain `File::open` on a busy 2-core machine, where that open alone took 6.7 µs —
//! nothing beside reading the file (`cost_of_the_rule` below measures it).

use crate::error::{Error, Result};
use std::fs::{File, Metadata};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (module docs), returning without waiting
/// whatever the path names.
///
/// Errors: [`Error::Io`] naming `path` when it cannot be opened (missing, no permission, ...)
/// or is not a regular file (the message says what it is: a FIFO, a socket, a device, a
/// folder).
pub(crate) fn open(path: &Path) -> Result<File> {
    let name = path.display().to_string();
    let io = |e: std::io::Error| Error::io(&name, &e);
    refuse_unless_regular(&name, &std::fs::metadata(path).map_err(io)?)?;
    let file = open_without_waiting(path).map_err(io)?;
    refuse_unless_regular(&name, &file.metadata().map_err(io)?)?;
    make_blocking(&file).map_err(io)?;
    Ok(file)
}

/// What a file-system node is, for messages ("a FIFO (named pipe)", "a folder", ...): the one
/// naming of node kinds that the input rule (here) and the output rule
/// ([`crate::io::atomic::not_replaceable`]) share. `None` for a regular file.
pub(crate) fn special_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a folder");
    }
    if t.is_symlink() {
        return Some("a symbolic link");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("a special file")
}

fn refuse_unless_regular(name: &str, meta: &Metadata) -> Result<()> {
    match special_kind(meta) {
        None => Ok(()),
        Some(kind) => Err(Error::io(
            name,
            &std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "is {kind}, not a regular file: inputs are read only from regular files (a \
                     pipe or device may never answer or never end)"
                ),
            ),
        )),
    }
}

#[cfg(unix)]
fn open_without_waiting(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_without_waiting(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn make_blocking(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function's caller owns, with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_blocking(_: &File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    /// `open` on a thread, failing (instead of hanging the suite) when it does not return.
    fn open_within(path: &Path, limit: Duration) -> Result<File> {
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = path.to_path_buf();
        std::thread::spawn(move || tx.send(open(&owned)));
        rx.recv_timeout(limit)
            .unwrap_or_else(|_| panic!("open({}) did not return in {limit:?}", path.display()))
    }

    fn refused(path: &Path, kind: &str) {
        let e = open_within(path, Duration::from_secs(5)).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::Io { .. }), "{text}");
        assert!(
            text.contains(&path.display().to_string())
                && text.contains(kind)
                && text.contains("not a regular file"),
            "{text}"
        );
    }

    #[test]
    fn only_regular_files_are_opened_and_nothing_waits() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("data.csv");
        mkfifo(&fifo);
        let started = Instant::now();
        refused(&fifo, "a FIFO (named pipe)");
        assert!(started.elapsed() < Duration::from_secs(1));
        // A link to a FIFO, a device, a folder, a socket.
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        refused(&link, "a FIFO");
        refused(Path::new("/dev/zero"), "a character device");
        refused(dir.path(), "a folder");
        let socket = dir.path().join("s.csv");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        refused(&socket, "a socket");
        // A regular file (and a link to one) opens, as an ordinary blocking descriptor.
        let file = dir.path().join("ok.csv");
        std::fs::write(&file, b"y\n1\n").unwrap();
        let linked = dir.path().join("ok_link.csv");
        std::os::unix::fs::symlink(&file, &linked).unwrap();
        for p in [&file, &linked] {
            let f = open(p).unwrap();
            use std::os::fd::AsRawFd;
            // SAFETY: fcntl on a live descriptor.
            let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
            assert_eq!(flags & libc::O_NONBLOCK, 0);
            let mut text = String::new();
            use std::io::Read;
            (&f).read_to_string(&mut text).unwrap();
            assert_eq!(text, "y\n1\n");
        }
        let e = open(&dir.path().join("missing.csv")).unwrap_err();
        assert!(matches!(e, Error::Io { .. }) && e.to_string().contains("missing.csv"));
    }

    /// The rule's cost against a plain `File::open` (both close the file), per open:
    /// `cargo test --release --lib input_file -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn cost_of_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, b"y\n1\n").unwrap();
        let runs = 200_000;
        let time = |f: &dyn Fn()| {
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let started = Instant::now();
                for _ in 0..runs {
                    f();
                }
                best = best.min(started.elapsed().as_secs_f64() / runs as f64);
            }
            best
        };
        let plain = time(&|| drop(File::open(&path).unwrap()));
        let rule = time(&|| drop(open(&path).unwrap()));
        println!(
            "File::open {:.2} us, input_file::open {:.2} us: +{:.2} us per input file",
            plain * 1e6,
            rule * 1e6,
            (rule - plain) * 1e6
        );
    }
}
