//! Building a job's parts from its spec: the queries compiled into a
//! runner, the level alerts each shard watches, and the [`Driver`] — one
//! runner, or a front and its shards — restored from a checkpoint's state
//! when the job resumes. The only place a pipeline is put together.

use std::sync::Arc;

use cep_core::budget::{OnLimit, StateBudget};
use cep_core::{Event, FieldId, Schema};
use cep_index::{Alert, LevelIndex};
use cep_nfa::compile::{Options, compile};
use cep_nfa::program::Program;
use cep_time::LatePolicy;

use super::driver::Driver;
use super::error::{JobError, JobErrorKind};
use super::spec::JobSpec;
use crate::checkpoint::PipelineSnapshot;
use crate::shard::{ShardedRunner, shard_of};
use crate::{LEVEL_KEY_FIELD, Runner};

/// The spec's queries compiled against `schema` (which registers the
/// fields they name): their programs, and the fields they read. Warnings
/// go to `report` when it is given (once per job, not per shard).
pub(crate) fn programs(
    spec: &JobSpec,
    schema: &mut Schema,
    report: Option<&mut dyn FnMut(&str)>,
) -> Result<(Vec<Program<Event>>, Vec<FieldId>), JobError> {
    let opts = Options { time_unit: spec.time_unit };
    let (mut programs, mut fields, mut declared) = (Vec::new(), Vec::new(), Vec::new());
    let mut report = report;
    for q in &spec.queries {
        match compile(&q.text, schema, &opts) {
            Ok(c) => {
                if let Some(report) = report.as_deref_mut() {
                    for w in &c.warnings {
                        report(&w.render(&q.text, &q.name));
                    }
                }
                if c.programs.iter().any(|p| p.object.is_some()) {
                    // An `EMIT x.*` item shows every field of the event:
                    // the reader keeps all the fields known now (the ones
                    // the item's objects can name).
                    fields.extend(0..schema.field_count() as FieldId);
                }
                programs.extend(c.programs);
                fields.extend(c.fields);
                declared.extend(c.remotes);
            }
            Err(diagnostics) => {
                return Err(JobErrorKind::Compile { name: q.name.clone(), text: q.text.clone(), diagnostics }.into());
            }
        }
    }
    fields.sort_unstable();
    fields.dedup();
    super::remote::resolve(spec.remote.as_ref(), &mut programs, &declared)?;
    Ok((programs, fields))
}

/// A runner of `programs` with the spec's engines and state bounds (the
/// job's shared `budget` of bytes, if any).
pub(crate) fn runner(
    spec: &JobSpec,
    programs: Vec<Program<Event>>,
    budget: Option<&Arc<StateBudget>>,
) -> Result<Runner, JobError> {
    let calls = programs.iter().any(|p| p.elements.iter().any(|e| !e.remote.is_empty()));
    // Queries that differ only in one-variable conditions share an engine
    // (`cep_nfa::share`), unless a bound on state drops partial matches:
    // a shared engine would drop other runs than the queries' own engines
    // would. (A bound that fails the run stops it, with the output exact
    // up to there; the shared engine holds less than its members would.)
    let drops = spec.max_partials_per_key.is_some() || (budget.is_some() && spec.on_state_limit == OnLimit::DropOldest);
    let runner = match drops {
        true => Runner::with_engines(programs, spec.engine, spec.construction),
        false => Runner::with_shared_engines(programs, spec.engine, spec.construction),
    };
    let mut runner = runner.map_err(|e| JobError::new(JobErrorKind::Engine(format!("error: {e}"))))?;
    if let Some(cap) = spec.max_partials_per_key {
        runner.set_max_partials_per_key(cap);
    }
    if let Some(budget) = budget {
        runner.set_state_budget(budget.clone());
    }
    if let Some(remote) = &spec.remote
        && calls
    {
        runner.set_remote(remote.link()?, remote.mode());
    }
    Ok(runner)
}

/// An index of `alerts`, watching every field any of the spec's alerts
/// watches (so that all shards feed the same fields).
pub(crate) fn level_index(spec: &JobSpec, alerts: impl IntoIterator<Item = Alert>) -> Result<LevelIndex, JobError> {
    let mut index = LevelIndex::new();
    for a in &spec.alerts {
        index.watch(&a.field);
    }
    index
        .add_all(alerts)
        .map_err(|e| JobError::new(JobErrorKind::Alerts { name: spec.alerts_name.clone(), message: e.to_string() }))?;
    Ok(index)
}

/// Registers the fields level alerts read (the key field and every
/// watched field) in `schema`, and returns them.
pub(crate) fn alert_fields(spec: &JobSpec, schema: &mut Schema) -> Vec<FieldId> {
    if spec.alerts.is_empty() {
        return Vec::new();
    }
    let mut fields = vec![schema.field(LEVEL_KEY_FIELD)];
    fields.extend(spec.alerts.iter().map(|a| schema.field(&a.field)));
    fields
}

