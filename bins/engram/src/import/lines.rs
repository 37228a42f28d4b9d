//! The lines of an import file: read within a byte limit, parsed as either format and
//! validated, or refused with a reason.

use std::io::BufRead;

use engram_domain::ReflectionRecord;
use engram_domain::transfer::{
    NodeRecord, ObservationRecord, RelationRecord, validate_node, validate_relation,
};
use serde::Deserialize;

/// The longest line read: a longer one is refused (and skipped without being held in memory).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line of the file as read: its text, or why it cannot be read as text.
#[derive(Debug, PartialEq, Eq)]
pub enum RawLine {
    /// The line, without its line break.
    Text(String),
    /// Longer than [`MAX_LINE_BYTES`]: this many bytes.
    TooLong(usize),
    /// Not UTF-8: the first invalid byte's offset.
    NotUtf8(usize),
}

/// Reads the next line of `reader` (`None` at the end) and how many bytes it took, never
/// holding more than `max` bytes of it.
///
/// # Errors
/// The reader's.
pub fn read_line(
    reader: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<(RawLine, usize)>> {
    buffer.clear();
    let (mut taken, mut skipped) = (0, 0);
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            if taken == 0 {
                return Ok(None);
            }
            break;
        }
        let (chunk, ends) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let used = chunk.len();
        if skipped == 0 && buffer.len() + used <= max + 1 {
            buffer.extend_from_slice(chunk);
        } else {
            skipped += used;
        }
        reader.consume(used);
        taken += used;
        if ends {
            break;
        }
    }
    if skipped > 0 {
        return Ok(Some((RawLine::TooLong(taken), taken)));
    }
    while buffer.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buffer.pop();
    }
    let line = match std::str::from_utf8(buffer) {
        Ok(text) => RawLine::Text(text.to_owned()),
        Err(error) => RawLine::NotUtf8(error.valid_up_to()),
    };
    Ok(Some((line, taken)))
}

/// One meaningful line of an import file.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A node, from either format.
    Node(NodeRecord),
    /// A relation, from either format.
    Relation(RelationRecord),
    /// A reflection (engram's own format).
    Reflection(ReflectionRecord),
    /// engram's export header (or another line that carries no graph data).
    Header,
}

/// The reference server's entity line.
#[derive(Deserialize)]
struct ReferenceEntity {
    name: String,
    #[serde(rename = "entityType")]
    entity_type: String,
    #[serde(default)]
    observations: Vec<String>,
}

/// What a refused line was meant to be, for the report's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An entity or node, with this many observations.
    Entity(u64),
    /// A relation.
    Relation,
    /// A reflection.
    Reflection,
    /// Nothing legible.
    Unknown,
}

/// A refused line: what it was meant to be, and what is wrong with it (not JSON, an unknown
/// `type`, a missing field, a broken limit).
#[derive(Debug, PartialEq, Eq)]
pub struct Rejected {
    /// What the line was meant to be.
    pub kind: Kind,
    /// Why it was refused.
    pub reason: String,
}

/// `line` as `secrets` stores it: a credential in any of its texts refuses the line (naming
/// the field and the kind of secret, never the secret) or is redacted.
///
/// # Errors
/// [`Rejected`] under [`engram_domain::SecretPolicy::Refuse`].
pub fn screen(
    line: Option<Line>,
    secrets: engram_domain::SecretPolicy,
) -> Result<Option<Line>, Rejected> {
    let refused = |kind: Kind, error: engram_domain::Error, prefix: &str| Rejected {
        kind,
        reason: error.to_string().replacen(prefix, "", 1),
    };
    match line {
        Some(Line::Node(node)) => {
            let observations = node.observations.len() as u64;
            let mut nodes = [node];
            (secrets.screen_import(&mut nodes, &[]))
                .map_err(|e| refused(Kind::Entity(observations), e, "nodes[0]."))?;
            let [node] = nodes;
            Ok(Some(Line::Node(node)))
        }
        Some(Line::Relation(relation)) => {
            (secrets.screen_import(&mut [], std::slice::from_ref(&relation)))
                .map_err(|e| refused(Kind::Relation, e, "relations[0]."))?;
            Ok(Some(Line::Relation(relation)))
        }
        Some(Line::Reflection(reflection)) => {
            let screened = (reflection.check(secrets, "reflection"))
                .map_err(|e| refused(Kind::Reflection, e, "reflection."))?;
            Ok(Some(Line::Reflection(screened.into_inner())))
        }
        other => Ok(other),
    }
}

