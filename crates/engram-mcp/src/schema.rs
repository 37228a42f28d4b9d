//! Tool schemas every client accepts. schemars writes JSON Schema 2020-12 with habits strict
//! validators (Ajv in strict mode, as in the MCP Inspector; some model providers' tool-schema
//! checks) refuse or warn about: formats of its own (`uint32`, `int64`, `double`), nullable
//! values as type arrays (`["string", "null"]`), and `"default": null`. Two rewrites remove
//! them, losing no meaning:
//! - [`model_facing`], for inputs: an optional value is one whose property is not required
//!   (inputs also accept `null` for it), so the null alternatives go;
//! - [`output`], for results: every key the catalog names is required and may be `null`
//!   (`compact`'s rule in `engram-domain`), so a nullable value becomes
//!   `"anyOf": [{"type": "string"}, {"type": "null"}]`, the form every validator reads without
//!   a warning.
//!
//! An unsigned integer keeps its `minimum: 0`. `$schema` goes too: 2020-12 is MCP's default
//! dialect (2025-11-25, "JSON Schema Usage").

use serde_json::{Map, Value};

/// The `format`s of JSON Schema 2020-12 itself (section 7.3); any other is dropped.
pub(crate) const STANDARD_FORMATS: &[&str] = &[
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

/// What becomes of a schema's `null` alternatives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nulls {
    /// Dropped: the value is optional instead (inputs).
    Drop,
    /// Kept, as an `anyOf` alternative `{"type": "null"}` (outputs).
    Keep,
}

/// An output schema: `schema` made portable, with `null` allowed where the type allows it.
pub fn output(schema: &Map<String, Value>) -> Map<String, Value> {
    portable(schema, Nulls::Keep)
}

/// `schema` rewritten as described in the module documentation.
fn portable(schema: &Map<String, Value>, nulls: Nulls) -> Map<String, Value> {
    let mut schema = Value::Object(schema.clone());
    rewrite(&mut schema, nulls);
    let Value::Object(mut schema) = schema else {
        unreachable!("an object stays an object")
    };
    schema.remove("$schema");
    schema
}

/// An input schema as a model reads it: portable, optional values without their `null`
/// alternative, with every `$ref` replaced by its
/// definition (tool inputs are small and not recursive, so nothing repeats), and without
/// the documentation of the Rust types behind them (the property's own description says
/// what the model needs), defaults that are empty lists, or `additionalProperties: false`
/// (a model sends the properties it is shown; the server refuses any other, naming it:
/// 1,200 bytes of every tool list that told a model nothing).
pub fn model_facing(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = portable(schema, Nulls::Drop);
    let definitions = schema.remove("$defs").unwrap_or(Value::Null);
    let mut schema = Value::Object(schema);
    inline(&mut schema, &definitions, 0);
    let Value::Object(schema) = schema else {
        unreachable!("an object stays an object")
    };
    schema
}

/// Replaces `{"$ref": "#/$defs/Name", …}` by the definition (its description left out) and
/// the reference's own keywords; definitions may refer to each other, up to a depth of 8.
fn inline(value: &mut Value, definitions: &Value, depth: usize) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
                && let Some(Value::Object(definition)) = definitions.get(name)
                && depth < 8
            {
                let definition = definition.clone();
                object.remove("$ref");
                for (key, value) in definition {
                    if key != "description" {
                        object.entry(key).or_insert(value);
                    }
                }
                let mut inlined = Value::Object(std::mem::take(object));
                inline(&mut inlined, definitions, depth + 1);
                *value = inlined;
                return;
            }
            if object.get("default") == Some(&Value::Array(Vec::new())) {
                object.remove("default");
            }
            if object.get("additionalProperties") == Some(&Value::Bool(false)) {
                object.remove("additionalProperties");
            }
            // ", 1–1,000" beside `"minimum": 1, "maximum": 1000` says it twice: the schema's is
            // kept.
            if let (Some(minimum), Some(maximum)) = (
                object.get("minimum").and_then(Value::as_u64),
                object.get("maximum").and_then(Value::as_u64),
            ) && let Some(Value::String(description)) = object.get_mut("description")
            {
                let range = format!(", {}–{}", thousands(minimum), thousands(maximum));
                *description = description.replacen(&range, "", 1);
            }
            // "… Default 20." beside `"default": 20` says it twice: the schema's is kept.
            if object.contains_key("default")
                && let Some(Value::String(description)) = object.get_mut("description")
                && let Some(at) = description.rfind(" Default ")
                && description.ends_with('.')
            {
                description.truncate(at);
            }
            for child in object.values_mut() {
                inline(child, definitions, depth);
            }
        }
        Value::Array(items) => {
            for item in items {
                inline(item, definitions, depth);
            }
        }
        _ => {}
    }
}

fn rewrite(value: &mut Value, nulls: Nulls) {
    match value {
        Value::Object(object) => {
            match nulls {
                Nulls::Drop => drop_nulls(object),
                Nulls::Keep => nulls_as_alternatives(object),
            }
            rewrite_object(object);
            object.values_mut().for_each(|child| rewrite(child, nulls));
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite(item, nulls)),
        _ => {}
    }
}

