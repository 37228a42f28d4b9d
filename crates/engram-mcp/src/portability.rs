//! What makes a published schema unportable, found for tests (engram-mcp's own and the
//! binary's golden `tools/list` test, feature `testing`): the rewrites of [`crate::schema`]
//! remove it all.

use serde_json::Value;

use crate::schema::STANDARD_FORMATS;

/// Where `schema` holds anything the rewrites remove, by JSON pointer: a `null` type is
/// portable only as an alternative of `anyOf`.
pub fn unportable_parts(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, "#", false, &mut found);
    found
}

fn walk(value: &Value, at: &str, alternative: bool, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if matches!(object.get("type"), Some(Value::Array(_))) {
                found.push(format!("{at}: a type array"));
            }
            if let Some(Value::String(format)) = object.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                found.push(format!("{at}: format {format:?}"));
            }
            if object.get("type") == Some(&Value::from("null")) && !alternative {
                found.push(format!("{at}: a null type"));
            }
            if object.contains_key("nullable") {
                found.push(format!("{at}: nullable"));
            }
            for (key, child) in object {
                if key == "anyOf"
                    && let Value::Array(alternatives) = child
                {
                    for (index, item) in alternatives.iter().enumerate() {
                        walk(item, &format!("{at}/anyOf/{index}"), true, found);
                    }
                } else {
                    walk(child, &format!("{at}/{key}"), false, found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, &format!("{at}/{index}"), false, found);
            }
        }
        _ => {}
    }
}