/// How the shards of a driver share the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// One runner on the calling thread.
    One,
    /// `n` shard threads, the calling thread ordering, routing and merging
    /// their lines in one thread's order.
    Ordered(usize),
    /// `n` threads in all, the calling thread among them running a share of
    /// the keys that follows the load; lines as they come.
    Balanced(usize),
}

/// What restoring a driver needs besides the spec.
pub(crate) struct Restore<'a> {
    /// The checkpoint's state.
    pub state: PipelineSnapshot,
    /// Where it came from, for messages.
    pub dir: &'a std::path::Path,
}

/// The driver of a job: `first` (the runner already compiled, which runs
/// the queries on one thread or becomes the first shard), with the spec's
/// level alerts, delay and late policy, restored from `restore`.
pub(crate) fn driver(
    spec: &JobSpec,
    schema: &mut Schema,
    mut first: Runner,
    sharing: Sharing,
    field_names: Vec<String>,
    restore: Option<Restore<'_>>,
    budget: Option<&Arc<StateBudget>>,
) -> Result<Driver, JobError> {
    let late_file = |e: std::io::Error| JobError::new(JobErrorKind::LateFile(e));
    let (state, dir) = match restore {
        Some(r) => (Some(r.state), Some(r.dir)),
        None => (None, None),
    };
    let restore_failed = |message: String| {
        JobError::new(JobErrorKind::Restore {
            dir: dir.map_or_else(Default::default, std::path::Path::to_owned),
            message,
        })
    };
    let (shards, workers) = match sharing {
        Sharing::One => {
            if !spec.alerts.is_empty() {
                first.set_levels(level_index(spec, spec.alerts.iter().cloned())?, schema);
            }
            first.set_max_delay(spec.max_delay);
            first.set_field_names(field_names);
            let late = spec.late.clone();
            match state {
                Some(PipelineSnapshot::One(snap)) => {
                    first.set_late_policy_at(late, snap.late_bytes()).map_err(late_file)?;
                    first.restore(snap).map_err(|e| restore_failed(e.to_string()))?;
                }
                Some(PipelineSnapshot::Sharded(_)) => {
                    return Err(restore_failed("it was taken with more threads".into()));
                }
                None => first.set_late_policy(late).map_err(late_file)?,
            }
            return Ok(Driver::One(Box::new(first)));
        }
        Sharing::Ordered(n) => (n, None),
        Sharing::Balanced(threads) => (ShardedRunner::slices_for(threads), Some(threads - 1)),
    };
    let mut runners = vec![first];
    for _ in 1..shards {
        runners.push(runner(spec, programs(spec, &mut schema.clone(), None)?.0, budget)?);
    }
    if !spec.alerts.is_empty() {
        for (i, shard) in runners.iter_mut().enumerate() {
            let mine = spec.alerts.iter().filter(|a| shard_of(&a.key, shards) == i).cloned();
            shard.set_levels(level_index(spec, mine)?, &mut schema.clone());
        }
    }
    let mut front = Runner::new(Vec::new());
    front.set_max_delay(spec.max_delay);
    if let Some(budget) = budget {
        front.set_state_budget(budget.clone());
    }
    front.set_field_names(field_names);
    let late: LatePolicy = spec.late.clone();
    let mut released = None;
    match state {
        Some(PipelineSnapshot::Sharded(snap)) => {
            if snap.shards.len() != runners.len() {
                return Err(restore_failed(format!("it was taken with {} threads", snap.shards.len())));
            }
            front.set_late_policy_at(late, snap.front.late_bytes()).map_err(late_file)?;
            front.restore(snap.front).map_err(|e| restore_failed(e.to_string()))?;
            for (shard, s) in runners.iter_mut().zip(snap.shards) {
                shard.restore(s).map_err(|e| restore_failed(e.to_string()))?;
            }
            released = Some(snap.released);
        }
        Some(PipelineSnapshot::One(_)) => return Err(restore_failed("it was taken with one thread".into())),
        None => front.set_late_policy(late).map_err(late_file)?,
    }
    let mut sharded = match workers {
        // The calling thread reads, orders and routes; it does not run
        // keys of its own (`ShardedRunner::balanced` does, which pays when
        // the caller's own work is light, but a job's reader already keeps
        // it busy).
        None => ShardedRunner::try_new(front, runners)
            .and_then(|mut r| r.set_ordered_output().map(|()| r))
            .map_err(|error| JobError::new(JobErrorKind::Threads { count: shards, error }))?,
        Some(workers) => ShardedRunner::balanced(front, runners, workers),
    };
    if let Some(ts) = released {
        sharded.resume_released(ts);
    }
    Ok(Driver::Sharded(Box::new(sharded)))
}
