//! A progress bar on stderr when stderr is a terminal; plain log lines
//! otherwise (CI logs).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Counts passes.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar over `total` passes, or none when stderr is not a terminal.
    pub fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let style = ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} passes  {msg}")
                .expect("a valid template")
                .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress { bar }
    }

    /// No bar and no log lines' bar (tests).
    #[cfg(test)]
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// Shows what runs now.
    pub fn set(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_owned());
        }
    }

    /// One pass done.
    pub fn step(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// A line above the bar (or on stderr).
    pub fn log(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