/// Keywords that describe a value rather than constrain its type: they stay beside `anyOf`.
const ANNOTATIONS: &[&str] = &["description", "title", "default", "examples", "deprecated"];

/// `"type": ["string", "null"], "format": …` → `"anyOf": [{"type": "string", "format": …},
/// {"type": "null"}]`; an enumeration's `null` value becomes the `null` alternative too.
fn nulls_as_alternatives(object: &mut Map<String, Value>) {
    let nullable_type = matches!(object.get("type"), Some(Value::Array(types))
        if types.iter().any(is_null_name));
    let nullable_enum = matches!(object.get("enum"), Some(Value::Array(values))
        if values.iter().any(Value::is_null));
    if !nullable_type && !nullable_enum {
        return;
    }
    let (annotations, mut value): (Map<String, Value>, Map<String, Value>) =
        (std::mem::take(object).into_iter())
            .partition(|(key, _)| ANNOTATIONS.contains(&key.as_str()));
    *object = annotations;
    if let Some(Value::Array(types)) = value.get_mut("type") {
        types.retain(|t| !is_null_name(t));
        if types.len() == 1 {
            let only = types.remove(0);
            value.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = value.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    object.insert(
        "anyOf".into(),
        Value::Array(vec![
            Value::Object(value),
            serde_json::json!({"type": "null"}),
        ]),
    );
}

fn is_null_name(type_name: &Value) -> bool {
    type_name == "null"
}

/// `"type": ["string", "null"]` → `"type": "string"`; `"anyOf": [X, {"type": "null"}]` → X.
fn drop_nulls(object: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| !is_null_name(t)).cloned().collect();
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
}

/// What both rewrites do.
fn rewrite_object(object: &mut Map<String, Value>) {
    // An enumeration as `oneOf` of documented constants → `enum`: the variants' Rust
    // documentation is not for the model, and `enum` is what every validator knows.
    if let Some(Value::Array(alternatives)) = object.get("oneOf")
        && !alternatives.is_empty()
        && alternatives
            .iter()
            .all(|a| a.get("const").is_some_and(Value::is_string))
    {
        let values: Vec<Value> = alternatives.iter().map(|a| a["const"].clone()).collect();
        object.remove("oneOf");
        object.insert("type".into(), Value::from("string"));
        object.insert("enum".into(), Value::Array(values));
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

/// `n` as the descriptions write it: "1,000", "36,500", "8".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::portability::unportable_parts;
    use serde_json::json;

    fn rewritten(schema: Value) -> Value {
        Value::Object(portable(schema.as_object().unwrap(), Nulls::Drop))
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
    fn enumerations_become_enums_and_inputs_are_inlined() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"description": "How.", "$ref": "#/$defs/Mode", "default": "a"},
                "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "default": []}
            },
            "$defs": {
                "Mode": {"description": "Rust docs.", "oneOf": [
                    {"description": "A.", "type": "string", "const": "a"},
                    {"description": "B.", "type": "string", "const": "b"}
                ]},
                "Item": {"description": "Rust docs.", "type": "object",
                         "properties": {"mode": {"$ref": "#/$defs/Mode"}}}
            }
        });
        let inlined = Value::Object(model_facing(schema.as_object().unwrap()));
        assert_eq!(
            inlined,
            json!({
                "type": "object",
                "properties": {
                    "mode": {"description": "How.", "type": "string", "enum": ["a", "b"],
                             "default": "a"},
                    "items": {"type": "array", "items": {"type": "object", "properties": {
                        "mode": {"type": "string", "enum": ["a", "b"]}}}}
                }
            })
        );
        let portable = Value::Object(output(schema.as_object().unwrap()));
        assert_eq!(
            portable["$defs"]["Mode"],
            json!({"description": "Rust docs.", "type": "string", "enum": ["a", "b"]})
        );
    }

    #[test]
    fn outputs_keep_null_as_an_alternative() {
        let schema = Value::Object(output(
            json!({
                "type": "object",
                "properties": {
                    "summary": {"type": ["string", "null"], "description": "Its summary."},
                    "at": {"type": ["string", "null"], "format": "date-time"},
                    "label": {"anyOf": [{"$ref": "#/$defs/Label"}, {"type": "null"}]},
                    "count": {"type": "integer", "format": "uint64", "minimum": 0}
                },
                "required": ["summary", "at", "label", "count"],
                "$defs": {"Label": {"type": "string"}}
            })
            .as_object()
            .unwrap(),
        ));
        assert_eq!(
            schema["properties"],
            json!({
                "summary": {"description": "Its summary.",
                            "anyOf": [{"type": "string"}, {"type": "null"}]},
                "at": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
                "label": {"anyOf": [{"$ref": "#/$defs/Label"}, {"type": "null"}]},
                "count": {"type": "integer", "minimum": 0}
            })
        );
        assert!(unportable_parts(&schema).is_empty());
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        assert!(
            validator.is_valid(&json!({"summary": null, "at": null, "label": null,
                                           "count": 1}))
        );
        assert!(!validator.is_valid(&json!({"at": null, "label": null, "count": 1})));
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
