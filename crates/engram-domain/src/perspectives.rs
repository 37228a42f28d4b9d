//! Embedding perspectives: each renders an observation *in its context* into the text that
//! is embedded, so one fact gets several vectors that each answer a different kind of
//! question (specification, "Embedding"; DESIGN.md § Embeddings).
//!
//! Templates substitute `{placeholders}`: for documents `{observation}`, `{name}`,
//! `{entity_type}`, `{tags}`, `{summary}`, `{relations}`, `{ordinal}`, `{date}` (the
//! observation's creation date, `YYYY-MM-DD`); for queries `{query}`. Unknown placeholders are
//! left as they are. A change to anything a template uses changes the rendered text, and so
//! its hash, and the indexer re-embeds it.

use serde::Serialize;

use crate::model::Timestamp;

/// A perspective of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Perspective {
    /// The database id.
    pub id: crate::PerspectiveId,
    /// Its name, e.g. `general`.
    pub name: String,
    /// How an observation becomes the text embedded.
    pub document_template: String,
    /// How a query becomes the text embedded.
    pub query_template: String,
    /// Disabled perspectives are neither indexed nor searched.
    pub enabled: bool,
}

/// A perspective every new workspace starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultPerspective {
    /// Its name.
    pub name: &'static str,
    /// How an observation becomes the text embedded.
    pub document_template: &'static str,
    /// How a query becomes the text embedded.
    pub query_template: &'static str,
    /// Whether it is indexed and searched from the start.
    pub enabled: bool,
}

/// The perspectives every new workspace starts with. Only `general` is enabled; the others
/// are there to be switched on (`engram workspace perspectives`) where questions of their
/// kind dominate.
///
/// - `general`: the fact led by its node's type and name, the context every question can use.
/// - `technical`: led by the node's type and tags, so "which library…" or "what decision…"
///   questions meet facts of that kind;
/// - `relational`: the fact with the node's relations, so questions about who or what is
///   connected to what find it;
/// - `temporal`: the fact with its date and position, for "when" and "what happened after";
/// - `project`: the fact within the node's summary and tags, for questions about the larger
///   effort it belongs to.
///
/// Why only one is on (BENCHMARKS.md, LoCoMo dev split): in hybrid search no perspective, and
/// no fusion of several (best per node, mean, rank fusion), beat `general` alone by more than
/// half a point of R@5, while each costs a full extra embedding of every observation; the
/// five at once, best per node, scored below `technical` alone in embedding mode (R@5 0.576
/// against 0.579). Context that does not discriminate (an opaque id, an empty tag list, the
/// day a fact was stored) dilutes the content it is rendered with.
pub const DEFAULT_PERSPECTIVES: [DefaultPerspective; 5] = [
    DefaultPerspective {
        name: "general",
        document_template: "{entity_type} {name}: {observation}",
        query_template: "{query}",
        enabled: true,
    },
    DefaultPerspective {
        name: "technical",
        document_template: "{entity_type} {name} [{tags}]: {observation}",
        query_template: "{query}",
        enabled: false,
    },
    DefaultPerspective {
        name: "relational",
        document_template: "{name} ({relations}): {observation}",
        query_template: "{query}",
        enabled: false,
    },
    DefaultPerspective {
        name: "temporal",
        document_template: "On {date}, {name} (fact {ordinal}): {observation}",
        query_template: "{query}",
        enabled: false,
    },
    DefaultPerspective {
        name: "project",
        document_template: "{name}, {summary} [{tags}]: {observation}",
        query_template: "{query}",
        enabled: false,
    },
];

/// An observation with the context perspectives render it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservationContext {
    /// The observation's text.
    pub content: String,
    /// Its ordinal.
    pub ordinal: crate::Ordinal,
    /// When it was created.
    pub created_at: Timestamp,
    /// Its node's name.
    pub name: String,
    /// Its node's type.
    pub entity_type: String,
    /// Its node's tags.
    pub tags: Vec<String>,
    /// Its node's summary.
    pub summary: Option<String>,
    /// Its node's relations as phrases: `works_on engram` for an outgoing relation,
    /// `Bob knows` for an incoming one.
    pub relations: Vec<String>,
}

