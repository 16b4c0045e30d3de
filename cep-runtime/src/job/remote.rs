//! Remote predicates in a job (LANGUAGE.md §8): which functions the job
//! may call and where, how each shard gets its own resolver, and what the
//! job reads back from them (a failure that stops it, the counts of the
//! summary).
//!
//! The job knows resolvers only through `cep_core::remote::Resolver`: the
//! binary makes HTTP ones (`cep-remote`), a library user may make
//! in-process ones. Each shard gets a resolver of its own (made by
//! [`RemoteSpec`]'s factory), so that no lock or queue is shared between
//! shards, and its bound on calls in flight holds back that shard only.

use std::sync::Arc;

use cep_core::remote::{LinkStats, OnFailure, RemoteLink, RemoteMode, Resolver};
use cep_nfa::program::{Program, RemoteFn};
use std::sync::Mutex;

use super::error::{JobError, JobErrorKind};

/// Makes one shard's resolver.
pub type MakeResolver = Arc<dyn Fn() -> Result<Box<dyn Resolver>, String> + Send + Sync>;

/// The remote functions of a job and how they are answered.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use cep_core::remote::{FnResolver, OnFailure, Resolver};
/// use cep_core::Value;
/// use cep_runtime::job::RemoteSpec;
///
/// // `near` answered in-process: true when the first argument is even.
/// let make = Arc::new(|| {
///     let f = FnResolver::new(|_func: u16, args: &[Value]| matches!(args[0], Value::Int(i) if i % 2 == 0));
///     Ok(Box::new(f) as Box<dyn Resolver>)
/// });
/// let spec = RemoteSpec::new(vec![("near".into(), "in-process".into())], make, OnFailure::Fail);
/// assert_eq!(spec.functions()[0].0, "near");
/// assert!(spec.failure().is_none());
/// ```
#[derive(Clone)]
pub struct RemoteSpec {
    /// Per function, in the resolvers' order: its name and where it is
    /// answered (for messages).
    functions: Vec<(String, String)>,
    make: MakeResolver,
    on_failure: OnFailure,
    mode: RemoteMode,
    /// Every link made, one per shard: the job reads a failure and the
    /// counts from them.
    links: Arc<Mutex<Vec<Arc<RemoteLink>>>>,
    /// Raised by a link whose call failed under `fail`: what the job looks
    /// at between events.
    failed: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for RemoteSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSpec").field("functions", &self.functions).field("on_failure", &self.on_failure).finish()
    }
}

impl RemoteSpec {
    /// Functions `functions` (names and where each is answered; a query's
    /// call of function `name` goes to the resolver's function of that
    /// index, names compared without case), resolvers made by `make`, one
    /// per shard, failures handled by `on_failure`.
    pub fn new(functions: Vec<(String, String)>, make: MakeResolver, on_failure: OnFailure) -> RemoteSpec {
        RemoteSpec {
            functions,
            make,
            on_failure,
            mode: RemoteMode::Auto,
            links: Arc::default(),
            failed: Arc::default(),
        }
    }

    /// With runs waiting for answers as `mode` says (default
    /// [`RemoteMode::Auto`]).
    pub fn with_mode(mut self, mode: RemoteMode) -> RemoteSpec {
        self.mode = mode;
        self
    }

    /// How runs wait for answers.
    pub fn mode(&self) -> RemoteMode {
        self.mode
    }

    /// The functions: names and where each is answered.
    pub fn functions(&self) -> &[(String, String)] {
        &self.functions
    }

    /// A new shard's link: its own resolver.
    pub(crate) fn link(&self) -> Result<Arc<RemoteLink>, JobError> {
        let resolver = (self.make)().map_err(|why| JobError::new(JobErrorKind::Remote(why)))?;
        let link = Arc::new(
            RemoteLink::new(resolver, self.functions.clone(), self.on_failure).with_failure_flag(self.failed.clone()),
        );
        self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(link.clone());
        Ok(link)
    }

    /// Why the job must stop: a call failed under `--remote-failure fail`.
    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().find_map(|l| l.failure())
    }

    /// The counts of all shards' links, summed.
    pub fn stats(&self) -> LinkStats {
        let mut all = LinkStats::default();
        for l in self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter() {
            all.add(&l.stats());
        }
        all
    }
}

/// Checks the job's remote functions against the queries: every call has
/// a function to go to (its index set), and every function is declared by
/// some query file (`declared`). Queries with calls and no remote spec
/// are refused.
pub(crate) fn resolve<E>(
    spec: Option<&RemoteSpec>,
    programs: &mut [Program<E>],
    declared: &[RemoteFn],
) -> Result<(), JobError> {
    let functions = spec.map_or(&[][..], |s| &s.functions[..]);
    if let Some((name, _)) =
        functions.iter().find(|(name, _)| !declared.iter().any(|d| d.name.eq_ignore_ascii_case(name)))
    {
        return Err(JobError::new(JobErrorKind::Remote(format!(
            "--remote {name}: no query declares `REMOTE {name}(…)`"
        ))));
    }
    for p in programs {
        for c in p.elements.iter_mut().flat_map(|e| e.remote.iter_mut()) {
            let Some(i) = functions.iter().position(|(name, _)| name.eq_ignore_ascii_case(&c.name)) else {
                return Err(JobError::new(JobErrorKind::Remote(format!(
                    "query {} calls remote function `{}`, which no --remote says where to ask (give --remote {}=URL)",
                    p.name, c.name, c.name
                ))));
            };
            c.func = i as u16;
        }
    }
    Ok(())
}
