//! Tool arguments that fail to deserialize come back naming the argument: its path, the type
//! it needs and the value given (``invalid argument `depth`: expected a non-negative integer,
//! got "two"``), as a tool error (`isError: true`) the model can correct, as the MCP
//! specification asks of input validation errors (2025-11-25, "Error Handling").
//!
//! [`parse`] keeps serde's path to the failing value with `serde_path_to_error`, and says
//! what is wrong there from the parameters' own JSON Schema (the one `tools/list` publishes):
//! the type it needs, the values it allows, the required argument it lacks or the arguments
//! it takes. Nothing is read from serde's wording; a failure the schema does not explain
//! passes serde's message on as it is.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use serde_path_to_error::Segment;

/// `arguments` as `P`, or a message naming the argument that does not fit, read from
/// `schema`: the tool's input schema as `tools/list` publishes it (without one, serde's
/// message at the path).
pub fn parse<P: DeserializeOwned>(
    arguments: &Value,
    schema: Option<&Map<String, Value>>,
) -> Result<P, String> {
    if let Some(error) = schema.and_then(|schema| times_out_of_range(schema, arguments)) {
        return Err(error);
    }
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let path: Vec<&Segment> = error.path().iter().collect();
        let schema = schema.map(|schema| Value::Object(schema.clone()));
        (schema.as_ref())
            .and_then(|schema| describe(&path, schema, arguments))
            .unwrap_or_else(|| format!("invalid argument `{}`: {}", shown(&path), error.inner()))
    })
}

/// [`time_out_of_range`] over a tool's `arguments` by its input schema, read in place (no
/// copy of the schema on every call).
fn times_out_of_range(schema: &Map<String, Value>, arguments: &Value) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    (arguments.as_object()?.iter())
        .find_map(|(key, inner)| time_out_of_range(properties.get(key)?, inner, key))
}

/// The first time in `value` (a string where `schema` says `date-time`, at any depth) that is
/// an RFC 3339 time outside the years 1–9999, as an error naming its path (`at` so far).
fn time_out_of_range(schema: &Value, value: &Value, at: &str) -> Option<String> {
    use chrono::Datelike;
    let schema = variant(schema, value);
    match value {
        Value::String(text)
            if schema.get("format").and_then(Value::as_str) == Some("date-time") =>
        {
            let time = serde_json::from_value::<engram_domain::Timestamp>(value.clone()).ok()?;
            (!(1..=9999).contains(&time.year())).then(|| {
                format!(
                    "invalid argument `{at}`: expected an RFC 3339 time such as \
                     \"2026-03-02T09:00:00Z\" in the years 1–9999, got {text:?}"
                )
            })
        }
        Value::Object(object) => {
            let properties = schema.get("properties")?.as_object()?;
            (object.iter()).find_map(|(key, inner)| {
                time_out_of_range(properties.get(key)?, inner, &joined(at, key))
            })
        }
        Value::Array(items) => {
            let schema = schema.get("items")?;
            (items.iter().enumerate()).find_map(|(index, inner)| {
                time_out_of_range(schema, inner, &format!("{at}[{index}]"))
            })
        }
        _ => None,
    }
}

/// What is wrong at `path` in `arguments`, by `schema`; `None` when the schema does not say.
fn describe(path: &[&Segment], schema: &Value, arguments: &Value) -> Option<String> {
    let (mut value, mut place) = (arguments, Some(schema));
    for (depth, segment) in path.iter().enumerate() {
        let parent = place.map(|schema| variant(schema, value));
        place = parent;
        place = place.and_then(|schema| match segment {
            Segment::Map { key } => schema.get("properties")?.get(key),
            Segment::Seq { .. } => schema.get("items"),
            _ => None,
        });
        value = match segment {
            Segment::Map { key } => value.get(key)?,
            Segment::Seq { index } => value.get(index)?,
            _ => return None,
        };
        if place.is_none()
            && let (Segment::Map { key }, Some(parent)) = (segment, parent)
        {
            return unknown(&path[..depth], key, parent);
        }
    }
    // Where the schema allows several shapes (a text, or an object with its time fields), the
    // one the value has: serde's path stops at such a value, so what is wrong inside it is
    // found here.
    let place = variant(place?, value);
    let at = shown(path);
    if let Some(expected) = mismatch(place, value) {
        return Some(format!(
            "invalid argument `{at}`: expected {expected}, got {}",
            render(value)
        ));
    }
    let object = value.as_object()?;
    let required = (place.get("required")?.as_array()?.iter()).filter_map(Value::as_str);
    if let Some(missing) = required.clone().find(|key| !object.contains_key(*key)) {
        return Some(format!(
            "missing argument `{}`: it is required",
            joined(&at, missing)
        ));
    }
    let properties = place.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (key, inner) in object {
            let wrong = properties
                .get(key)
                .and_then(|schema| mismatch(schema, inner));
            if let Some(expected) = wrong {
                return Some(format!(
                    "invalid argument `{}`: expected {expected}, got {}",
                    joined(&at, key),
                    render(inner)
                ));
            }
        }
    }
    let stray = object
        .keys()
        .find(|key| properties.is_none_or(|p| !p.contains_key(*key)))?;
    unknown(path, stray, place)
}

