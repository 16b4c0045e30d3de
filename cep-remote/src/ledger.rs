//! The shard side's bookkeeping, shared by both resolvers: which engine
//! calls wait on which service call, the cache, the answers ready to hand
//! back, and the counts.
//!
//! Cache hits and coalescing are decided here, on the shard's thread, so
//! that they cost no message to the client and do not count against the
//! bound on calls in flight (they add no load to the service).

use std::collections::HashMap;

use cep_core::Value;
use cep_core::remote::{Answer, Call, CallError, CallErrorKind, CallId, RemoteStats};

use crate::cache::{Cache, Key};

/// A call for the service: the ledger's token for it (unique for the
/// ledger's life), its function and arguments.
#[derive(Debug)]
pub(crate) struct Job {
    pub token: u64,
    pub func: u16,
    pub args: Vec<Value>,
}

/// What the shard sends the client thread.
#[derive(Debug)]
pub(crate) enum ToClient {
    /// A call to make.
    Call(Job),
    /// The shard waits for answers: no call will come to fill a batch, so
    /// what is queued leaves now instead of after the linger.
    Flush,
}

#[derive(Debug)]
struct Waiting {
    key: Key,
    ids: Vec<CallId>,
}

/// See the module doc.
pub(crate) struct Ledger {
    cache: Cache,
    /// Service calls in flight by token.
    waiting: HashMap<u64, Waiting>,
    /// The token of the service call in flight for a key.
    by_key: HashMap<Key, u64>,
    next_token: u64,
    ready: Vec<(CallId, Answer)>,
    /// Engine calls submitted and not handed back.
    unanswered: usize,
    /// Functions this ledger has endpoints for.
    functions: usize,
    stats: RemoteStats,
}

impl std::fmt::Debug for Ledger {
    /// Counts only: the cache may hold many thousand answers.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("outstanding", &self.waiting.len())
            .field("ready", &self.ready.len())
            .field("unanswered", &self.unanswered)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Ledger {
    /// A ledger for `functions` functions with a cache of `cache_entries`.
    pub(crate) fn new(functions: usize, cache_entries: usize) -> Ledger {
        Ledger {
            cache: Cache::new(cache_entries),
            waiting: HashMap::new(),
            by_key: HashMap::new(),
            next_token: 0,
            ready: Vec::new(),
            unanswered: 0,
            functions,
            stats: RemoteStats::default(),
        }
    }

    /// Takes `call`: answers it from the cache, joins it to an identical
    /// call in flight, or returns the job to send to the service.
    pub(crate) fn admit(&mut self, call: Call) -> Option<Job> {
        self.stats.calls += 1;
        self.unanswered += 1;
        if usize::from(call.func) >= self.functions {
            let detail = format!("no remote function with index {} ({} declared)", call.func, self.functions);
            self.stats.failures += 1;
            let error = CallError { kind: CallErrorKind::Protocol, attempts: 0, detail };
            self.ready.push((call.id, Answer::Failed(error)));
            return None;
        }
        let key = Key::new(call.func, &call.args);
        if let Some(value) = self.cache.get(&key) {
            self.stats.cache_hits += 1;
            self.ready.push((call.id, Answer::Value(value)));
            return None;
        }
        if let Some(token) = self.by_key.get(&key) {
            if let Some(w) = self.waiting.get_mut(token) {
                self.stats.coalesced += 1;
                w.ids.push(call.id);
                return None;
            }
        }
        let token = self.next_token;
        self.next_token += 1;
        self.by_key.insert(key.clone(), token);
        self.waiting.insert(token, Waiting { key, ids: vec![call.id] });
        Some(Job { token, func: call.func, args: call.args })
    }

    /// Records the service's answer for `token` (ignored if unknown: the
    /// client answers each token once, so that cannot happen).
    pub(crate) fn settle(&mut self, token: u64, answer: Answer) {
        let Some(w) = self.waiting.remove(&token) else { return };
        self.by_key.remove(&w.key);
        match answer {
            Answer::Value(v) => self.cache.insert(w.key, v),
            Answer::Failed(_) => self.stats.failures += w.ids.len() as u64,
        }
        for id in w.ids {
            self.ready.push((id, answer.clone()));
        }
    }

    /// Fails every service call in flight (the client is gone).
    pub(crate) fn fail_all(&mut self, detail: &str) {
        let tokens: Vec<u64> = self.waiting.keys().copied().collect();
        for token in tokens {
            let error = CallError { kind: CallErrorKind::Connect, attempts: 0, detail: detail.to_string() };
            self.settle(token, Answer::Failed(error));
        }
    }

    /// Hands back the ready answers.
    pub(crate) fn drain(&mut self, answers: &mut Vec<(CallId, Answer)>) {
        self.unanswered = self.unanswered.saturating_sub(self.ready.len());
        answers.append(&mut self.ready);
    }

    /// Whether answers are ready.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Service calls in flight (the bounded quantity).
    pub(crate) fn outstanding(&self) -> usize {
        self.waiting.len()
    }

    /// Engine calls submitted and not handed back.
    pub(crate) fn unanswered(&self) -> usize {
        self.unanswered
    }

    /// The shard-side counts (calls, cache hits, coalesced, failures).
    pub(crate) fn stats(&self) -> RemoteStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: u64, x: i64) -> Call {
        Call { id: CallId(id), func: 0, args: vec![Value::Int(x)] }
    }

    #[test]
    fn coalesces_caches_and_answers_every_id() {
        let mut l = Ledger::new(1, 10);
        let job = l.admit(call(1, 5)).unwrap();
        assert!(l.admit(call(2, 5)).is_none());
        assert!(l.admit(call(3, 6)).is_some());
        assert_eq!((l.outstanding(), l.unanswered()), (2, 3));
        l.settle(job.token, Answer::Value(true));
        assert!(l.admit(call(4, 5)).is_none());
        let mut out = Vec::new();
        l.drain(&mut out);
        let ids: Vec<u64> = out.iter().map(|(id, _)| id.0).collect();
        assert_eq!(ids, [1, 2, 4]);
        assert_eq!((l.stats().coalesced, l.stats().cache_hits, l.unanswered()), (1, 1, 1));
        l.fail_all("gone");
        l.drain(&mut out);
        assert!(matches!(out[3], (CallId(3), Answer::Failed(_))));
        assert_eq!((l.stats().failures, l.unanswered(), l.outstanding()), (1, 0, 0));
    }

    #[test]
    fn fails_unknown_functions_at_once() {
        let mut l = Ledger::new(1, 10);
        assert!(l.admit(Call { id: CallId(9), func: 3, args: vec![] }).is_none());
        let mut out = Vec::new();
        l.drain(&mut out);
        assert!(matches!(&out[..], [(CallId(9), Answer::Failed(e))] if e.kind == CallErrorKind::Protocol));
    }
}
