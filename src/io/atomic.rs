//! Atomic file output: a file is written under a temporary name beside its target and renamed
//! over the target only when it is complete, so the target always holds either its old content
//! or the whole new one — never a partial write, whatever fails or kills the process.
//!
//! The temporary file is created exclusively (`O_CREAT | O_EXCL`: a file or symbolic link
//! already at that name, e.g. one planted in a shared folder, is never opened or followed) under
//! a short hidden name, `.hrw-PID-N-RANDOM.tmp` (at most 64 bytes, whatever the length of the
//! target's name), in the target's own folder (so the rename is atomic and never crosses file
//! systems). An uncommitted [`PendingFile`] removes its temporary file when dropped; a process
//! killed while writing can leave one behind, which nothing ever reads.
//!
//! The rename replaces the target's directory entry, so an existing target must be a regular
//! file that is not read-only: a symbolic link (e.g. `/dev/stdout`) would be replaced rather
//! than written through, a folder, a device (`/dev/null`), a pipe or a socket would become a
//! plain file, and a read-only file is one its owner protected — each is an error, checked
//! before anything is written. An existing target's permission bits are kept.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Attempts at finding a free temporary name before giving up (each name is random; a clash
/// means someone is planting names).
const ATTEMPTS: usize = 64;

/// A file being written: a temporary file beside `target`, published by [`PendingFile::commit`].
#[derive(Debug)]
pub struct PendingFile {
    target: PathBuf,
    tmp: PathBuf,
    file: File,
    committed: bool,
}

