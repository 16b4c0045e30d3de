//! `kafka://HOST:PORT/TOPIC`: where a job reads its events or writes its
//! output (LANGUAGE.md §9), parsed into a [`KafkaUrl`].
//!
//! The parser is strict on purpose: a typo in a topic name would otherwise
//! become a new, empty topic on brokers that create topics on first use, and
//! a run would wait on it for ever. So the port is required (no silent 9092),
//! and the topic must be a name Kafka itself accepts.

use std::fmt;
use std::str::FromStr;

/// The scheme every Kafka URL starts with.
const SCHEME: &str = "kafka://";

/// Kafka's own limit on a topic name's length.
pub const MAX_TOPIC_LEN: usize = 249;

/// A parsed `kafka://HOST:PORT/TOPIC`.
///
/// `HOST` is a name, an IPv4 address or a bracketed IPv6 address
/// (`kafka://[::1]:9092/ticks`). Display writes the URL back in the same form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KafkaUrl {
    host: String,
    port: u16,
    topic: String,
}

impl KafkaUrl {
    /// Parses `text`; the same as `text.parse()`.
    pub fn parse(text: &str) -> Result<KafkaUrl, UrlError> {
        let rest = strip_scheme(text)?;
        let (authority, topic) = match rest.split_once('/') {
            Some(parts) => parts,
            None => (rest, ""),
        };
        let (host, port) = split_host_port(authority)?;
        check_topic(topic)?;
        Ok(KafkaUrl { host: host.to_owned(), port, topic: topic.to_owned() })
    }

    /// The host as written, without brackets for an IPv6 address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// `HOST:PORT` as a Kafka client's `bootstrap.servers` takes it (IPv6
    /// hosts in brackets).
    pub fn bootstrap(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl FromStr for KafkaUrl {
    type Err = UrlError;

    fn from_str(text: &str) -> Result<KafkaUrl, UrlError> {
        KafkaUrl::parse(text)
    }
}

impl fmt::Display for KafkaUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.bootstrap(), self.topic)
    }
}

/// Why a Kafka URL was refused. Display says what was expected, in words
/// fit for the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    /// The text does not start with `kafka://` (scheme compared without case).
    Scheme { found: String },
    /// Nothing, or something that is not a host name or address, between
    /// `kafka://` and the port.
    Host { found: String },
    /// No port, or not a number in 1..=65535.
    Port { found: String },
    /// No topic after the address.
    MissingTopic,
    /// A topic Kafka would refuse.
    Topic { found: String, problem: TopicProblem },
}

/// What is wrong with a topic name (Kafka's own rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicProblem {
    /// Longer than [`MAX_TOPIC_LEN`] bytes.
    TooLong,
    /// `.` and `..` are reserved.
    Reserved,
    /// A character other than ASCII letters, digits, `.`, `_` and `-`
    /// (this includes `/`: a URL has no path after the topic).
    Character(char),
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHAPE: &str = "expected kafka://HOST:PORT/TOPIC";
        match self {
            UrlError::Scheme { found } => write!(f, "{SHAPE}, found {found:?}"),
            UrlError::Host { found } => write!(f, "bad host {found:?}: {SHAPE}"),
            UrlError::Port { found } if found.is_empty() => {
                write!(f, "no port: {SHAPE} (Kafka's usual port is 9092)")
            }
            UrlError::Port { found } => {
                write!(f, "bad port {found:?}: a number from 1 to 65535 expected")
            }
            UrlError::MissingTopic => write!(f, "no topic: {SHAPE}"),
            UrlError::Topic { found, problem } => write!(f, "bad topic {found:?}: {problem}"),
        }
    }
}

impl fmt::Display for TopicProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopicProblem::TooLong => write!(f, "longer than {MAX_TOPIC_LEN} characters"),
            TopicProblem::Reserved => write!(f, "\".\" and \"..\" are not topic names"),
            TopicProblem::Character(c) => write!(f, "{c:?} is not allowed (letters, digits, '.', '_' and '-' only)"),
        }
    }
}

impl std::error::Error for UrlError {}

fn strip_scheme(text: &str) -> Result<&str, UrlError> {
    match text.get(..SCHEME.len()) {
        Some(head) if head.eq_ignore_ascii_case(SCHEME) => Ok(&text[SCHEME.len()..]),
        _ => Err(UrlError::Scheme { found: text.to_owned() }),
    }
}

/// Splits `HOST:PORT` (or `[V6]:PORT`) and checks both.
fn split_host_port(authority: &str) -> Result<(&str, u16), UrlError> {
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let Some((v6, after)) = inner.split_once(']') else {
            return Err(UrlError::Host { found: authority.to_owned() });
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(UrlError::Host { found: authority.to_owned() });
        }
        match after.strip_prefix(':') {
            Some(port) => (v6, port),
            None if after.is_empty() => (v6, ""),
            None => return Err(UrlError::Host { found: authority.to_owned() }),
        }
    } else {
        let (host, port) = authority.rsplit_once(':').unwrap_or((authority, ""));
        if !is_host_name(host) {
            return Err(UrlError::Host { found: host.to_owned() });
        }
        (host, port)
    };
    match port.parse::<u16>() {
        Ok(p) if p != 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok((host, p)),
        _ => Err(UrlError::Port { found: port.to_owned() }),
    }
}

/// A DNS name or IPv4 address: dot-separated labels of letters, digits,
/// `-` and `_`. (Userinfo, `@`, and anything else a general URL allows is
/// refused: Kafka takes none of it.)
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

