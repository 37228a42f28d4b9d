//! The graph model: what goes into the store and what comes out.
//!
//! Output structs serialise with exactly the field names of the tool catalog
//! (`shared/reference/tool-catalog.md`), so every layer above can hand them on unchanged.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A point in time, always UTC.
pub type Timestamp = DateTime<Utc>;

/// The database id of a workspace. Every store method takes one explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WorkspaceId(pub i64);

/// The database id of a perspective (unique across workspaces): which rendering of an
/// observation a vector was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct PerspectiveId(pub i64);

/// An observation's position within its node, from 1: stable, never renumbered or reused
/// (specification, "Observations"). Serialised as the plain integer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Ordinal(pub i64);

/// The plain integer's schema, inlined: the published tool schemas say `integer` (int64), as
/// they did before the newtype.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Ordinal {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        i64::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        i64::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        i64::json_schema(generator)
    }
}

impl std::fmt::Display for Ordinal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for PerspectiveId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A named namespace for nodes, relations and events. There is no implicit default workspace
/// (specification, "Workspace").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Workspace {
    /// The database id.
    pub id: WorkspaceId,
    /// The unique name clients bind to with `X-Memory-Workspace`.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
}

/// A workspace with its size, for listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WorkspaceInfo {
    /// The workspace.
    #[serde(flatten)]
    pub workspace: Workspace,
    /// How many nodes it holds.
    pub node_count: i64,
}

/// A node to create (`create_entities`), as a client sends it: the field docs are the input
/// schema's descriptions, and the reference memory server's `entityType` is accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "EntityInput"))]
#[serde(deny_unknown_fields)]
pub struct NewNode {
    /// Unique in the workspace, e.g. "Alice".
    pub name: String,
    /// e.g. "person", "decision".
    #[serde(alias = "entityType")]
    pub entity_type: String,
    /// Texts, or {content, valid_from?, expires_at?}.
    #[serde(default)]
    pub observations: Vec<NewFact>,
    /// 1–65,536 bytes.
    #[serde(default)]
    pub summary: Option<String>,
    /// At most 64.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// An observation as read back: its stable per-node ordinal and its text, and when it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Observation {
    /// Position within the node, from 1; never renumbered or reused.
    pub ordinal: Ordinal,
    /// The fact, 1–65,536 bytes.
    pub content: String,
    /// Since when the fact holds: when it was written, unless the client gave an earlier
    /// `valid_from`; a day, `"2026-03-02"`, for a fact dated with one, else the instant to the
    /// second, `"2026-03-02T09:14:05Z"` ([`crate::compact::instant`]). Given by `open_nodes`
    /// and by `read_graph` with `include_ended`; absent in what a write answers.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::compact::optional_instant"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub valid_from: Option<Timestamp>,
    /// When the fact stopped (or stops) holding: it was ended, or it expires then; absent
    /// while it holds with no end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Timestamp>,
}

impl Observation {
    /// The fact `content` at `ordinal`, current and without an end.
    pub fn new(ordinal: Ordinal, content: impl Into<String>) -> Self {
        Self {
            ordinal,
            content: content.into(),
            valid_from: None,
            valid_to: None,
        }
    }
}

/// A fact to store (`create_entities`' `observations`, `add_observations`' `contents`): a
/// plain text, or `{content, valid_from?, expires_at?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewFact {
    /// The fact, 1–65,536 bytes.
    pub content: String,
    /// Since when it holds, if earlier than now (the default); never in the future.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    /// When it stops holding and is deleted for good, if ever; in the future.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

impl NewFact {
    /// `true` when the fact is a plain text: current from now, never expiring.
    pub fn is_plain(&self) -> bool {
        self.valid_from.is_none() && self.expires_at.is_none()
    }
}

impl From<&str> for NewFact {
    fn from(content: &str) -> Self {
        content.to_owned().into()
    }
}

impl From<String> for NewFact {
    fn from(content: String) -> Self {
        Self {
            content,
            valid_from: None,
            expires_at: None,
        }
    }
}

/// The object form of a [`NewFact`].
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "DatedFact"))]
#[serde(deny_unknown_fields)]
struct DatedFact {
    content: String,
    /// Not in the future.
    #[serde(default)]
    valid_from: Option<Timestamp>,
    /// Then deleted.
    #[serde(default)]
    expires_at: Option<Timestamp>,
}

impl<'de> Deserialize<'de> for NewFact {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Form;
        impl<'de> serde::de::Visitor<'de> for Form {
            type Value = NewFact;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a text, or {content, valid_from?, expires_at?}")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<NewFact, E> {
                Ok(text.into())
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<NewFact, E> {
                Ok(text.into())
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<NewFact, M::Error> {
                let dated =
                    DatedFact::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(NewFact {
                    content: dated.content,
                    valid_from: dated.valid_from,
                    expires_at: dated.expires_at,
                })
            }
        }
        deserializer.deserialize_any(Form)
    }
}