/// The folder a path's file lives in (`.` for a bare file name) and its file name: the one
/// definition of "this path names a file an output can be written to", used by every output
/// (the CLI's `--out` and `--report`, `hetreward_model_save`) before any work.
///
/// Errors: [`Error::InvalidArgument`] naming `path` when it has no file name (empty, `/`, a
/// path ending in `..`) or does not end with it (`m.hrm/`, `m.hrm/.`: the system reads those
/// as folders, so the final rename would fail after all the work).
pub fn split(path: &Path) -> Result<(PathBuf, &std::ffi::OsStr)> {
    let name = path.file_name().ok_or_else(|| {
        Error::invalid("path", format!("`{}` is not a file path", path.display()))
    })?;
    if !path
        .as_os_str()
        .as_encoded_bytes()
        .ends_with(name.as_encoded_bytes())
    {
        return Err(Error::invalid(
            "path",
            format!(
                "`{}` ends with a separator or `.`, which names a folder; give a file name",
                path.display()
            ),
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok((dir.to_path_buf(), name))
}

impl PendingFile {
    /// Creates an empty temporary file beside `target` (exclusively, under a fresh name).
    ///
    /// Errors: [`Error::Io`] naming `target` (missing folder, no permission, full disk, a
    /// read-only target); [`Error::InvalidArgument`] when `target` names no file, or exists and
    /// is not a regular file (a symbolic link, a folder, a device such as `/dev/null`, a pipe, a
    /// socket).
    pub fn create(target: &Path) -> Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let (dir, _) = split(target)?;
        let io = |e: std::io::Error| Error::io(target.display().to_string(), &e);
        check_replaceable(target)?;
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let tmp = dir.join(format!(
                ".hrw-{}-{}-{:016x}.tmp",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed),
                rand::random::<u64>()
            ));
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    return Ok(PendingFile {
                        target: target.to_path_buf(),
                        tmp,
                        file,
                        committed: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(io(e)),
            }
        }
        Err(io(last.expect("at least one attempt")))
    }

    /// Appends `bytes` to the temporary file. Errors: [`Error::Io`] naming the target.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).map_err(|e| self.io(e))
    }

    /// Flushes the file to disk, renames it over the target (keeping an existing target's
    /// permissions) and syncs the folder. On error the temporary file is removed and the
    /// target is left as it was.
    ///
    /// Errors: [`Error::Io`] naming the target.
    pub fn commit(mut self) -> Result<()> {
        let publish = |p: &PendingFile| -> std::io::Result<()> {
            if let Ok(meta) = std::fs::metadata(&p.target) {
                if meta.is_file() {
                    p.file.set_permissions(meta.permissions())?;
                }
            }
            p.file.sync_all()?;
            std::fs::rename(&p.tmp, &p.target)?;
            Ok(())
        };
        publish(&self).map_err(|e| self.io(e))?;
        self.committed = true;
        #[cfg(unix)]
        {
            let (dir, _) = split(&self.target)?;
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::io(self.target.display().to_string(), &e)
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// What an existing target must be for a rename to replace it without losing anything: a
/// regular file that is not read-only. A symbolic link would be replaced rather than written
/// through (`/dev/stdout` is one: as root, the rename would replace the system's link), a
/// folder, a device such as `/dev/null`, a FIFO or a socket by a plain file, and a read-only
/// file is one its owner protected.
///
/// Errors: [`Error::InvalidArgument`] naming `path` for a symbolic link, a folder or another
/// non-regular file; [`Error::Io`] (permission denied) for a read-only file.
fn check_replaceable(target: &Path) -> Result<()> {
    let shown = target.display();
    let meta = match std::fs::symlink_metadata(target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()), // the rename creates it
        // A folder on the way that is a file (ENOTDIR), a loop of links, no permission: the
        // rename would fail the same way after the work.
        Err(e) => return Err(Error::io(shown.to_string(), &e)),
    };
    if let Some(reason) = not_replaceable(&meta) {
        return Err(Error::invalid("path", format!("`{shown}` {reason}")));
    }
    if meta.permissions().readonly() {
        return Err(Error::io(
            shown.to_string(),
            &std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the file is read-only; make it writable to replace it",
            ),
        ));
    }
    Ok(())
}

/// Why an existing directory entry (its `symlink_metadata`) cannot be replaced by an output
/// file, or `None` for a regular file.
pub fn not_replaceable(meta: &std::fs::Metadata) -> Option<String> {
    let t = meta.file_type();
    let reason = if t.is_symlink() {
        "is a symbolic link: an output replaces the link itself rather than writing through it; \
         give the path of the file it points to"
            .to_string()
    } else if t.is_dir() {
        "is a folder; give a file name".to_string()
    } else {
        format!(
            "is {}, not a regular file: outputs are written to a temporary file and renamed \
             over the target, which would replace it",
            super::input_file::special_kind(meta)?
        )
    };
    Some(reason)
}

/// Writes `bytes` to `target` atomically (module docs).
///
/// Errors: [`Error::Io`] naming `target`; [`Error::InvalidArgument`] when it names no file.
pub(crate) fn write(target: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = PendingFile::create(target)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Checks that `target` could be written now — its folder exists and accepts a new file, and
/// an existing `target` is a writable regular file — by creating and removing a temporary file
/// beside it. Nothing is left behind and an existing target is not touched.
///
/// Errors: [`Error::Io`] naming `target` (including a read-only target);
/// [`Error::InvalidArgument`] when it names no file, a symbolic link, a folder, a device, pipe
/// or socket.
pub fn check_writable(target: &Path) -> Result<()> {
    PendingFile::create(target).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_publishes_and_drop_discards() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"old").unwrap();
        let mut f = PendingFile::create(&target).unwrap();
        f.write_all(b"new content").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        drop(f);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["out.bin"]);
        write(&target, b"new content").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new content");
        assert_eq!(entries(dir.path()), ["out.bin"]);
    }

    #[test]
    fn a_long_legal_name_saves() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("m".repeat(255));
        write(&target, b"x").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"x");
        assert_eq!(entries(dir.path()).len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn permissions_of_an_existing_target_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("private.bin");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        write(&target, b"new").unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn paths_without_a_file_name_and_folders_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        for p in [Path::new(""), Path::new("/"), &dir.path().join("..")] {
            assert!(
                matches!(write(p, b"x"), Err(Error::InvalidArgument { .. })),
                "{p:?}"
            );
        }
        assert!(matches!(
            check_writable(dir.path()),
            Err(Error::InvalidArgument { .. })
        ));
        let readonly = dir.path().join("ro.bin");
        std::fs::write(&readonly, b"keep").unwrap();
        let mut perms = std::fs::metadata(&readonly).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&readonly, perms).unwrap();
        assert!(matches!(write(&readonly, b"x"), Err(Error::Io { .. })));
        assert_eq!(std::fs::read(&readonly).unwrap(), b"keep");
        std::fs::remove_file(&readonly).unwrap();
        #[cfg(unix)]
        {
            for special in ["/dev/null", "/dev/stdout"] {
                assert!(matches!(
                    check_writable(Path::new(special)),
                    Err(Error::InvalidArgument { .. })
                ));
            }
            let target = dir.path().join("target.bin");
            std::fs::write(&target, b"kept").unwrap();
            let link = dir.path().join("link.bin");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(matches!(
                write(&link, b"x"),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read(&target).unwrap(), b"kept");
            std::fs::remove_file(&link).unwrap();
            std::fs::remove_file(&target).unwrap();
        }
        // A path that names a folder by its spelling, or lies under a file.
        let file = dir.path().join("plain.bin");
        std::fs::write(&file, b"kept").unwrap();
        for p in [
            dir.path().join("new.bin/"),
            dir.path().join("plain.bin/"),
            dir.path().join("plain.bin/."),
            dir.path().join("new.bin//"),
        ] {
            let e = check_writable(&p).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("separator"),
                "{p:?}: {e}"
            );
            assert!(write(&p, b"x").is_err());
        }
        let under = file.join("f.bin");
        assert!(matches!(check_writable(&under), Err(Error::Io { .. })));
        assert_eq!(std::fs::read(&file).unwrap(), b"kept");
        std::fs::remove_file(&file).unwrap();
        let missing = dir.path().join("no/such/dir/f.bin");
        assert!(matches!(check_writable(&missing), Err(Error::Io { .. })));
        check_writable(&dir.path().join("f.bin")).unwrap();
        assert!(entries(dir.path()).is_empty());
    }
}