/// Of a schema's `anyOf` (or `oneOf`) shapes, the one whose type `value` has; `schema` itself
/// when it offers no choice or none fits.
fn variant<'a>(schema: &'a Value, value: &Value) -> &'a Value {
    let choices = (schema.get("anyOf").or_else(|| schema.get("oneOf"))).and_then(Value::as_array);
    let kind = match value {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::Null => "null",
    };
    (choices.into_iter().flatten())
        .find(|choice| {
            let named = choice.get("type").and_then(Value::as_str);
            named == Some(kind) || (kind == "number" && named == Some("integer"))
        })
        .unwrap_or(schema)
}

/// The message for an argument `key` that the object at `path` (described by `schema`) does
/// not take. Every tool input refuses what its schema does not list (`deny_unknown_fields`;
/// the schema a model reads leaves `additionalProperties: false` out as noise), so a key the
/// schema lacks is what failed, unless the schema says it takes any.
fn unknown(path: &[&Segment], key: &str, schema: &Value) -> Option<String> {
    if schema
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return None;
    }
    let empty = Map::new();
    let properties = (schema.get("properties").and_then(Value::as_object)).unwrap_or(&empty);
    let known = if properties.is_empty() {
        "this tool takes no arguments".to_string()
    } else {
        let names: Vec<String> = properties.keys().map(|name| format!("`{name}`")).collect();
        format!("the arguments here are {}", names.join(", "))
    };
    Some(format!(
        "unknown argument `{}`: {known}",
        joined(&shown(path), key)
    ))
}

/// What `schema` needs that `value` is not, in JSON's words; `None` when it fits.
fn mismatch(schema: &Value, value: &Value) -> Option<String> {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Some(format!("one of {}", allowed.join(", ")));
    }
    // A time: what chrono refuses ("input contains invalid characters") says nothing of the
    // form it wants.
    if schema.get("format").and_then(Value::as_str) == Some("date-time")
        && value.is_string()
        && serde_json::from_value::<engram_domain::Timestamp>(value.clone()).is_err()
    {
        return Some("an RFC 3339 time such as \"2026-03-02T09:00:00Z\"".into());
    }
    let non_negative = schema
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|minimum| minimum >= 0.0);
    let (fits, expected) = match schema.get("type")?.as_str()? {
        "object" => (value.is_object(), "an object"),
        "array" => (value.is_array(), "an array"),
        "string" => (value.is_string(), "a string"),
        "boolean" => (value.is_boolean(), "a boolean"),
        "number" => (value.is_number(), "a number"),
        "integer" if non_negative => (value.is_u64(), "a non-negative integer"),
        "integer" => (value.is_i64() || value.is_u64(), "an integer"),
        _ => return None,
    };
    (!fits).then(|| expected.to_string())
}

/// `path` as a model reads it: `entities[0].name`, or `arguments` for the whole.
fn shown(path: &[&Segment]) -> String {
    let mut shown = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => shown.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(key);
            }
            Segment::Enum { variant } => shown.push_str(&format!("::{variant}")),
            Segment::Unknown => shown.push('?'),
        }
    }
    if shown.is_empty() {
        "arguments".into()
    } else {
        shown
    }
}

