//! A progress line on stderr while `cep run` reads a file: how far into
//! the file, rows and rows per second. Shown only when stderr is a terminal
//! (never in pipes, logs or tests), redrawn at most five times a second,
//! and erased at the end so the summary stands alone.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cep_io::input::BytesRead;

/// The progress of reading one input file.
#[derive(Debug)]
pub struct Progress {
    /// Bytes read so far (the reader counts them).
    pub read: BytesRead,
    size: u64,
    name: String,
    started: Instant,
    shown: Instant,
    drawn: bool,
}

impl Progress {
    /// A progress line for `--events path`, or `None` for a stream, an
    /// unreadable file, or stderr not on a terminal.
    pub fn for_input(path: &str) -> Option<Progress> {
        if cep_io::input::is_stream(path) || !std::io::stderr().is_terminal() {
            return None;
        }
        let size = std::fs::metadata(path).ok()?.len();
        let now = Instant::now();
        Some(Progress {
            read: Arc::new(AtomicU64::new(0)),
            size,
            name: path.to_owned(),
            started: now,
            shown: now,
            drawn: false,
        })
    }

    /// Rows `from..to` were read: redraws the line when they cross a
    /// multiple of 65,536 rows (looking at the clock every row would cost
    /// more than the row) and a fifth of a second has passed.
    pub fn rows_read(&mut self, from: u64, to: u64) {
        if from / 65_536 != to / 65_536 {
            self.tick(to);
        }
    }

    /// Redraws the line if a fifth of a second has passed.
    pub fn tick(&mut self, rows: u64) {
        if self.shown.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.shown = Instant::now();
        let read = self.read.load(Ordering::Relaxed);
        let pct = if self.size == 0 { 100.0 } else { read as f64 * 100.0 / self.size as f64 };
        let rate = rows as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        eprint!("\r\x1b[Kreading {}: {pct:.0} %, {rows} rows, {:.2} M rows/s", self.name, rate / 1e6);
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }

    /// Erases the line.
    pub fn done(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[K");
            self.drawn = false;
        }
    }
}

impl cep_runtime::job::Progress for Progress {
    fn rows_read(&mut self, from: u64, to: u64) {
        Progress::rows_read(self, from, to);
    }

    fn done(&mut self) {
        Progress::done(self);
    }
}
