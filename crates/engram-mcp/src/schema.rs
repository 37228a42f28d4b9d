//! Tool schemas every client accepts. schemars writes JSON Schema 2020-12 with habits strict
//! validators (Ajv in strict mode, as in the MCP Inspector; some model providers' tool-schema
//! checks) refuse or warn about: formats of its own (`uint32`, `int64`, `double`), nullable
//! values as type arrays (`["string", "null"]`) or as `anyOf` with `{"type": "null"}`, and
//! `"default": null`. [`portable`] rewrites a schema without them. No meaning is lost: an
//! optional value is one whose property is not required (outputs leave absent values out;
//! inputs also accept `null` for them), and an unsigned integer keeps its `minimum: 0`.
//! `$schema` goes too: 2020-12 is MCP's default dialect (2025-11-25, "JSON Schema Usage").

use serde_json::{Map, Value};

/// The `format`s of JSON Schema 2020-12 itself (section 7.3); any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` rewritten as described in the module documentation.
pub fn portable(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = Value::Object(schema.clone());
    rewrite(&mut schema);
    let Value::Object(mut schema) = schema else {
        unreachable!("an object stays an object")
    };
    schema.remove("$schema");
    schema
}

fn rewrite(value: &mut Value) {
    match value {
        Value::Object(object) => {
            rewrite_object(object);
            object.values_mut().for_each(rewrite);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

fn rewrite_object(object: &mut Map<String, Value>) {
    // `"type": ["string", "null"]` → `"type": "string"`.
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            object.insert("type".into(), kept[0].clone());
        } else if kept.len() < types.len() {
            object.insert("type".into(), Value::Array(kept));
        }
    }
    // `"anyOf": [X, {"type": "null"}]` → X's keywords beside the others.
    if let Some(Value::Array(alternatives)) = object.get("anyOf") {
        let kept: Vec<Value> = alternatives
            .iter()
            .filter(|a| a.get("type") != Some(&Value::from("null")))
            .cloned()
            .collect();
        if kept.len() == 1 && kept.len() < alternatives.len() {
            object.remove("anyOf");
            if let Value::Object(only) = &kept[0] {
                for (key, value) in only {
                    object.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
    }
    // A `"const": null` / `"enum"` with null among the values of an optional enum.
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    if let Some(Value::String(format)) = object.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        if format.starts_with("uint") && !object.contains_key("minimum") {
            object.insert("minimum".into(), Value::from(0));
        }
        object.remove("format");
    }
}

/// Whether `schema` holds anything [`portable`] removes (for tests).
pub fn unportable_parts(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, "#", &mut found);
    found
}

fn walk(value: &Value, at: &str, found: &mut Vec<String>) {
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
            if object.get("type") == Some(&Value::from("null")) {
                found.push(format!("{at}: a null type"));
            }
            if object.contains_key("nullable") {
                found.push(format!("{at}: nullable"));
            }
            for (key, child) in object {
                walk(child, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, &format!("{at}/{index}"), found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rewritten(schema: Value) -> Value {
        Value::Object(portable(schema.as_object().unwrap()))
    }

    #[test]
    fn nullable_values_become_optional_values_of_one_type() {
        let schema = rewritten(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "summary": {"type": ["string", "null"], "default": null},
                "source": {"anyOf": [{"$ref": "#/$defs/Source"}, {"type": "null"}],
                           "description": "Who wrote it."},
                "count": {"type": "integer", "format": "uint64", "minimum": 0},
                "limit": {"type": "integer", "format": "uint32"},
                "ordinal": {"type": "integer", "format": "int64"},
                "since": {"type": ["string", "null"], "format": "date-time"}
            }
        }));
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string"},
                    "source": {"$ref": "#/$defs/Source", "description": "Who wrote it."},
                    "count": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 0},
                    "ordinal": {"type": "integer"},
                    "since": {"type": "string", "format": "date-time"}
                }
            })
        );
        assert!(unportable_parts(&schema).is_empty());
    }

    #[test]
    fn what_is_unportable_is_found() {
        let parts = unportable_parts(&json!({
            "properties": {"a": {"type": ["string", "null"]}, "b": {"format": "double"}}
        }));
        assert_eq!(
            parts,
            vec![
                "#/properties/a: a type array".to_string(),
                "#/properties/b: format \"double\"".to_string()
            ]
        );
    }
}
