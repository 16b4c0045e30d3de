//! Level-alert contenders: the index against the two-B-tree baseline,
//! behind one small trait so that one pass function serves both.

use std::rc::Rc;
use std::time::Instant;

use cep_core::Value;
use cep_index::{Alert, FieldRef, Fire, LevelIndex};

use crate::baseline::levels::TwoBTreeMaps;
use crate::levels;
use crate::suite::digest::measure;
use crate::suite::streams::Stream;
use crate::suite::{Contender, Pass, Setup};
use crate::w1::Tick;

/// The level indexes' common interface.
pub(crate) trait Levels: Default {
    fn add_all(&mut self, alerts: &[Alert]);
    fn update(&mut self, t: &Tick, fire: impl FnMut(&Fire<'_>));
}

/// `cep-index` as the runtime uses it: alerts registered in bulk, the
/// watched field resolved once.
#[derive(Debug, Default)]
pub(crate) struct Indexed {
    pub(crate) idx: LevelIndex,
    pub(crate) price: Option<FieldRef>,
}

impl Levels for Indexed {
    fn add_all(&mut self, alerts: &[Alert]) {
        self.idx.add_all(alerts.iter().cloned()).expect("valid alerts");
        self.price = self.idx.field(levels::FIELD);
    }

    #[inline]
    fn update(&mut self, t: &Tick, fire: impl FnMut(&Fire<'_>)) {
        if let Some(price) = self.price {
            self.idx.update(price, Value::Int(t.key), Value::Int(t.price), t.ts, t.row, fire)
        }
    }
}

impl Levels for TwoBTreeMaps {
    fn add_all(&mut self, alerts: &[Alert]) {
        for a in alerts {
            self.add(a.clone()).expect("valid alerts");
        }
    }

    #[inline]
    fn update(&mut self, t: &Tick, fire: impl FnMut(&Fire<'_>)) {
        TwoBTreeMaps::update(self, Value::Int(t.key), levels::FIELD, Value::Int(t.price), t.ts, t.row, fire)
    }
}

pub(crate) fn level_contender<L: Levels + 'static>(
    name: &'static str,
    alerts: Rc<Stream<Alert>>,
    count: usize,
    ticks: Rc<Stream<Tick>>,
) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        let alerts = alerts.get(count);
        Box::new(move |check| {
            let (live, start) = (crate::alloc::counts().live, Instant::now());
            let mut idx = L::default();
            idx.add_all(&alerts[..count]);
            let setup = Setup {
                items: count as u64,
                seconds: start.elapsed().as_secs_f64(),
                bytes: crate::alloc::counts().live.saturating_sub(live),
            };
            let pass = measure(n, check, |tally| {
                for t in &ticks[..n] {
                    idx.update(t, |f| tally.add_fire(f));
                }
                None
            });
            Pass { setup: Some(setup), ..pass }
        })
    })
}
