//! The test broker harness itself: it starts a broker that answers, stops it
//! on drop, and fails loudly when it cannot.
#![cfg(feature = "kafka")]

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use cep_kafka::testing::{Broker, BrokerError};

#[test]
fn a_broker_answers_and_is_gone_after_drop() {
    let broker = Broker::start();
    let addr = ("127.0.0.1", broker.port());
    assert!(TcpStream::connect(addr).is_ok());
    let partitions = cep_kafka::admin::partitions(&broker.bootstrap(), "none", Duration::from_secs(5));
    assert!(matches!(partitions, Err(cep_kafka::Error::NoSuchTopic { .. })), "{partitions:?}");
    assert_eq!(broker.url("t").to_string(), format!("kafka://127.0.0.1:{}/t", broker.port()));
    drop(broker);
    // Killed and reaped: nothing listens on the port any more.
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "the broker still listens after drop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_missing_binary_says_how_to_install_it() {
    let err = Broker::try_start_with(Path::new("/nonexistent/tansu")).unwrap_err();
    assert!(matches!(err, BrokerError::Missing { .. }), "{err:?}");
    assert!(err.to_string().contains("bash .ci/install-kafka-broker"), "{err}");
}

#[test]
fn a_broker_that_exits_at_once_is_an_error_with_its_log() {
    // `echo` prints the arguments it was given into the log and exits: the
    // error must say so and show that log.
    let err = Broker::try_start_with(Path::new("/bin/echo")).unwrap_err();
    let BrokerError::Exited { status, log, tail } = &err else { panic!("{err:?}") };
    assert!(status.success());
    assert!(tail.contains("broker --listener-url tcp://127.0.0.1:"), "{tail}");
    assert!(log.exists(), "the log an error names is kept");
    assert!(err.to_string().contains(tail.as_str()));
    let _ = std::fs::remove_dir_all(log.parent().unwrap());
}
