//! A scratch directory per test, removed when the test ends (passed or
//! failed).
//!
//! # Examples
//! ```
//! use cep_testkit::Scratch;
//! let dir = Scratch::new("testkit", "doc");
//! let path = dir.write("q.cep", "PATTERN A a");
//! assert_eq!(std::fs::read_to_string(&path).unwrap(), "PATTERN A a");
//! let kept = dir.to_path_buf();
//! drop(dir);
//! assert!(!kept.exists());
//! ```

use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory, removed with
/// everything in it on drop. Dereferences to its [`Path`].
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh, empty directory for test `test` of suite `suite` (named
    /// after both and the process, so that suites and runs running at the
    /// same time do not meet). A leftover of the same name is removed.
    ///
    /// # Panics
    /// If the directory cannot be created.
    pub fn new(suite: &str, test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cep-{suite}-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `file` in the directory and returns its path as a string (as
    /// passed to `cep` on a command line).
    ///
    /// # Panics
    /// If the file cannot be written, or the path is not UTF-8.
    pub fn write(&self, file: &str, text: impl AsRef<[u8]>) -> String {
        let p = self.0.join(file);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        p.to_str().expect("a UTF-8 temp path").to_owned()
    }
}

/// The directory's path, so that `dir.join(file)` and `&dir` (a `&Path`)
/// read as for a `PathBuf`.
impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_is_cleared_and_the_directory_removed() {
        let first = Scratch::new("testkit", "leftover");
        first.write("old.txt", "x");
        let path = first.to_path_buf();
        std::mem::forget(first); // as a crashed run leaves it
        let again = Scratch::new("testkit", "leftover");
        assert_eq!(again.path(), path);
        assert!(!again.join("old.txt").exists());
        drop(again);
        assert!(!path.exists());
    }
}