fn check_topic(topic: &str) -> Result<(), UrlError> {
    let problem = if topic.is_empty() {
        return Err(UrlError::MissingTopic);
    } else if let Some(c) = topic.chars().find(|c| !(c.is_ascii_alphanumeric() || ".-_".contains(*c))) {
        TopicProblem::Character(c)
    } else if topic.len() > MAX_TOPIC_LEN {
        TopicProblem::TooLong
    } else if topic == "." || topic == ".." {
        TopicProblem::Reserved
    } else {
        return Ok(());
    };
    Err(UrlError::Topic { found: topic.to_owned(), problem })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> UrlError {
        KafkaUrl::parse(text).expect_err(text)
    }

    #[test]
    fn a_url_parses_into_its_parts_and_displays_back() {
        let url: KafkaUrl = "kafka://broker-1.example:9092/rise_spike.out-2".parse().unwrap();
        assert_eq!(url.host(), "broker-1.example");
        assert_eq!(url.port(), 9092);
        assert_eq!(url.topic(), "rise_spike.out-2");
        assert_eq!(url.bootstrap(), "broker-1.example:9092");
        assert_eq!(url.to_string(), "kafka://broker-1.example:9092/rise_spike.out-2");
        assert_eq!(KafkaUrl::parse(&url.to_string()), Ok(url));
    }

    #[test]
    fn ipv4_and_bracketed_ipv6_hosts() {
        let v4 = KafkaUrl::parse("kafka://127.0.0.1:19092/t").unwrap();
        assert_eq!(v4.bootstrap(), "127.0.0.1:19092");
        let v6 = KafkaUrl::parse("kafka://[::1]:9092/t").unwrap();
        assert_eq!(v6.host(), "::1");
        assert_eq!(v6.bootstrap(), "[::1]:9092");
        assert_eq!(v6.to_string(), "kafka://[::1]:9092/t");
    }

    #[test]
    fn the_scheme_is_compared_without_case() {
        assert_eq!(KafkaUrl::parse("KAFKA://h:1/t").unwrap().topic(), "t");
    }

    #[test]
    fn a_wrong_or_missing_scheme_is_refused() {
        for text in ["", "kafka:/h:1/t", "http://h:1/t", "h:1/t", "kafk"] {
            assert_eq!(err(text), UrlError::Scheme { found: text.to_owned() });
        }
    }

    #[test]
    fn a_missing_or_bad_host_is_refused() {
        assert_eq!(err("kafka://:9092/t"), UrlError::Host { found: String::new() });
        assert_eq!(err("kafka://u@h:9092/t"), UrlError::Host { found: "u@h".into() });
        assert_eq!(err("kafka://a..b:9092/t"), UrlError::Host { found: "a..b".into() });
        assert_eq!(err("kafka://[::1:9092/t"), UrlError::Host { found: "[::1:9092".into() });
        assert_eq!(err("kafka://[]:9092/t"), UrlError::Host { found: "[]:9092".into() });
        assert_eq!(err("kafka://[1::2::3]:9092/t"), UrlError::Host { found: "[1::2::3]:9092".into() });
        assert_eq!(err("kafka://[::1]x:9092/t"), UrlError::Host { found: "[::1]x:9092".into() });
    }

    #[test]
    fn a_missing_or_bad_port_is_refused() {
        assert_eq!(err("kafka://h/t"), UrlError::Port { found: String::new() });
        assert_eq!(err("kafka://h:/t"), UrlError::Port { found: String::new() });
        assert_eq!(err("kafka://[::1]/t"), UrlError::Port { found: String::new() });
        for port in ["0", "65536", "+80", "x", "-1", "99999999999"] {
            let text = format!("kafka://h:{port}/t");
            assert_eq!(err(&text), UrlError::Port { found: port.into() }, "{text}");
        }
        assert!(err("kafka://h/t").to_string().contains("9092"));
    }

    #[test]
    fn a_missing_topic_is_refused() {
        assert_eq!(err("kafka://h:1"), UrlError::MissingTopic);
        assert_eq!(err("kafka://h:1/"), UrlError::MissingTopic);
    }

    #[test]
    fn topics_follow_kafkas_rules() {
        let bad = |topic: &str, problem| {
            let text = format!("kafka://h:1/{topic}");
            assert_eq!(err(&text), UrlError::Topic { found: topic.into(), problem }, "{text}");
        };
        bad("a/b", TopicProblem::Character('/'));
        bad("t/", TopicProblem::Character('/'));
        bad("tick s", TopicProblem::Character(' '));
        bad("t?x=1", TopicProblem::Character('?'));
        bad("é", TopicProblem::Character('é'));
        bad(".", TopicProblem::Reserved);
        bad("..", TopicProblem::Reserved);
        bad(&"x".repeat(MAX_TOPIC_LEN + 1), TopicProblem::TooLong);
        let longest = "x".repeat(MAX_TOPIC_LEN);
        assert_eq!(KafkaUrl::parse(&format!("kafka://h:1/{longest}")).unwrap().topic(), longest);
    }

    #[test]
    fn errors_say_what_was_expected() {
        assert_eq!(err("file.csv").to_string(), "expected kafka://HOST:PORT/TOPIC, found \"file.csv\"");
        assert_eq!(
            err("kafka://h:1/a b").to_string(),
            "bad topic \"a b\": ' ' is not allowed (letters, digits, '.', '_' and '-' only)"
        );
    }
}
