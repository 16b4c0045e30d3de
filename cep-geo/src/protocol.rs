//! The remote-predicate protocol of LANGUAGE.md §8, for
//! `near(mmsi int, lat float, lon float, ts int)`: the request body
//! `{"calls":[{"id":17,"args":[235000001,48.38,-4.49,1000]},…]}` and the
//! reply `{"results":[{"id":17,"value":true},…]}`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::index::{QueryError, check_point};

/// The arguments of one call of `near`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearArgs {
    /// The asking vessel (its own positions never count).
    pub mmsi: i64,
    /// Latitude, degrees.
    pub lat: f64,
    /// Longitude, degrees.
    pub lon: f64,
    /// Event time, milliseconds.
    pub ts: i64,
}

/// One call: the engine's id and the arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearCall {
    /// Echoed in the reply.
    pub id: u64,
    /// The arguments.
    pub args: NearArgs,
}

/// Why a request body is not one the service can answer (HTTP 400).
#[derive(Clone, Debug, PartialEq)]
pub enum ProtocolError {
    /// Not JSON, or not `{"calls":[{"id":…,"args":[…]},…]}`.
    Json(String),
    /// A call without four arguments.
    Arity {
        /// The call's id.
        id: u64,
        /// How many arguments it had.
        got: usize,
    },
    /// An argument of the wrong type (`int` takes a JSON integer, `float`
    /// any JSON number).
    Type {
        /// The call's id.
        id: u64,
        /// The parameter's name.
        param: &'static str,
        /// Its declared type.
        expected: &'static str,
        /// The argument, as JSON.
        got: String,
    },
    /// Coordinates out of range.
    Query {
        /// The call's id.
        id: u64,
        /// What is wrong.
        error: QueryError,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Json(e) => write!(f, "bad request body: {e}"),
            ProtocolError::Arity { id, got } => {
                write!(f, "call {id}: near(mmsi int, lat float, lon float, ts int) takes 4 arguments, not {got}")
            }
            ProtocolError::Type { id, param, expected, got } => {
                write!(f, "call {id}: argument `{param}` must be {expected}, not {got}")
            }
            ProtocolError::Query { id, error } => write!(f, "call {id}: {error}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

#[derive(Deserialize)]
struct RawRequest {
    calls: Vec<RawCall>,
}

#[derive(Deserialize)]
struct RawCall {
    id: u64,
    args: Vec<Value>,
}

/// Reads a request body into calls, checking each call's arity, types and
/// coordinates. A body that is not the protocol's, or whose calls are all
/// bad, is an error (the first call's). A bad call among good ones is left
/// out: its id gets no result, so that the client fails that call alone
/// rather than every call batched with it (a `null` argument, or a
/// coordinate AIS uses for "not available", must not sink its neighbours).
pub fn parse_request(body: &[u8]) -> Result<Vec<NearCall>, ProtocolError> {
    let raw: RawRequest = serde_json::from_slice(body).map_err(|e| ProtocolError::Json(e.to_string()))?;
    let (mut calls, mut first_error) = (Vec::with_capacity(raw.calls.len()), None);
    for call in raw.calls {
        match parse_call(call) {
            Ok(c) => calls.push(c),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if calls.is_empty() => Err(e),
        _ => Ok(calls),
    }
}

fn parse_call(call: RawCall) -> Result<NearCall, ProtocolError> {
    let id = call.id;
    let [mmsi, lat, lon, ts] = call.args.as_slice() else {
        return Err(ProtocolError::Arity { id, got: call.args.len() });
    };
    let wrong = |param, expected, v: &Value| ProtocolError::Type { id, param, expected, got: v.to_string() };
    let int = |param, v: &Value| v.as_i64().ok_or_else(|| wrong(param, "an integer", v));
    let float = |param, v: &Value| v.as_f64().ok_or_else(|| wrong(param, "a number", v));
    let args =
        NearArgs { mmsi: int("mmsi", mmsi)?, lat: float("lat", lat)?, lon: float("lon", lon)?, ts: int("ts", ts)? };
    check_point(args.lat, args.lon).map_err(|error| ProtocolError::Query { id, error })?;
    Ok(NearCall { id, args })
}

#[derive(Serialize)]
struct RawResult {
    id: u64,
    value: bool,
}

#[derive(Serialize)]
struct RawResponse {
    results: Vec<RawResult>,
}

/// The reply body for `(id, value)` pairs.
pub fn write_response(results: impl IntoIterator<Item = (u64, bool)>) -> Vec<u8> {
    let results = results.into_iter().map(|(id, value)| RawResult { id, value }).collect();
    // Serialising plain structs of numbers and bools cannot fail; an empty
    // reply would be a protocol error at the client, never a panic here.
    serde_json::to_vec(&RawResponse { results }).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_calls_and_writes_results() {
        let body = br#"{"calls":[{"id":17,"args":[235000001,48.38,-4.49,1000]},{"id":18,"args":[1,48,-4,2]}]}"#;
        let calls = parse_request(body).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].args, NearArgs { mmsi: 235000001, lat: 48.38, lon: -4.49, ts: 1000 });
        assert_eq!(calls[1].args.lat, 48.0);
        let out = write_response([(17, true), (18, false)]);
        assert_eq!(out, br#"{"results":[{"id":17,"value":true},{"id":18,"value":false}]}"#);
    }

    #[test]
    fn refuses_bad_bodies() {
        assert!(matches!(parse_request(b"{"), Err(ProtocolError::Json(_))));
        assert!(matches!(parse_request(br#"{"calls":3}"#), Err(ProtocolError::Json(_))));
        assert!(matches!(
            parse_request(br#"{"calls":[{"id":1,"args":[1,2,3]}]}"#),
            Err(ProtocolError::Arity { id: 1, got: 3 })
        ));
        let e = parse_request(br#"{"calls":[{"id":2,"args":[1.5,2,3,4]}]}"#).unwrap_err();
        assert!(matches!(e, ProtocolError::Type { param: "mmsi", .. }), "{e}");
        let e = parse_request(br#"{"calls":[{"id":2,"args":[1,"x",3,4]}]}"#).unwrap_err();
        assert!(matches!(e, ProtocolError::Type { param: "lat", .. }), "{e}");
        let e = parse_request(br#"{"calls":[{"id":2,"args":[1,91,3,4]}]}"#).unwrap_err();
        assert!(matches!(e, ProtocolError::Query { .. }), "{e}");
        // Among good calls, a bad one is left out (it gets no result).
        let calls = parse_request(br#"{"calls":[{"id":1,"args":[1,48.4,-4.5,9]},{"id":2,"args":[1,null,3,4]},{"id":3,"args":[2,48.4,-4.5,9]}]}"#)
            .unwrap();
        assert_eq!(calls.iter().map(|c| c.id).collect::<Vec<_>>(), [1, 3]);
    }
}