/// Checks a perspective a user defines: a name of 1–64 characters of `a–z 0–9 _ -`, and
/// templates of 1–4,096 bytes without NUL, the document one using `{observation}` and the
/// query one `{query}`.
pub fn validate(perspective: &Perspective) -> crate::Result<()> {
    use crate::Error;
    let name = &perspective.name;
    let valid_name = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !valid_name {
        return Err(Error::invalid(
            "name",
            "1–64 characters of a–z, 0–9, '_' and '-'",
        ));
    }
    for (field, template, placeholder) in [
        (
            "document_template",
            &perspective.document_template,
            "{observation}",
        ),
        ("query_template", &perspective.query_template, "{query}"),
    ] {
        if !(1..=4_096).contains(&template.len()) {
            return Err(Error::invalid(field, "must be 1–4,096 bytes"));
        }
        // PostgreSQL cannot store NUL in text: refused here, not by the store's internal error.
        crate::limits::no_nul(field, template)?;
        if !template.contains(placeholder) {
            return Err(Error::invalid(field, format!("must use {placeholder}")));
        }
    }
    Ok(())
}

/// Renders `template` for an observation.
pub fn render_document(template: &str, context: &ObservationContext) -> String {
    let mut relations = context.relations.clone();
    relations.sort();
    fill(template, |placeholder| match placeholder {
        "observation" => Some(context.content.clone()),
        "name" => Some(context.name.clone()),
        "entity_type" => Some(context.entity_type.clone()),
        "tags" => Some(context.tags.join(", ")),
        "summary" => Some(context.summary.clone().unwrap_or_default()),
        "relations" => Some(relations.join("; ")),
        "ordinal" => Some(context.ordinal.to_string()),
        "date" => Some(context.created_at.format("%Y-%m-%d").to_string()),
        _ => None,
    })
}

/// Renders `template` for a search query.
pub fn render_query(template: &str, query: &str) -> String {
    fill(template, |placeholder| {
        (placeholder == "query").then(|| query.to_owned())
    })
}

/// Replaces each `{placeholder}` that `value` knows; leaves the others as written.
fn fill(template: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let filled = after
            .find('}')
            .and_then(|close| value(&after[..close]).map(|text| (text, close)));
        match filled {
            Some((text, close)) => {
                out.push_str(&text);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> ObservationContext {
        ObservationContext {
            content: "moved to Lisbon in March".into(),
            ordinal: crate::Ordinal(3),
            created_at: "2026-03-14T10:00:00Z".parse().unwrap(),
            name: "Alice".into(),
            entity_type: "person".into(),
            tags: vec!["team".into(), "europe".into()],
            summary: Some("engineer".into()),
            relations: vec!["works_on engram".into(), "Bob knows".into()],
        }
    }

    #[test]
    fn every_default_perspective_renders_differently() {
        let rendered: Vec<String> = DEFAULT_PERSPECTIVES
            .iter()
            .map(|p| render_document(p.document_template, &alice()))
            .collect();
        assert_eq!(
            rendered,
            [
                "person Alice: moved to Lisbon in March",
                "person Alice [team, europe]: moved to Lisbon in March",
                "Alice (Bob knows; works_on engram): moved to Lisbon in March",
                "On 2026-03-14, Alice (fact 3): moved to Lisbon in March",
                "Alice, engineer [team, europe]: moved to Lisbon in March",
            ]
        );
    }

    #[test]
    fn unknown_placeholders_and_braces_stay() {
        assert_eq!(render_query("{query} {nope} {", "x"), "x {nope} {");
        assert_eq!(render_document("{{name}}", &alice()), "{Alice}");
    }
}
