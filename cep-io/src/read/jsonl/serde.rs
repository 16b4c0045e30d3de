//! The general JSON-lines path: a `serde` visitor that deserializes one
//! line straight into an event (no intermediate `serde_json::Value`), with
//! the typing rules of LANGUAGE.md §1.

use super::*;
use crate::read::strings::{SHORT, pack};

/// The state of parsing one JSON line straight into an event.
pub(crate) struct RowCtx<'a> {
    pub(crate) schema: &'a mut Schema,
    pub(crate) fields: &'a mut Vec<Value>,
    pub(crate) keys: &'a mut Keys,
    pub(crate) new_keys: bool,
    pub(crate) strings: &'a mut StrCache,
    /// The line's text, to recover a number's spelling in rare cases.
    pub(crate) line: &'a [u8],
    /// Numbers visited so far (their order in the text).
    pub(crate) numbers: usize,
    pub(crate) ts: Option<i64>,
    pub(crate) ty: Option<Sym>,
    /// A bad value: the row's message (the serde error is a placeholder).
    pub(crate) error: Option<String>,
    pub(crate) default_ty: Sym,
}

impl<'a> RowCtx<'a> {
    /// The state of reading `line` into `fields` (cleared by the caller).
    pub(crate) fn new(
        schema: &'a mut Schema,
        fields: &'a mut Vec<Value>,
        keys: &'a mut Keys,
        new_keys: bool,
        strings: &'a mut StrCache,
        line: &'a [u8],
        default_ty: Sym,
    ) -> RowCtx<'a> {
        RowCtx {
            schema,
            fields,
            keys,
            new_keys,
            strings,
            line,
            numbers: 0,
            ts: None,
            ty: None,
            error: None,
            default_ty,
        }
    }

    pub(crate) fn fail<E: de::Error>(&mut self, message: String) -> E {
        self.error = Some(message);
        E::custom("bad value")
    }

    /// The field `key` (UTF-8) names; `None` when it is new and new keys
    /// are not registered. (Keys are looked up as bytes, so that the simple
    /// path need not check its keys as UTF-8 first: that was a fifth of its
    /// time.)
    pub(crate) fn field_id(&mut self, key: &[u8]) -> Option<FieldId> {
        if let Some(&id) = self.keys.ids.get(key) {
            return Some(id);
        }
        if !self.new_keys {
            return None;
        }
        let id = self.schema.field(std::str::from_utf8(key).ok()?);
        self.keys.ids.insert(key.into(), id);
        Some(id)
    }

    /// The target of the value of key `key` (UTF-8).
    pub(crate) fn target(&mut self, key: &[u8]) -> Target {
        match key {
            b"ts" => Target::Ts,
            b"type" => Target::Type,
            name => self.field_id(name).map_or(Target::Drop, Target::Field),
        }
    }

    /// [`target`](Self::target) of the key at place `place` of a simple
    /// object. Lines of one producer list their keys in one order, so a key
    /// is first compared with the one at its place in the last simple
    /// object — one integer compare — and the map is looked up only when
    /// they differ.
    #[inline]
    pub(crate) fn target_at(&mut self, place: usize, key: &[u8]) -> Target {
        if key.is_empty() || key.len() > SHORT || place >= PLACES {
            return self.target(key);
        }
        let packed = pack(key);
        if let Some(&(k, target)) = self.keys.by_place.get(place)
            && k == packed
        {
            return target;
        }
        let target = self.target(key);
        let by_place = &mut self.keys.by_place;
        if place < by_place.len() {
            by_place[place] = (packed, target);
        } else if place == by_place.len() {
            by_place.push((packed, target));
        }
        target
    }

    /// Stores a scalar value in its target, or says why it does not fit.
    pub(crate) fn store(&mut self, target: Target, v: Value) -> Result<(), Misfit> {
        match target {
            Target::Ts => match v {
                Value::Int(t) => self.ts = Some(t),
                Value::Null => self.ts = None,
                _ => return Err(Misfit::Ts),
            },
            Target::Type => match v {
                Value::Str(s) => self.ty = if s == self.strings.empty { None } else { Some(s) },
                Value::Null => self.ty = Some(self.default_ty),
                _ => return Err(Misfit::Type),
            },
            Target::Field(id) => {
                let slot = id as usize;
                match self.fields.get_mut(slot) {
                    Some(field) => *field = v,
                    // Past the last field stored, NULL is what is there.
                    None if v.is_null() => {}
                    None => {
                        self.fields.resize(slot, Value::Null);
                        self.fields.push(v);
                    }
                }
            }
            Target::Drop => {}
        }
        Ok(())
    }
}

/// A value its target cannot take (a bad row).
pub(crate) enum Misfit {
    /// `ts` takes an integer or NULL.
    Ts,
    /// `type` takes a string or NULL.
    Type,
}

impl<'de> DeserializeSeed<'de> for &mut RowCtx<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut RowCtx<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let target = self.target(key.0.as_bytes());
            map.next_value_seed(ValueSeed { ctx: &mut *self, target, key: &key.0 })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.fail("expected a JSON object, found an array".to_owned()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.fail("expected a JSON object, found a bool".to_owned()))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.fail("expected a JSON object, found a number".to_owned()))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.fail("expected a JSON object, found a number".to_owned()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.fail("expected a JSON object, found a number".to_owned()))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.fail("expected a JSON object, found a string".to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(self.fail("expected a JSON object, found null".to_owned()))
    }
}

