//! `HttpResolver` against a real HTTP/1.1 service on 127.0.0.1.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cep_core::Value;
use cep_core::remote::{Answer, Call, CallErrorKind, CallId, Resolver};
use cep_remote::{Endpoint, HttpResolver, RemoteConfig, RemoteError};
use common::{Mode, Rng, TestServer, args, expected};

fn config(server: &TestServer) -> RemoteConfig {
    RemoteConfig::new(vec![Endpoint::new("near", server.url())])
        .with_timeout(Duration::from_secs(2))
        .with_batching(16, Duration::from_millis(1))
}

fn call(id: u64, args: Vec<Value>) -> Call {
    Call { id: CallId(id), func: 0, args }
}

/// Waits for every call in flight (bounded: panics after 20 s).
fn drain(r: &mut impl Resolver) -> Vec<(CallId, Answer)> {
    let start = Instant::now();
    let mut out = Vec::new();
    while r.in_flight() > 0 {
        assert!(start.elapsed() < Duration::from_secs(20), "answers did not come");
        r.wait(&mut out, Duration::from_millis(200));
    }
    out
}

/// The answers by id, checking each id came once.
fn by_id(answers: Vec<(CallId, Answer)>) -> HashMap<u64, Answer> {
    let mut map = HashMap::new();
    for (id, a) in answers {
        assert!(map.insert(id.0, a).is_none(), "call {} answered twice", id.0);
    }
    map
}