/// `field` below `path` (`arguments` for the top).
fn joined(path: &str, field: &str) -> String {
    if path == "arguments" {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// A value as a model wrote it, cut to 60 characters.
fn render(value: &Value) -> String {
    let text = match value {
        Value::Object(_) => return "an object".into(),
        Value::Array(_) => return "an array".into(),
        other => other.to_string(),
    };
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields, rename_all = "lowercase")]
    enum Mode {
        Hybrid,
        Text,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Params {
        #[serde(default)]
        depth: u32,
        #[serde(default)]
        offset: i64,
        #[serde(default)]
        min_score: Option<f64>,
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default)]
        items: Vec<Item>,
        #[serde(default)]
        flag: bool,
        #[serde(default)]
        as_of: Option<engram_domain::Timestamp>,
    }

    /// `P`'s input schema as the server publishes it.
    fn schema_of<P: JsonSchema>() -> Map<String, Value> {
        let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let schema = generator.into_root_schema_for::<P>();
        crate::schema::model_facing(schema.as_object().unwrap())
    }

    fn error(arguments: Value) -> String {
        parse::<Params>(&arguments, Some(&schema_of::<Params>())).unwrap_err()
    }

    #[test]
    fn a_wrong_type_names_the_argument_what_it_needs_and_what_came() {
        assert_eq!(
            error(serde_json::json!({"depth": "two"})),
            "invalid argument `depth`: expected a non-negative integer, got \"two\""
        );
        assert_eq!(
            error(serde_json::json!({"depth": -1})),
            "invalid argument `depth`: expected a non-negative integer, got -1"
        );
        assert_eq!(
            error(serde_json::json!({"offset": 1.5})),
            "invalid argument `offset`: expected an integer, got 1.5"
        );
        assert_eq!(
            error(serde_json::json!({"min_score": "high"})),
            "invalid argument `min_score`: expected a number, got \"high\""
        );
        assert_eq!(
            error(serde_json::json!({"items": {"name": "x"}})),
            "invalid argument `items`: expected an array, got an object"
        );
        assert_eq!(
            error(serde_json::json!({"flag": "yes"})),
            "invalid argument `flag`: expected a boolean, got \"yes\""
        );
    }

    #[test]
    fn a_time_that_is_no_rfc_3339_time_says_the_form_with_an_example() {
        for given in ["yesterday", "not-a-date", "2026-03-02"] {
            assert_eq!(
                error(serde_json::json!({"as_of": given})),
                format!(
                    "invalid argument `as_of`: expected an RFC 3339 time such as \
                     \"2026-03-02T09:00:00Z\", got \"{given}\""
                )
            );
        }
    }

    #[test]
    fn a_wrong_time_inside_a_text_or_object_choice_is_named_by_its_path() {
        let schema = schema_of::<engram_domain::AddObservations>();
        let arguments = serde_json::json!({"observations": [{"entity_name": "N",
            "contents": ["fine", {"content": "y", "expires_at": "next tuesday"}]}]});
        let error = parse::<engram_domain::AddObservations>(&arguments, Some(&schema)).unwrap_err();
        assert_eq!(
            error,
            "invalid argument `observations[0].contents[1].expires_at`: expected an RFC 3339 \
             time such as \"2026-03-02T09:00:00Z\", got \"next tuesday\""
        );
        let stray = serde_json::json!({"observations": [{"entity_name": "N",
            "contents": [{"content": "y", "expires": "2026-01-01T00:00:00Z"}]}]});
        let error = parse::<engram_domain::AddObservations>(&stray, Some(&schema)).unwrap_err();
        assert!(
            error.starts_with(
                "unknown argument `observations[0].contents[0].expires`: the arguments here are"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_time_outside_the_years_1_to_9999_is_refused_as_an_argument() {
        let schema = schema_of::<Params>();
        for time in ["0000-06-01T00:00:00Z", "+10000-01-01T00:00:00Z"] {
            let error = parse::<Params>(&serde_json::json!({"as_of": time}), Some(&schema));
            let error = error.map(|_| ()).unwrap_err();
            assert!(
                error.starts_with("invalid argument `as_of`: expected an RFC 3339"),
                "{error}"
            );
        }
    }

    #[test]
    fn nested_arguments_are_named_by_their_path() {
        assert_eq!(
            error(serde_json::json!({"items": [{"name": "a"}, {"name": 5}]})),
            "invalid argument `items[1].name`: expected a string, got 5"
        );
        assert_eq!(
            error(serde_json::json!({"items": [{"name": "a", "tags": "x"}]})),
            "invalid argument `items[0].tags`: expected an array, got \"x\""
        );
        assert_eq!(
            error(serde_json::json!({"items": [{}]})),
            "missing argument `items[0].name`: it is required"
        );
    }

    #[test]
    fn enums_unknown_and_missing_arguments_say_what_is_allowed() {
        let mode = error(serde_json::json!({"mode": "fuzzy"}));
        assert!(mode.starts_with("invalid argument `mode`: "), "{mode}");
        assert!(
            mode.contains("\"hybrid\"") && mode.contains("\"text\""),
            "{mode}"
        );
        let unknown = error(serde_json::json!({"limit": 3}));
        assert!(
            unknown.starts_with("unknown argument `limit`: "),
            "{unknown}"
        );
        assert!(unknown.contains("`depth`"), "{unknown}");
        let nested = error(serde_json::json!({"items": [{"name": "a", "colour": 1}]}));
        assert!(
            nested.starts_with("unknown argument `items[0].colour`"),
            "{nested}"
        );
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Nothing {}

    #[test]
    fn what_the_schema_does_not_explain_passes_serdes_message_on() {
        assert_eq!(
            parse::<Nothing>(&serde_json::json!({"x": 1}), Some(&schema_of::<Nothing>()))
                .unwrap_err(),
            "unknown argument `x`: this tool takes no arguments"
        );
        let huge = error(serde_json::json!({"depth": 5_000_000_000u64}));
        assert!(huge.starts_with("invalid argument `depth`: "), "{huge}");
        assert!(huge.contains("5000000000"), "{huge}");
    }
}