/// An object key, borrowed from the line when it has no escapes.
pub(crate) struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Target {
    Ts,
    Type,
    Field(FieldId),
    /// A field not kept ([`Reader::fix_fields`]): its value is only checked.
    Drop,
}

/// Reads one value of an object into its target.
pub(crate) struct ValueSeed<'c, 'a, 'k> {
    pub(crate) ctx: &'c mut RowCtx<'a>,
    pub(crate) target: Target,
    /// The key, for messages.
    pub(crate) key: &'k str,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// The spelling of the `n`-th number (0-based) of a valid JSON text.
pub(crate) fn nth_number(text: &[u8], n: usize) -> Option<&[u8]> {
    let mut i = 0;
    let mut count = 0;
    let mut in_str = false;
    while i < text.len() {
        let b = text[i];
        if in_str {
            match b {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else if b == b'"' {
            in_str = true;
        } else if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while i < text.len() && matches!(text[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                i += 1;
            }
            if count == n {
                return Some(&text[start..i]);
            }
            count += 1;
            continue;
        }
        i += 1;
    }
    None
}

impl ValueSeed<'_, '_, '_> {
    pub(crate) fn name(&self) -> &str {
        self.key
    }

    /// Stores a scalar value; `what` describes it for messages.
    pub(crate) fn put<E: de::Error>(self, v: Value, what: &dyn Fn() -> String) -> Result<(), E> {
        match self.ctx.store(self.target, v) {
            Ok(()) => Ok(()),
            Err(Misfit::Ts) => Err(self.ctx.fail(format!("`ts` is not an integer: {}", what()))),
            Err(Misfit::Type) => Err(self.ctx.fail(format!("`type` is not a string: {}", what()))),
        }
    }

    pub(crate) fn number_text(&mut self, index: usize) -> String {
        nth_number(self.ctx.line, index).map_or_else(|| "?".to_owned(), show)
    }

    pub(crate) fn too_big<E: de::Error>(mut self, index: usize) -> Result<(), E> {
        let text = self.number_text(index);
        let message = match self.target {
            Target::Ts => format!("`ts` `{text}` does not fit in 64 bits"),
            _ => format!("integer `{text}` in field `{}` does not fit in 64 bits", self.name()),
        };
        Err(self.ctx.fail(message))
    }

    pub(crate) fn next_number(&mut self) -> usize {
        let i = self.ctx.numbers;
        self.ctx.numbers += 1;
        i
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, bool, string or null")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<(), E> {
        self.put(Value::Bool(b), &|| format!("`{b}`"))
    }

    fn visit_i64<E: de::Error>(mut self, i: i64) -> Result<(), E> {
        self.next_number();
        self.put(Value::Int(i), &|| format!("`{i}`"))
    }

    fn visit_u64<E: de::Error>(mut self, u: u64) -> Result<(), E> {
        let index = self.next_number();
        match i64::try_from(u) {
            Ok(i) => self.put(Value::Int(i), &|| format!("`{i}`")),
            Err(_) => self.too_big(index),
        }
    }

    fn visit_f64<E: de::Error>(mut self, f: f64) -> Result<(), E> {
        let index = self.next_number();
        // serde_json reads an integer beyond i64/u64 as a float, and `-0` as
        // the float -0.0 (to keep its sign): look at its spelling (rare, so
        // only for integral floats this large, and for negative zero).
        let maybe_int = f.fract() == 0.0 && (f.abs() >= 9.2e18 || f == 0.0 && f.is_sign_negative());
        if maybe_int || matches!(self.target, Target::Ts) {
            let text = nth_number(self.ctx.line, index).unwrap_or(b"");
            let is_int = !text.is_empty() && !text.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
            if is_int && f == 0.0 {
                // `-0` is an integer literal: the int 0, as in CSV.
                return self.put(Value::Int(0), &|| "`0`".to_owned());
            }
            if is_int {
                return self.too_big(index);
            }
            if matches!(self.target, Target::Ts) {
                let text = show(text);
                return Err(self.ctx.fail(format!("`ts` is not an integer: `{text}`")));
            }
        }
        if !f.is_finite() {
            let message = format!("non-finite number in field `{}`", self.name());
            return Err(self.ctx.fail(message));
        }
        self.put(Value::Float(f), &|| format!("`{f:?}`"))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        match self.target {
            Target::Ts => {
                let message = format!("`ts` is not an integer: `\"{}\"`", show(s.as_bytes()));
                Err(self.ctx.fail(message))
            }
            Target::Drop => Ok(()),
            _ => match self.ctx.strings.intern(s.as_bytes()) {
                Some(sym) => self.put(Value::Str(sym), &|| String::new()),
                None => Err(self.ctx.fail("invalid UTF-8 in a string".to_owned())),
            },
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.put(Value::Null, &|| "`null`".to_owned())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        let message = format!("field `{}`: nested values are not supported", self.name());
        Err(self.ctx.fail(message))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        let message = format!("field `{}`: nested values are not supported", self.name());
        Err(self.ctx.fail(message))
    }
}
