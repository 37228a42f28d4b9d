//! A request body's shape checked before it is built: a JSON document is walked without
//! keeping anything, counting the items of every array and object, so that a body of millions
//! of tiny items (a 79 MB body of 2.5 million entities once took 5.1 GB to refuse) is refused
//! at the cost of its bytes, before a `serde_json::Value` or a tool's parameters are made.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Items an array or object of a request may hold: ten times the largest batch a tool takes
/// (1,000), so no valid call comes near it.
pub const MAX_ITEMS: usize = 10_000;

/// Why `body` is refused, or `None` when no array or object in it holds more than
/// `max_items` items (or it is not JSON at all: that is the parser's to say, with position).
pub fn problem(body: &[u8], max_items: usize) -> Option<String> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    match (Walk { max_items }).deserialize(&mut deserializer) {
        Ok(()) => None,
        Err(error) if error.is_data() => Some(error.to_string()),
        Err(_) => None,
    }
}

/// Walks one value, refusing a container past `max_items`.
#[derive(Clone, Copy)]
struct Walk {
    max_items: usize,
}

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let mut count = 0;
        while items.next_element_seed(self)?.is_some() {
            self.counted(&mut count, "an array of more than {} items")?;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        let mut count = 0;
        while entries.next_key::<IgnoredAny>()?.is_some() {
            entries.next_value_seed(self)?;
            self.counted(&mut count, "an object of more than {} members")?;
        }
        Ok(())
    }
}

impl Walk {
    /// Counts one more item, refusing it past `max_items` with `message` (its `{}` the limit).
    fn counted<E: serde::de::Error>(self, count: &mut usize, message: &str) -> Result<(), E> {
        *count += 1;
        if *count > self.max_items {
            return Err(E::custom(
                message.replace("{}", &self.max_items.to_string()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_past_the_limit_are_refused_at_any_depth() {
        assert_eq!(problem(br#"{"a": [1, 2, 3], "b": {"c": "d"}}"#, 3), None);
        let deep = br#"{"params": {"arguments": {"entities": [{}, {}, {}, {}]}}}"#;
        let refused = problem(deep, 3).unwrap();
        assert!(
            refused.starts_with("an array of more than 3 items"),
            "{refused}"
        );
        let wide = br#"{"a": 1, "b": 2, "c": 3, "d": 4}"#;
        assert!(
            problem(wide, 3)
                .unwrap()
                .contains("an object of more than 3")
        );
        // Not JSON: the parser that reads it says where.
        assert_eq!(problem(b"{\"a\": ", 3), None);
    }
}
