//! Tool arguments that fail to deserialize come back naming the argument: its path, the type
//! it needs and the value given (``invalid argument `depth`: expected a non-negative integer,
//! got "two"``), as a tool error (`isError: true`) the model can correct, as the MCP
//! specification asks of input validation errors (2025-11-25, "Error Handling").
//!
//! [`Parameters`] replaces rmcp's extractor of the same name (rmcp's `#[tool]` macro finds a
//! tool's input schema by that name); it keeps serde's path to the failing value with
//! `serde_path_to_error`. rmcp can only fail an extractor with a JSON-RPC error, so the error
//! it returns is marked ([`is_argument_error`]) and the server turns it into a tool result.

use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A tool's deserialized arguments.
pub struct Parameters<P>(pub P);

impl<P: JsonSchema> JsonSchema for Parameters<P> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        P::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        P::json_schema(generator)
    }
}

/// The `data` that marks a JSON-RPC error as a bad argument, to be answered as a tool error.
const MARK: &str = "engram/invalid-argument";

impl<S, P: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<P> {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        let arguments = Value::Object(context.arguments.take().unwrap_or_default());
        parse(&arguments).map(Parameters).map_err(|message| {
            ErrorData::invalid_params(message, Some(serde_json::json!({ "kind": MARK })))
        })
    }
}

/// Whether `error` is a bad argument found by [`Parameters`].
pub fn is_argument_error(error: &ErrorData) -> bool {
    error.data.as_ref().and_then(|d| d.get("kind")) == Some(&Value::from(MARK))
}

/// `arguments` as `P`, or a message naming the argument that does not fit.
pub fn parse<P: DeserializeOwned>(arguments: &Value) -> Result<P, String> {
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let path = error.path().to_string();
        describe(&path, &error.inner().to_string(), arguments)
    })
}

/// The message for serde's `message` about the value at `path` (`.` for the root).
fn describe(path: &str, message: &str, arguments: &Value) -> String {
    if let Some(field) = between(message, "missing field `", "`") {
        let full = join(path, field);
        return format!("missing argument `{full}`: it is required");
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (field, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let allowed = expected
            .trim_start_matches(", ")
            .replace("expected one of ", "")
            .replace("expected ", "")
            .replace("there are no fields", "");
        let known = if allowed.is_empty() {
            "this tool takes no arguments".to_string()
        } else {
            format!("the arguments here are {allowed}")
        };
        return format!("unknown argument `{}`: {known}", join_unknown(path, field));
    }
    let given = value_at(arguments, path).map(render);
    let expected = message
        .rsplit_once(", expected ")
        .map(|(_, expected)| plain_type(expected));
    let path = if path == "." { "arguments" } else { path };
    match (expected, given) {
        (Some(expected), Some(given)) => {
            format!("invalid argument `{path}`: expected {expected}, got {given}")
        }
        (Some(expected), None) => format!("invalid argument `{path}`: expected {expected}"),
        _ => format!("invalid argument `{path}`: {message}"),
    }
}

/// `field` below `path` (serde's path of the struct that misses it).
fn join(path: &str, field: &str) -> String {
    if path == "." || path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// serde's path of an unknown field may already end in the field's name.
fn join_unknown(path: &str, field: &str) -> String {
    if path == field || path.ends_with(&format!(".{field}")) {
        path.to_string()
    } else {
        join(path, field)
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(start)?;
    rest.split_once(end).map(|(inside, _)| inside)
}

/// The value at serde's `path` (`entities[0].name`) in `arguments`.
fn value_at<'a>(arguments: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "." {
        return Some(arguments);
    }
    let mut value = arguments;
    for segment in path.split('.') {
        let (key, indexes) = segment.split_once('[').unwrap_or((segment, ""));
        if !key.is_empty() {
            value = value.get(key)?;
        }
        for index in indexes.split('[') {
            let Some(index) = index.strip_suffix(']') else {
                continue;
            };
            value = value.get(index.parse::<usize>().ok()?)?;
        }
    }
    Some(value)
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

/// serde's name of an expected type in JSON's words.
fn plain_type(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".into(),
        "f32" | "f64" => "a number".into(),
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        "unit" => "null".into(),
        other if other.starts_with("struct ") => "an object".into(),
        other if other.starts_with("a string") || other.starts_with("a boolean") => other.into(),
        other => other.replace('`', "\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "lowercase")]
    enum Mode {
        Hybrid,
        Text,
    }

    #[derive(Debug, Deserialize)]
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
    }

    fn error(arguments: Value) -> String {
        parse::<Params>(&arguments).unwrap_err()
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
}
