//! What an [`HttpResolver`](crate::HttpResolver) is built from, and the
//! typed errors of building one.
//!
//! The bounds are settings rather than constants because they are what the
//! W7 experiment varies (batch size, linger, requests in flight) and what a
//! user tunes to a service's capacity.

use std::fmt;
use std::time::Duration;

use hyper::Uri;

/// One remote function: where it is answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The function's name (for messages: `near`).
    pub name: String,
    /// Its URL, `http://host[:port][/path]`.
    pub url: String,
}

impl Endpoint {
    /// An endpoint named `name` answered at `url`.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Endpoint {
        Endpoint { name: name.into(), url: url.into() }
    }
}

/// The settings of an [`HttpResolver`](crate::HttpResolver).
///
/// `endpoints[i]` answers the calls whose `func` is `i` (the declaration
/// order of the query's `REMOTE` functions). Build one with
/// [`RemoteConfig::new`] and the `with_*` methods, or fill the fields over
/// [`Default`].
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteConfig {
    /// One per function, indexed by [`Call::func`](cep_core::remote::Call::func).
    pub endpoints: Vec<Endpoint>,
    /// How long one request may take, connecting included (LANGUAGE.md §8:
    /// `--remote-timeout`, default 5 s).
    pub timeout: Duration,
    /// Attempts after the first one (default 3, as LANGUAGE.md §8 says).
    pub retries: u32,
    /// Calls carried by one request at most.
    pub max_batch: usize,
    /// How long a call may wait for others to fill its batch.
    pub linger: Duration,
    /// Distinct calls sent to the service and not yet answered, at most:
    /// the shard's backpressure ([`Resolver::submit`](cep_core::remote::Resolver::submit)
    /// waits while it is reached).
    pub max_in_flight: usize,
    /// Connections (so concurrent requests) per endpoint.
    pub connections: usize,
    /// Answers kept in the cache (least recently used evicted); 0 turns the
    /// cache off.
    pub cache_entries: usize,
}

impl Default for RemoteConfig {
    fn default() -> RemoteConfig {
        RemoteConfig {
            endpoints: Vec::new(),
            timeout: Duration::from_secs(5),
            retries: 3,
            max_batch: 64,
            linger: Duration::from_millis(1),
            max_in_flight: 1024,
            connections: 4,
            cache_entries: 65_536,
        }
    }
}

impl RemoteConfig {
    /// The defaults with these endpoints.
    pub fn new(endpoints: Vec<Endpoint>) -> RemoteConfig {
        RemoteConfig { endpoints, ..RemoteConfig::default() }
    }

    /// Sets [`timeout`](Self::timeout).
    pub fn with_timeout(mut self, timeout: Duration) -> RemoteConfig {
        self.timeout = timeout;
        self
    }

    /// Sets [`retries`](Self::retries).
    pub fn with_retries(mut self, retries: u32) -> RemoteConfig {
        self.retries = retries;
        self
    }

    /// Sets [`max_batch`](Self::max_batch) and [`linger`](Self::linger).
    pub fn with_batching(mut self, max_batch: usize, linger: Duration) -> RemoteConfig {
        self.max_batch = max_batch;
        self.linger = linger;
        self
    }

    /// Sets [`max_in_flight`](Self::max_in_flight).
    pub fn with_max_in_flight(mut self, max_in_flight: usize) -> RemoteConfig {
        self.max_in_flight = max_in_flight;
        self
    }

    /// Sets [`connections`](Self::connections).
    pub fn with_connections(mut self, connections: usize) -> RemoteConfig {
        self.connections = connections;
        self
    }

    /// Sets [`cache_entries`](Self::cache_entries).
    pub fn with_cache_entries(mut self, cache_entries: usize) -> RemoteConfig {
        self.cache_entries = cache_entries;
        self
    }

    /// Checks the bounds and parses every URL.
    pub(crate) fn targets(&self) -> Result<Vec<Target>, RemoteError> {
        for (what, n) in
            [("max_batch", self.max_batch), ("max_in_flight", self.max_in_flight), ("connections", self.connections)]
        {
            if n == 0 {
                return Err(RemoteError::ZeroBound(what));
            }
        }
        if self.timeout.is_zero() {
            return Err(RemoteError::ZeroBound("timeout"));
        }
        if self.endpoints.len() > usize::from(u16::MAX) + 1 {
            return Err(RemoteError::TooManyEndpoints(self.endpoints.len()));
        }
        self.endpoints.iter().map(Target::parse).collect()
    }
}

/// A parsed `http://` URL: where to connect and what to ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// The function's name, for messages.
    pub name: String,
    /// The URL as given, for messages.
    pub url: String,
    /// Host name or address (brackets removed from an IPv6 literal).
    pub host: String,
    /// Port (80 when the URL names none).
    pub port: u16,
    /// The `Host` header: the URL's authority.
    pub authority: String,
    /// Path and query, `/` when the URL has none.
    pub path: Uri,
}

