//! The workloads' input streams, generated once per process and shared by
//! the contenders that read them, so that setup is paid once per stream.

use std::cell::RefCell;
use std::rc::Rc;

use cep_core::{Event, Sym};

use crate::w1::{self, Tick};
use crate::w2::{self, Kind};
use crate::{w3, w4};

/// A lazily generated stream: the longest prefix asked for so far.
pub(crate) struct Stream<T> {
    pub(crate) cached: RefCell<Option<Rc<Vec<T>>>>,
    pub(crate) generate: Box<dyn Fn(usize) -> Vec<T>>,
}

impl<T> Stream<T> {
    pub(crate) fn new(generate: impl Fn(usize) -> Vec<T> + 'static) -> Rc<Stream<T>> {
        Rc::new(Stream { cached: RefCell::new(None), generate: Box::new(generate) })
    }

    /// At least the first `n` items (slice with `[..n]`).
    pub(crate) fn get(&self, n: usize) -> Rc<Vec<T>> {
        let mut c = self.cached.borrow_mut();
        if let Some(v) = c.as_ref().filter(|v| v.len() >= n) {
            return v.clone();
        }
        let v = Rc::new((self.generate)(n));
        *c = Some(v.clone());
        v
    }
}

/// Events built from generated items by a `fill` function.
pub(crate) fn events_of<T>(items: impl Iterator<Item = T>, mut fill: impl FnMut(&mut Event, &T)) -> Vec<Event> {
    items
        .map(|t| {
            let mut e = Event::default();
            fill(&mut e, &t);
            e
        })
        .collect()
}

pub(crate) struct Streams {
    pub(crate) ticks: Rc<Stream<Tick>>,
    pub(crate) w1: Rc<Stream<Event>>,
    pub(crate) w2: [Rc<Stream<Event>>; 3],
    pub(crate) w3: Rc<Stream<Event>>,
    pub(crate) w4: Rc<Stream<Event>>,
}

impl Streams {
    pub(crate) fn new() -> Streams {
        let w2 = |kind: Kind| {
            Stream::new(move |n| {
                let types = w2::type_syms();
                events_of(w2::Events::new(kind, n), |e, w| w2::fill(e, w, &types))
            })
        };
        Streams {
            ticks: Stream::new(|n| w1::Ticks::new(n).collect()),
            w1: Stream::new(|n| {
                let tick = Sym::new("Tick");
                events_of(w1::Ticks::new(n), |e, t| w1::fill(e, t, tick))
            }),
            w2: Kind::ALL.map(w2),
            w3: Stream::new(|n| {
                let types = w3::type_syms();
                events_of(w3::Events::new(n), |e, w| w3::fill(e, w, &types))
            }),
            w4: Stream::new(|n| {
                let syms = w4::Syms::new();
                events_of(w4::Trades::new(n), |e, t| w4::fill(e, t, &syms))
            }),
        }
    }

    pub(crate) fn w2(&self, kind: Kind) -> Rc<Stream<Event>> {
        self.w2[Kind::ALL.iter().position(|&k| k == kind).expect("a W2 kind")].clone()
    }
}