/// The published schema: a string, or the object form.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for NewFact {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Fact".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let dated = generator.subschema_for::<DatedFact>();
        schemars::json_schema!({
            "anyOf": [{"type": "string"}, dated]
        })
    }
}

/// A directed typed edge as returned by reads: `{from, to, relation_type}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Relation {
    /// Source node name.
    pub from: String,
    /// Target node name.
    pub to: String,
    /// The relation's type, such as `works_on`.
    pub relation_type: String,
    /// Since when it holds: given in reads that ask for ended relations or for a past time
    /// (`include_ended`, `as_of`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    /// When it stopped holding; absent while it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Timestamp>,
}

impl Relation {
    /// `from -[relation_type]-> to`, current.
    pub fn new(
        from: impl Into<String>,
        to: impl Into<String>,
        relation_type: impl Into<String>,
    ) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            relation_type: relation_type.into(),
            valid_from: None,
            valid_to: None,
        }
    }
}

/// A relation as given by a caller and echoed back: `{from_entity, to_entity, relation_type}`.
// The reference memory server's `from`, `to` and `relationType` are accepted as well.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RelationSpec {
    /// Source node name.
    #[serde(alias = "from")]
    pub from_entity: String,
    /// Target node name.
    #[serde(alias = "to")]
    pub to_entity: String,
    /// e.g. "works_on".
    #[serde(alias = "relationType")]
    pub relation_type: String,
    /// create_relations only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
}

impl RelationSpec {
    /// `from -[relation_type]-> to`, holding from now.
    pub fn new(
        from: impl Into<String>,
        to: impl Into<String>,
        relation_type: impl Into<String>,
    ) -> Self {
        Self {
            from_entity: from.into(),
            to_entity: to.into(),
            relation_type: relation_type.into(),
            valid_from: None,
        }
    }
}

impl std::fmt::Display for RelationSpec {
    /// `from -[type]-> to`, as messages name a relation.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} -[{}]-> {}",
            self.from_entity, self.relation_type, self.to_entity
        )
    }
}

/// A node with everything it holds (`open_nodes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeDetail {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary; `null` when none was set.
    pub summary: Option<String>,
    /// Its tags, in the order they were set.
    pub tags: Vec<String>,
    /// Its observations in ordinal order.
    pub observations: Vec<Observation>,
    /// The other names it answers to (merged duplicates, `set_aliases`), sorted; absent when
    /// none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it or any of its children was last written.
    pub updated_at: Timestamp,
    /// Its newest reflections (`add_reflection`), at most
    /// [`crate::reflections::NODE_REFLECTIONS`], newest first; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reflections: Vec<crate::NodeReflection>,
    /// How many more reflections it has than `reflections` shows (`search_reflections` with
    /// the node as target finds them); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_reflections: Option<i64>,
}

/// Characters of a reflection `open_nodes` shows ([`NodeDetail::reflections`]; a thousand
/// nodes' three reflections: at most about 1.5 MB).
pub const REFLECTION_PREVIEW_CHARS: usize = 500;

impl NodeDetail {
    /// The node with its newest reflections (at most
    /// [`crate::reflections::NODE_REFLECTIONS`], newest first) out of `count`, each cut at
    /// [`REFLECTION_PREVIEW_CHARS`] characters (`search_reflections` answers
    /// them whole), so that a thousand opened nodes stay within one answer's bound.
    pub fn with_reflections(mut self, mut listed: Vec<crate::NodeReflection>, count: i64) -> Self {
        for reflection in &mut listed {
            let preview = REFLECTION_PREVIEW_CHARS;
            reflection.content = crate::compact::truncate(&reflection.content, preview);
        }
        self.reflections = listed;
        let more = count - self.reflections.len() as i64;
        self.more_reflections = (more > 0).then_some(more);
        self
    }
}

/// A node in brief (`get_recently_modified`, `get_orphaned_nodes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeBrief {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary; `null` when none was set.
    pub summary: Option<String>,
    /// When it or any child was last written.
    pub updated_at: Timestamp,
}

/// Result of `get_neighborhood` and `get_subgraph`: the nodes asked for, every node within
/// `depth` hops of them (relations followed in either direction), and every relation among them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Neighborhood {
    /// The nodes, nearest first, then by name.
    pub nodes: Vec<GraphNode>,
    /// The relations whose both endpoints are among `nodes`, sorted.
    pub relations: Vec<Relation>,
}

/// A node as part of a subgraph (`get_neighborhood`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphNode {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary; `null` when none was set.
    pub summary: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
}

/// A text the embedder rejected, set aside by the indexer and tried again after a back-off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedText {
    /// The node.
    pub name: String,
    /// The observation's ordinal.
    pub ordinal: Ordinal,
    /// The perspective whose rendering was rejected.
    pub perspective: String,
    /// What the embedder said.
    pub reason: String,
}