/// Parses and validates one line; `Ok(None)` for a blank one.
pub fn parse_line(text: &str) -> Result<Option<Line>, Rejected> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Rejected {
        kind: sniffed_kind(text),
        reason: format!("not JSON: {e}"),
    })?;
    let kind = kind_of(&value);
    let refuse = |reason: String| Rejected { kind, reason };
    let line = match value.get("type").and_then(|t| t.as_str()).unwrap_or("") {
        "entity" => {
            let entity: ReferenceEntity =
                serde_json::from_value(value).map_err(|e| refuse(format!("entity: {e}")))?;
            Line::Node(NodeRecord {
                name: entity.name,
                entity_type: entity.entity_type,
                observations: (entity.observations.into_iter())
                    .map(|content| ObservationRecord {
                        content,
                        ..ObservationRecord::default()
                    })
                    .collect(),
                ..NodeRecord::default()
            })
        }
        "node" => {
            Line::Node(serde_json::from_value(value).map_err(|e| refuse(format!("node: {e}")))?)
        }
        "relation" => Line::Relation(
            serde_json::from_value(value).map_err(|e| refuse(format!("relation: {e}")))?,
        ),
        "reflection" => {
            let mut value = value;
            if let Some(fields) = value.as_object_mut() {
                fields.remove("type");
            }
            let record: ReflectionRecord =
                serde_json::from_value(value).map_err(|e| refuse(format!("reflection: {e}")))?;
            // Its limits now, its secrets in `screen`.
            (record
                .clone()
                .check(engram_domain::SecretPolicy::Allow, "reflection"))
            .map_err(|e| refuse(e.to_string().replacen("reflection.", "", 1)))?;
            Line::Reflection(record)
        }
        "engram" => Line::Header,
        "" => {
            return Err(refuse(
                "no \"type\" (entity, relation, node or reflection)".into(),
            ));
        }
        other => {
            return Err(refuse(format!(
                "unknown type {other:?} (expected entity, relation, node or reflection)"
            )));
        }
    };
    match line {
        Line::Node(node) => validate_node(node)
            .map(|node| Some(Line::Node(node)))
            .map_err(|e| refuse(e.to_string())),
        Line::Relation(relation) => validate_relation(&relation)
            .map(|()| Some(Line::Relation(relation)))
            .map_err(|e| refuse(e.to_string())),
        other => Ok(Some(other)),
    }
}

/// The kind of a line that is not JSON (a truncated one, say), if its type is legible.
fn sniffed_kind(text: &str) -> Kind {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains(r#""type":"entity""#) || squeezed.contains(r#""type":"node""#) {
        Kind::Entity(0)
    } else if squeezed.contains(r#""type":"relation""#) {
        Kind::Relation
    } else if squeezed.contains(r#""type":"reflection""#) {
        Kind::Reflection
    } else {
        Kind::Unknown
    }
}

/// The kind of a parsed line, by its `type`.
fn kind_of(value: &serde_json::Value) -> Kind {
    match value.get("type").and_then(|t| t.as_str()) {
        Some("entity" | "node") => Kind::Entity(
            (value.get("observations"))
                .and_then(|o| o.as_array())
                .map_or(0, |o| o.len() as u64),
        ),
        Some("relation") => Kind::Relation,
        Some("reflection") => Kind::Reflection,
        _ => Kind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;

    #[test]
    fn lines_are_read_within_their_limit_and_bad_bytes_are_named() {
        let mut bytes = b"first\nsecond\r\n".to_vec();
        bytes.extend_from_slice(&[b'o', b'k', 0xff, b'\n']);
        bytes.extend_from_slice(&[b'x'; 40]);
        bytes.extend_from_slice(b"\nlast");
        let mut reader = BufReader::with_capacity(8, bytes.as_slice());
        let mut buffer = Vec::new();
        let mut lines = Vec::new();
        while let Some(line) = read_line(&mut reader, &mut buffer, 16).unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                (RawLine::Text("first".into()), 6),
                (RawLine::Text("second".into()), 8),
                (RawLine::NotUtf8(2), 4),
                (RawLine::TooLong(41), 41),
                (RawLine::Text("last".into()), 4),
            ]
        );
        // Only what fits the limit was ever held.
        assert!(buffer.capacity() < 64, "{}", buffer.capacity());
    }

    #[test]
    fn both_formats_parse_and_bad_lines_say_why() {
        let entity = parse_line(
            r#"{"type":"entity","name":"Alice","entityType":"person","observations":["a","b"]}"#,
        )
        .unwrap()
        .unwrap();
        let Line::Node(node) = entity else {
            panic!("{entity:?}")
        };
        assert_eq!((node.name.as_str(), node.observations.len()), ("Alice", 2));
        assert_eq!(node.observations[0].ordinal, None);

        let relation = r#"{"type":"relation","from":"A","to":"B","relationType":"knows"}"#;
        assert!(
            matches!(parse_line(relation), Ok(Some(Line::Relation(r))) if r.relation_type == "knows")
        );
        let node = r#"{"type":"node","name":"A","entity_type":"t","next_ordinal":4,
                       "observations":[{"ordinal":3,"content":"c"}]}"#;
        assert!(matches!(parse_line(node), Ok(Some(Line::Node(n))) if n.next_ordinal == Some(4)));
        assert_eq!(parse_line("  \n"), Ok(None));
        assert_eq!(
            parse_line(r#"{"type":"engram","version":1}"#),
            Ok(Some(Line::Header))
        );

        for (line, expected) in [
            ("{not json", "not JSON"),
            (r#"{"name":"A"}"#, "no \"type\""),
            (r#"{"type":"edge"}"#, "unknown type \"edge\""),
            (
                r#"{"type":"entity","name":"A"}"#,
                "missing field `entityType`",
            ),
            (r#"{"type":"entity","name":"","entityType":"t"}"#, "`name`"),
            (
                r#"{"type":"relation","from":"A","to":"B","relationType":""}"#,
                "`relation_type`",
            ),
        ] {
            let error = parse_line(line).unwrap_err().reason;
            assert!(error.contains(expected), "{line}: {error}");
        }
    }
}
