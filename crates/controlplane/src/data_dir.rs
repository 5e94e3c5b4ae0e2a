//! The data directory is one server's: a kapi takes its lock before it reads or writes
//! anything there (PKI, admin kubeconfig, store), and holds it for as long as it serves, so
//! a second kapi started on a directory in use fails at once and changes nothing.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The lock file's name in the data directory.
const LOCK_FILE: &str = "kapi.lock";

/// The exclusive lock on a data directory; released when dropped (or when the process
/// dies: the kernel drops `flock` locks with their last descriptor).
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// Creates `dir` if needed and takes its lock, recording this process's id in the lock
/// file; fails, naming the holder, when another process holds it.
pub fn lock(dir: &Path) -> Result<DataDirLock> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => String::new(),
                pid => format!(" (pid {pid})"),
            };
            bail!(
                "the data directory {} is in use by another kapi{holder}",
                dir.display()
            );
        }
        Err(TryLockError::Error(err)) => {
            return Err(err).with_context(|| format!("locking {}", path.display()));
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(DataDirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_held_directory_fails_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path()).unwrap();
        let err = lock(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is in use by another kapi"), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(held);
        lock(dir.path()).expect("free again once released");
    }
}
