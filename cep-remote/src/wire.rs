//! The protocol's JSON bodies (LANGUAGE.md §8): the request
//! `{"calls":[{"id":17,"args":[235000001,48.38,-4.49,1000]}]}` and the reply
//! `{"results":[{"id":17,"value":true}]}`.
//!
//! Values are written by hand-rolled `Serialize` wrappers rather than
//! `Value`'s own derive, whose tagged shape is for checkpoints, not for a
//! service written in any language.

use cep_core::Value;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

/// One call of a request: the client's wire id and the arguments.
#[derive(Debug)]
pub(crate) struct WireCall<'a> {
    pub id: u64,
    pub args: &'a [Value],
}

/// The request body for `calls`.
pub(crate) fn encode_request(calls: &[WireCall<'_>]) -> Vec<u8> {
    let body = Body(calls);
    // Serialising plain numbers, strings and bools into a Vec cannot fail;
    // an empty body would come back as a protocol error, never a panic.
    serde_json::to_vec(&body).unwrap_or_default()
}

struct Body<'a, 'b>(&'a [WireCall<'b>]);

impl Serialize for Body<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("calls", &Calls(self.0))?;
        map.end()
    }
}

struct Calls<'a, 'b>(&'a [WireCall<'b>]);

impl Serialize for Calls<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for call in self.0 {
            seq.serialize_element(&OneCall(call))?;
        }
        seq.end()
    }
}

struct OneCall<'a, 'b>(&'a WireCall<'b>);

impl Serialize for OneCall<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("id", &self.0.id)?;
        map.serialize_entry("args", &Args(self.0.args))?;
        map.end()
    }
}

struct Args<'a>(&'a [Value]);

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            seq.serialize_element(&Arg(v))?;
        }
        seq.end()
    }
}

/// A value as a JSON scalar. A non-finite float (which `Value` does not
/// hold, but nothing enforces) becomes `null`, JSON having no such number.
struct Arg<'a>(&'a Value);

impl Serialize for Arg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => s.serialize_unit(),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Value::Float(_) => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Str(sym) => s.serialize_str(sym.as_str()),
        }
    }
}

#[derive(Deserialize)]
struct Reply {
    results: Vec<Result1>,
}

#[derive(Deserialize)]
struct Result1 {
    id: u64,
    value: bool,
}

/// The `(id, value)` pairs of a reply body, or why it is not the
/// protocol's. Ids are not checked here: the caller knows which it sent.
pub(crate) fn decode_reply(body: &[u8]) -> Result<Vec<(u64, bool)>, String> {
    let reply: Reply = serde_json::from_slice(body).map_err(|e| format!("bad reply body: {e}"))?;
    Ok(reply.results.into_iter().map(|r| (r.id, r.value)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cep_core::Sym;

    #[test]
    fn encodes_the_protocols_request() {
        let a = [Value::Int(235000001), Value::Float(48.38), Value::Float(-4.49), Value::Int(1000)];
        let b = [Value::Null, Value::Bool(true), Value::Str(Sym::new("a\"b")), Value::Float(f64::NAN)];
        let body = encode_request(&[WireCall { id: 17, args: &a }, WireCall { id: 18, args: &b }]);
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            r#"{"calls":[{"id":17,"args":[235000001,48.38,-4.49,1000]},{"id":18,"args":[null,true,"a\"b",null]}]}"#
        );
    }

    #[test]
    fn decodes_replies_and_refuses_others() {
        assert_eq!(
            decode_reply(br#"{"results":[{"id":2,"value":false},{"id":1,"value":true}]}"#),
            Ok(vec![(2, false), (1, true)])
        );
        for bad in
            [&b"{"[..], b"[]", br#"{"results":[{"id":1,"value":1}]}"#, br#"{"results":[{"id":-1,"value":true}]}"#, b""]
        {
            assert!(decode_reply(bad).is_err());
        }
    }
}
