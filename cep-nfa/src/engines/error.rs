//! The engines' errors: why an engine cannot run a query
//! ([`EngineError`]) and why a saved state cannot be restored
//! ([`RestoreError`]).
//!
//! Each is a struct around a private kind, as regex-automata's
//! `BuildError` is: its `Display` is the sentence a user reads (the CLI
//! prints it as is), accessors give a program what it may branch on, and
//! the kinds can grow without breaking callers.

use std::fmt;

/// Why an engine's saved state cannot be restored: it does not fit the
/// query's program, it holds what no engine writes (made by hand, or by
/// another program), or it was saved from another engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError {
    query: String,
    kind: RestoreKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RestoreKind {
    /// Its shape (elements, registers, history) is another program's.
    Unfit,
    /// It holds what no engine writes; the text says what.
    Inconsistent(String),
    /// It was saved from another engine than the one restoring it.
    OtherEngine,
}

impl RestoreError {
    pub(crate) fn unfit(query: &str) -> RestoreError {
        RestoreError { query: query.to_owned(), kind: RestoreKind::Unfit }
    }

    pub(crate) fn inconsistent(query: &str, what: impl Into<String>) -> RestoreError {
        RestoreError { query: query.to_owned(), kind: RestoreKind::Inconsistent(what.into()) }
    }

    pub(crate) fn other_engine(query: &str) -> RestoreError {
        RestoreError { query: query.to_owned(), kind: RestoreKind::OtherEngine }
    }

    /// The name of the query whose state it is.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// What in the state no engine writes (`None` when the state is
    /// refused for another reason).
    pub fn inconsistency(&self) -> Option<&str> {
        match &self.kind {
            RestoreKind::Inconsistent(what) => Some(what),
            _ => None,
        }
    }

    /// Whether the state was saved from another engine.
    pub fn is_other_engine(&self) -> bool {
        self.kind == RestoreKind::OtherEngine
    }
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = &self.query;
        match &self.kind {
            RestoreKind::Unfit => write!(f, "the saved state of query `{q}` does not fit its program"),
            RestoreKind::Inconsistent(what) => write!(f, "the saved state of query `{q}` is inconsistent: {what}"),
            RestoreKind::OtherEngine => write!(f, "query `{q}` was saved from another engine"),
        }
    }
}

impl std::error::Error for RestoreError {}