fn failed_kind(a: &Answer) -> (CallErrorKind, u32) {
    match a {
        Answer::Failed(e) => (e.kind, e.attempts),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn answers_equal_the_service_function() {
    let server = TestServer::answering(Duration::ZERO);
    let mut r = HttpResolver::new(&config(&server).with_cache_entries(0)).unwrap();
    let n = 300;
    for i in 0..n {
        r.submit(call(i, args(i, 1000)));
    }
    let answers = by_id(drain(&mut r));
    assert_eq!(answers.len(), n as usize);
    for i in 0..n {
        assert_eq!(answers[&i], Answer::Value(expected(&args(i, 1000))), "call {i}");
    }
    let s = r.stats();
    assert_eq!((s.calls, s.failures, s.retries, s.cache_hits, s.coalesced), (n, 0, 0, 0, 0));
    assert_eq!(server.counts.get(&server.counts.calls), n);
    assert_eq!(s.batches, server.counts.get(&server.counts.requests));
}

#[test]
fn identical_calls_coalesce_then_hit_the_cache() {
    let server = TestServer::answering(Duration::from_millis(300));
    let mut r = HttpResolver::new(&config(&server)).unwrap();
    for i in 0..5 {
        r.submit(call(i, args(7, 100)));
    }
    let first = by_id(drain(&mut r));
    assert_eq!(first.len(), 5);
    r.submit(call(5, args(7, 100)));
    let mut out = Vec::new();
    r.poll(&mut out);
    assert_eq!(out, [(CallId(5), Answer::Value(expected(&args(7, 100))))], "a cache hit is ready at once");
    let s = r.stats();
    // 4 coalesced unless a loaded machine took over 300 ms to submit five.
    assert_eq!((s.calls, s.coalesced + s.cache_hits), (6, 5));
    assert!(s.coalesced >= 1 && s.cache_hits >= 1, "{s:?}");
    assert_eq!(server.counts.get(&server.counts.calls), 1);
    assert!(first.values().all(|a| *a == Answer::Value(expected(&args(7, 100)))));
}

#[test]
fn batching_sends_fewer_requests_than_calls() {
    let server = TestServer::answering(Duration::ZERO);
    let cfg = config(&server).with_batching(16, Duration::from_millis(20)).with_connections(2);
    let mut r = HttpResolver::new(&cfg).unwrap();
    for i in 0..100 {
        r.submit(call(i, args(i, 1000)));
    }
    assert_eq!(by_id(drain(&mut r)).len(), 100);
    let requests = server.counts.get(&server.counts.requests);
    assert!((7..100).contains(&requests), "{requests} requests for 100 calls in batches of 16");
    assert_eq!(r.stats().batches, requests);
}

#[test]
fn calls_in_flight_stay_within_the_bound() {
    let server = TestServer::answering(Duration::from_millis(20));
    let cfg = config(&server).with_batching(2, Duration::ZERO).with_connections(16).with_max_in_flight(6);
    let mut r = HttpResolver::new(&cfg).unwrap();
    let mut answered = Vec::new();
    for i in 0..60 {
        r.submit(call(i, args(i, 1000)));
        // Answers taken, what is left awaits the service: within the bound.
        r.poll(&mut answered);
        assert!(r.in_flight() <= 6, "{} calls in flight after call {i}", r.in_flight());
    }
    answered.extend(drain(&mut r));
    assert_eq!(by_id(answered).len(), 60);
    let max_calls = server.counts.get(&server.counts.max_active_calls);
    assert!((2..=6).contains(&max_calls), "the service saw {max_calls} calls at once (bound 6)");
}

#[test]
fn a_shard_at_its_bound_does_not_wait_for_the_linger() {
    let server = TestServer::answering(Duration::ZERO);
    let cfg = config(&server).with_batching(16, Duration::from_secs(30)).with_max_in_flight(4);
    let mut r = HttpResolver::new(&cfg).unwrap();
    let start = Instant::now();
    for i in 0..20 {
        r.submit(call(i, args(i, 1000)));
    }
    assert!(start.elapsed() < Duration::from_secs(5), "submit waited for the linger");
    assert!(server.counts.get(&server.counts.requests) >= 4);
}

#[test]
fn requests_in_flight_stay_within_the_connections_and_reuse_them() {
    let server = TestServer::answering(Duration::from_millis(10));
    let cfg = config(&server).with_batching(1, Duration::ZERO).with_connections(3);
    let mut r = HttpResolver::new(&cfg).unwrap();
    for i in 0..40 {
        r.submit(call(i, args(i, 1000)));
    }
    assert_eq!(by_id(drain(&mut r)).len(), 40);
    let max = server.counts.get(&server.counts.max_active_requests);
    assert!((2..=3).contains(&max), "{max} requests at once for 3 connections");
    let connections = server.counts.get(&server.counts.connections);
    assert!(connections <= 3, "{connections} connections for 40 requests: keep-alive is not used");
}

#[test]
fn a_slow_service_times_out_after_the_retries() {
    let server = TestServer::answering(Duration::from_millis(400));
    let cfg = config(&server).with_timeout(Duration::from_millis(50)).with_retries(2);
    let mut r = HttpResolver::new(&cfg).unwrap();
    let start = Instant::now();
    r.submit(call(1, args(1, 10)));
    let answers = by_id(drain(&mut r));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(failed_kind(&answers[&1]), (CallErrorKind::Timeout, 3));
    let s = r.stats();
    assert_eq!((s.retries, s.failures, s.batches), (2, 1, 3));
    if let Answer::Failed(e) = &answers[&1] {
        assert!(e.detail.contains("near") && e.detail.contains(&server.url()), "{}", e.detail);
    }
}

#[test]
fn an_error_status_fails_with_that_status() {
    let server = TestServer::start(|_| Mode::Status(500));
    let mut r = HttpResolver::new(&config(&server).with_retries(1)).unwrap();
    r.submit(call(1, args(1, 10)));
    r.submit(call(2, args(2, 10)));
    let answers = by_id(drain(&mut r));
    assert_eq!(failed_kind(&answers[&1]), (CallErrorKind::Status(500), 2));
    assert_eq!(failed_kind(&answers[&2]), (CallErrorKind::Status(500), 2));
    assert_eq!(r.stats().failures, 2);
}

#[test]
fn a_transient_error_is_retried_and_answered() {
    let server = TestServer::start(|n| if n == 0 { Mode::Status(503) } else { Mode::Answer(Duration::ZERO) });
    let mut r = HttpResolver::new(&config(&server)).unwrap();
    r.submit(call(1, args(1, 10)));
    let answers = by_id(drain(&mut r));
    assert_eq!(answers[&1], Answer::Value(expected(&args(1, 10))));
    assert_eq!((r.stats().retries, r.stats().failures), (1, 0));
}

#[test]
fn a_dropped_connection_is_retried_then_fails_connect() {
    let server = TestServer::start(|n| if n == 0 { Mode::Drop } else { Mode::Answer(Duration::ZERO) });
    let mut r = HttpResolver::new(&config(&server)).unwrap();
    r.submit(call(1, args(1, 10)));
    assert_eq!(by_id(drain(&mut r))[&1], Answer::Value(expected(&args(1, 10))));
    assert_eq!(r.stats().retries, 1);

    let server = TestServer::start(|_| Mode::Drop);
    let mut r = HttpResolver::new(&config(&server).with_retries(2)).unwrap();
    r.submit(call(1, args(1, 10)));
    assert_eq!(failed_kind(&by_id(drain(&mut r))[&1]), (CallErrorKind::Connect, 3));
}

#[test]
fn replies_outside_the_protocol_fail_protocol() {
    let server = TestServer::start(|_| Mode::WrongJson);
    let mut r = HttpResolver::new(&config(&server).with_retries(1)).unwrap();
    r.submit(call(1, args(1, 10)));
    assert_eq!(failed_kind(&by_id(drain(&mut r))[&1]), (CallErrorKind::Protocol, 2));

    // A reply missing one id: the others are answered, that one retried.
    let server = TestServer::start(|n| if n == 0 { Mode::MissingLast } else { Mode::Answer(Duration::ZERO) });
    let cfg = config(&server).with_batching(3, Duration::from_millis(100));
    let mut r = HttpResolver::new(&cfg).unwrap();
    for i in 0..3 {
        r.submit(call(i, args(i, 10)));
    }
    let answers = by_id(drain(&mut r));
    for i in 0..3 {
        assert_eq!(answers[&i], Answer::Value(expected(&args(i, 10))));
    }
    assert_eq!((r.stats().retries, r.stats().batches), (1, 2));
}

#[test]
fn nothing_listening_fails_connect_quickly() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let cfg = RemoteConfig::new(vec![Endpoint::new("near", format!("http://127.0.0.1:{port}/near"))]);
    let mut r = HttpResolver::new(&cfg).unwrap();
    let start = Instant::now();
    r.submit(call(1, args(1, 10)));
    let answers = by_id(drain(&mut r));
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    assert_eq!(failed_kind(&answers[&1]), (CallErrorKind::Connect, 4));
}

#[test]
fn bad_settings_are_typed_errors() {
    let https = RemoteConfig::new(vec![Endpoint::new("near", "https://127.0.0.1/near")]);
    let e = HttpResolver::new(&https).unwrap_err();
    assert!(matches!(e, RemoteError::UnsupportedScheme { .. }));
    assert!(e.to_string().contains("not https"), "{e}");
    let bad = RemoteConfig::new(vec![Endpoint::new("near", "http://127.0.0.1:notaport/")]);
    assert!(matches!(HttpResolver::new(&bad), Err(RemoteError::BadUrl { .. })));
    let zero = RemoteConfig::new(vec![]).with_max_in_flight(0);
    assert!(matches!(HttpResolver::new(&zero), Err(RemoteError::ZeroBound("max_in_flight"))));
}

#[test]
fn huge_durations_do_not_panic() {
    let server = TestServer::answering(Duration::ZERO);
    let cfg = config(&server).with_timeout(Duration::MAX).with_batching(2, Duration::MAX);
    let mut r = HttpResolver::new(&cfg).unwrap();
    r.submit(call(1, args(1, 10)));
    r.submit(call(2, args(2, 10)));
    assert_eq!(by_id(drain(&mut r)).len(), 2);
    r.submit(call(3, args(3, 10)));
    let mut out = Vec::new();
    std::thread::sleep(Duration::from_millis(20));
    r.poll(&mut out);
    assert!(out.is_empty(), "a lone call waits for its (endless) linger while the shard goes on");
    // A shard that waits makes no more calls: what is queued leaves now.
    r.wait(&mut out, Duration::from_secs(5));
    assert_eq!(out.len(), 1, "the call leaves when the shard waits");
}

#[test]
fn an_unknown_function_fails_at_once() {
    let server = TestServer::answering(Duration::ZERO);
    let mut r = HttpResolver::new(&config(&server)).unwrap();
    r.submit(Call { id: CallId(1), func: 1, args: vec![] });
    let mut out = Vec::new();
    r.poll(&mut out);
    assert_eq!(failed_kind(&out[0].1).0, CallErrorKind::Protocol);
}

#[test]
fn wait_blocks_until_its_timeout_and_poll_does_not() {
    let server = TestServer::answering(Duration::from_millis(800));
    let mut r = HttpResolver::new(&config(&server)).unwrap();
    r.submit(call(1, args(1, 10)));
    let mut out = Vec::new();
    let start = Instant::now();
    r.poll(&mut out);
    assert!(out.is_empty() && start.elapsed() < Duration::from_millis(50));
    let start = Instant::now();
    r.wait(&mut out, Duration::from_millis(60));
    let waited = start.elapsed();
    assert!(out.is_empty() && waited >= Duration::from_millis(55) && waited < Duration::from_millis(500), "{waited:?}");
    r.wait(&mut out, Duration::from_secs(5));
    assert_eq!(out.len(), 1);
    assert_eq!(r.in_flight(), 0);
    let start = Instant::now();
    r.wait(&mut out, Duration::from_secs(5));
    assert!(start.elapsed() < Duration::from_millis(50), "nothing in flight: no wait");
}

#[test]
fn dropping_the_resolver_stops_it_promptly() {
    let server = TestServer::answering(Duration::from_secs(10));
    let mut r = HttpResolver::new(&config(&server)).unwrap();
    for i in 0..10 {
        r.submit(call(i, args(i, 100)));
    }
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    drop(r);
    assert!(start.elapsed() < Duration::from_millis(500), "drop took {:?}", start.elapsed());
}

/// Property style: random submits, polls and waits over a service with
/// random delays, reversed replies and transient errors; every call is
/// answered once, with the function's value.
#[test]
fn every_call_is_answered_once_under_random_interleavings() {
    for seed in [1_u64, 2, 3, 4] {
        let server = TestServer::start(move |n| {
            let mut rng = Rng(seed.wrapping_mul(1000).wrapping_add(n));
            match rng.below(10) {
                0 => Mode::Status(500),
                1 => Mode::Drop,
                _ => Mode::Answer(Duration::from_micros(rng.below(3000))),
            }
        });
        let mut rng = Rng(seed);
        let cfg = config(&server)
            .with_retries(8)
            .with_batching(1 + rng.below(8) as usize, Duration::from_micros(rng.below(2000)))
            .with_connections(1 + rng.below(4) as usize)
            .with_max_in_flight(1 + rng.below(20) as usize)
            .with_cache_entries(rng.below(30) as usize);
        let mut r = HttpResolver::new(&cfg).unwrap();
        let mut out = Vec::new();
        let n = 200;
        let mut sent = Vec::new();
        for i in 0..n {
            sent.push(args(rng.below(40), 1000));
            r.submit(call(i, sent[i as usize].clone()));
            match rng.below(4) {
                0 => r.poll(&mut out),
                1 => r.wait(&mut out, Duration::from_micros(rng.below(2000))),
                _ => {}
            }
        }
        out.extend(drain(&mut r));
        let mut seen = HashMap::new();
        for (id, a) in &out {
            assert!(seen.insert(id.0, a.clone()).is_none(), "seed {seed}: call {} answered twice", id.0);
            assert_eq!(*a, Answer::Value(expected(&sent[id.0 as usize])), "seed {seed}: call {}", id.0);
        }
        assert_eq!(seen.len(), n as usize, "seed {seed}");
        let s = r.stats();
        assert_eq!(s.calls, n);
        assert!(s.cache_hits + s.coalesced <= n);
        assert_eq!(s.failures, 0);
    }
}

/// Each function's round trip is measured on its own service's replies:
/// `auto` chooses per function from them.
#[test]
fn round_trips_are_measured_per_function() {
    let (slow, fast) = (TestServer::answering(Duration::from_millis(30)), TestServer::answering(Duration::ZERO));
    let cfg = RemoteConfig::new(vec![Endpoint::new("slow", slow.url()), Endpoint::new("fast", fast.url())])
        .with_timeout(Duration::from_secs(2))
        .with_batching(1, Duration::ZERO);
    let mut r = HttpResolver::new(&cfg).unwrap();
    assert_eq!((r.round_trip_of(0), r.round_trip_of(1)), (None, None), "nothing measured yet");
    for i in 0..4 {
        r.submit(Call { id: CallId(2 * i), func: 0, args: args(i, 1000) });
        r.submit(Call { id: CallId(2 * i + 1), func: 1, args: args(i, 1000) });
        drain(&mut r);
    }
    let (s, f) = (r.round_trip_of(0).unwrap(), r.round_trip_of(1).unwrap());
    assert!(s >= Duration::from_millis(30), "the slow service's mean {s:?}");
    assert!(f < Duration::from_millis(30), "the fast service's mean {f:?}");
    assert_eq!(r.round_trip_of(2), None, "no such function");
}
