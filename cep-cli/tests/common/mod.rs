//! What the `cep` binary's test suites share: a scratch directory per test
//! (removed when the test ends, passed or failed), and a finished run's
//! output, checked for panics.

// Each suite is its own crate and uses only some of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The binary under test.
pub const CEP: &str = env!("CARGO_BIN_EXE_cep");

/// A scratch directory for one test, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory for test `test` of suite `suite`.
    pub fn new(suite: &str, test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cep-cli-{suite}-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }

    /// Writes `file` and returns its path as a string (as passed to `cep`).
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

/// A finished run: its exit code and its output as text.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The output of a finished process, which must not have panicked
    /// (`what` says which run, in the message).
    pub fn of(out: std::process::Output, what: impl std::fmt::Debug) -> Output {
        let o = Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(!o.stderr.contains("panicked"), "cep panicked ({what:?}): {o:#?}");
        o
    }
}

/// Runs `cmd` with `input` on its stdin (closed after it, or when `cmd`
/// stops reading) and returns its output (see [`Output::of`]). The input is
/// written on a thread of its own: a run that writes much output while it
/// reads would otherwise fill its stdout pipe while this waits to write.
pub fn with_stdin(cmd: &mut std::process::Command, input: &[u8], what: impl std::fmt::Debug) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("cannot start cep");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        // A run that stops at a bad row stops reading: the rest is not needed.
        if let Err(e) = stdin.write_all(&input) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write to cep's stdin: {e}");
        }
    });
    let out = child.wait_with_output().expect("cep's output");
    writer.join().expect("the stdin writer");
    Output::of(out, what)
}
