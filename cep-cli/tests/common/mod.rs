//! What the `cep` binary's test suites share: the binary, a scratch
//! directory per test ([`cep_testkit::Scratch`], removed when the test
//! ends, passed or failed), and a finished run's output, checked for panics.

// Each suite is its own crate and uses only some of this.
#![allow(dead_code)]

/// The binary under test.
pub const CEP: &str = env!("CARGO_BIN_EXE_cep");

pub use cep_testkit::Scratch;

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