impl Target {
    /// Parses `endpoint.url`. Only `http://` is accepted: the service is a
    /// local or in-cluster one, and TLS would add a crate stack for no
    /// present use.
    pub(crate) fn parse(endpoint: &Endpoint) -> Result<Target, RemoteError> {
        let url = endpoint.url.trim();
        let bad = |reason: &str| RemoteError::BadUrl {
            name: endpoint.name.clone(),
            url: endpoint.url.clone(),
            reason: reason.to_string(),
        };
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(bad("no scheme (expected http://host:port/path)"));
        };
        if !scheme.eq_ignore_ascii_case("http") {
            return Err(RemoteError::UnsupportedScheme {
                name: endpoint.name.clone(),
                url: endpoint.url.clone(),
                scheme: scheme.to_string(),
            });
        }
        if rest.contains('#') {
            return Err(bad("a fragment (#) has no meaning here"));
        }
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains('@') {
            return Err(bad("user information (user@host) is not supported"));
        }
        let (host, port) = split_host_port(authority).map_err(bad)?;
        let path = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        let path: Uri = path.parse().map_err(|_| bad("the path is not a valid URI path"))?;
        Ok(Target {
            name: endpoint.name.clone(),
            url: endpoint.url.clone(),
            host,
            port,
            authority: authority.to_string(),
            path,
        })
    }
}

/// Splits `host[:port]` or `[v6][:port]`.
fn split_host_port(authority: &str) -> Result<(String, u16), &'static str> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err("an IPv6 address without its closing ]");
        };
        match after {
            "" => (host, None),
            a => match a.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => return Err("text after the IPv6 address"),
            },
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("no host");
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the host has spaces or control characters");
    }
    let port = match port {
        None => 80,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err("the port is not a number from 1 to 65535"),
            Ok(p) => p,
        },
    };
    Ok((host.to_string(), port))
}

/// Why a resolver could not be built.
#[derive(Debug)]
pub enum RemoteError {
    /// A URL that does not parse.
    BadUrl {
        /// The function's name.
        name: String,
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A scheme other than `http` (`https` is not supported).
    UnsupportedScheme {
        /// The function's name.
        name: String,
        /// The URL as given.
        url: String,
        /// The scheme found.
        scheme: String,
    },
    /// A bound that must be positive is 0 (its field's name).
    ZeroBound(&'static str),
    /// More endpoints than a `u16` function index can name.
    TooManyEndpoints(usize),
    /// The resolver's thread or its runtime could not be started.
    Start(std::io::Error),
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::BadUrl { name, url, reason } => {
                write!(f, "remote function {name}: bad URL {url:?}: {reason}")
            }
            RemoteError::UnsupportedScheme { name, url, scheme } => write!(
                f,
                "remote function {name}: URL {url:?} has scheme {scheme:?}; only http:// is supported (not https)"
            ),
            RemoteError::ZeroBound(what) => write!(f, "remote settings: {what} must be positive"),
            RemoteError::TooManyEndpoints(n) => {
                write!(f, "remote settings: {n} functions; at most 65536 can be named")
            }
            RemoteError::Start(e) => write!(f, "could not start the remote client thread: {e}"),
        }
    }
}

impl std::error::Error for RemoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RemoteError::Start(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<Target, RemoteError> {
        Target::parse(&Endpoint::new("near", url))
    }

    #[test]
    fn parses_host_port_and_path() {
        let t = parse("http://127.0.0.1:7070/near?x=1").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.authority.as_str()), ("127.0.0.1", 7070, "127.0.0.1:7070"));
        assert_eq!(t.path, "/near?x=1");
        let t = parse("HTTP://example.invalid").unwrap();
        assert_eq!((t.port, t.path.to_string().as_str()), (80, "/"));
        let t = parse("http://[::1]:81/a").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 81));
    }

    #[test]
    fn refuses_bad_urls_with_typed_errors() {
        assert!(matches!(parse("https://x/"), Err(RemoteError::UnsupportedScheme { .. })));
        for bad in [
            "x:80/near",
            "http://",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://u@h/",
            "http://[::1/",
            "http://h/#f",
        ] {
            assert!(matches!(parse(bad), Err(RemoteError::BadUrl { .. })), "{bad}");
        }
        let e = parse("https://x/").unwrap_err().to_string();
        assert!(e.contains("https") && e.contains("near"), "{e}");
    }

    #[test]
    fn refuses_zero_bounds() {
        let c = RemoteConfig::new(vec![Endpoint::new("f", "http://h/")]).with_connections(0);
        assert!(matches!(c.targets(), Err(RemoteError::ZeroBound("connections"))));
    }
}
