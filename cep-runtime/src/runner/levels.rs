//! Level alerts in a runner, and the masks that say which queries and
//! whether the alerts run an event: [`LEVELS_BIT`], [`MASK_QUERIES`], and
//! the key field [`LEVEL_KEY_FIELD`]. The masks live here because the alerts
//! are the one mask bit that is not a query.

use std::io;

use cep_core::{Event, FieldId, Schema, Value};
use cep_index::{FieldRef, LevelIndex};

use super::Runner;
use crate::{PushError, Sink};

/// The bit of a [`Runner::push_for`] mask that stands for the level alerts.
pub const LEVELS_BIT: u64 = 1 << 63;

/// The most queries a mask names (bits below [`LEVELS_BIT`]): the limit of
/// a runtime on several threads, which routes each event with a mask.
pub const MASK_QUERIES: usize = 63;

/// The event field whose value is a level alert's key (LANGUAGE.md §4).
pub const LEVEL_KEY_FIELD: &str = "key";

/// Level alerts and where their key and fields are in an event.
#[derive(Debug)]
pub(super) struct Levels {
    pub(super) index: LevelIndex,
    pub(super) key: Option<FieldId>,
    /// The watched fields: where each is in an event, and its handle.
    pub(super) fields: Vec<(FieldId, FieldRef)>,
    pub(super) error: Option<io::Error>,
}

/// Whether query `i` runs the events of `mask` (bit `i`; queries from
/// [`MASK_QUERIES`] on run every event).
#[inline(always)]
pub(super) fn in_mask(i: usize, mask: u64) -> bool {
    i >= MASK_QUERIES || mask >> i & 1 == 1
}

impl Runner {
    /// Adds standing level alerts (LANGUAGE.md §4): every event, in event
    /// time order, feeds each watched field of the index with the event's
    /// `key` field as the key; fires go to [`Sink::on_fire`] after the
    /// event's matches. Fields are found by name in `schema`; the `key`
    /// field and every watched field are added to it if missing (the
    /// schema must be the one the events are read with).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Schema, Sym, Value};
    /// use cep_index::{Alert, LevelIndex};
    /// use cep_runtime::{JsonLines, Runner};
    ///
    /// let mut schema = Schema::new();
    /// let (key, price) = (schema.field("key"), schema.field("price"));
    /// let mut index = LevelIndex::new();
    /// index.add(Alert::above("a17", Value::Int(7), "price", 10100.0, 5.0)).unwrap();
    /// let mut runner = Runner::new(Vec::new());
    /// runner.set_levels(index, &mut schema);
    /// let mut sink = JsonLines::new(Vec::new());
    /// for (row, p) in [10000, 10120].into_iter().enumerate() {
    ///     let mut fields = vec![Value::Null; 2];
    ///     fields[key as usize] = Value::Int(7);
    ///     fields[price as usize] = Value::Int(p);
    ///     runner.push(&Event::new(Sym::new("Tick"), row as i64 * 1000, row as u64, fields), &mut sink).unwrap();
    /// }
    /// runner.finish(&mut sink).unwrap();
    /// let out = String::from_utf8(sink.into_inner().unwrap()).unwrap();
    /// assert_eq!(out, "{\"level\":\"a17\",\"key\":7,\"ts\":1000,\"row\":1,\"value\":10120,\"direction\":\"above\"}\n");
    /// ```
    pub fn set_levels(&mut self, index: LevelIndex, schema: &mut Schema) {
        let key = Some(schema.field(LEVEL_KEY_FIELD));
        let fields = index.fields().map(|(r, name)| (schema.field(name), r)).collect();
        self.levels = Some(Levels { index, key, fields, error: None });
    }

    /// The level index, to add or remove alerts while events flow (see
    /// [`LevelIndex::add`] and [`LevelIndex::remove`]); `None` without
    /// [`set_levels`](Self::set_levels). A field no alert watched when
    /// `set_levels` ran is not fed.
    pub fn levels_mut(&mut self) -> Option<&mut LevelIndex> {
        self.levels.as_mut().map(|l| &mut l.index)
    }

    /// The field level alerts are keyed by, when the runner has alerts.
    pub fn levels_key_field(&self) -> Option<FieldId> {
        self.levels.as_ref().and_then(|l| l.key)
    }

    /// The level alerts' part of [`feed`](Self::feed) (out of line, so that
    /// `feed` stays small enough to inline into `push`).
    #[inline(never)]
    pub(super) fn feed_levels(&mut self, e: &Event, sink: &mut impl Sink) -> Result<(), PushError> {
        let Some(lv) = &mut self.levels else { return Ok(()) };
        let at = |f: FieldId| e.get(f);
        let key = lv.key.map_or(Value::Null, at);
        for &(fid, fref) in &lv.fields {
            let (fires, error) = (&mut self.summary.fires, &mut lv.error);
            lv.index.update(fref, key, at(fid), e.ts, e.row, |f| {
                *fires += 1;
                if error.is_none()
                    && let Err(err) = sink.on_fire(f)
                {
                    *error = Some(err);
                }
            });
            if let Some(err) = lv.error.take() {
                return Err(PushError::Io(err));
            }
        }
        Ok(())
    }
}
