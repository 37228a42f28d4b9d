//! The graph model: what goes into the store and what comes out.
//!
//! Output structs serialise with exactly the field names of the tool catalog
//! (`shared/reference/tool-catalog.md`), so every layer above can hand them on unchanged.

use std::collections::BTreeMap;

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

/// One row of `create_entities`' result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The published schema keeps the catalog's word (`create_entities`); the code says node.
#[cfg_attr(feature = "schema", schemars(rename = "CreatedEntity"))]
pub struct CreatedNode {
    /// The node's name.
    pub name: String,
    /// Its type: the one given, or for an existing node the one it already had.
    pub entity_type: String,
    /// When the node was created (for an existing node, originally).
    pub created_at: Timestamp,
    /// `true` when a node of this name existed already and was left exactly as it was;
    /// absent when the node was created now.
    #[serde(skip_serializing_if = "crate::compact::is_false")]
    pub already_existed: bool,
    /// Observations given more than once for the new node: stored once, at this ordinal
    /// (the reference memory server's habit); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_duplicates: Vec<Observation>,
    /// With `if_exists: "merge"`, the observations appended to a node that existed; absent
    /// when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<Observation>,
}

/// Result of `delete_entities`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "DeletedEntities"))]
pub struct DeletedNodes {
    /// Names that were deleted, in request order.
    pub deleted: Vec<String>,
    /// Names that did not exist, in request order.
    pub not_found: Vec<String>,
    /// For each of `not_found` that has any, up to three existing node names close to it
    /// (another case or punctuation, a shortened name, a slip: [`crate::suggestions`]),
    /// best first; absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub did_you_mean: BTreeMap<String, Vec<String>>,
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
}

/// Result of `open_nodes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OpenedNodes {
    /// The nodes found, in request order.
    pub entities: Vec<NodeDetail>,
    /// Every relation with at least one endpoint among the requested nodes.
    pub relations: Vec<Relation>,
    /// Requested names that do not exist.
    pub not_found: Vec<String>,
    /// For each of `not_found` that has any, up to three existing node names close to it
    /// (another case or punctuation, a shortened name, a slip: [`crate::suggestions`]),
    /// best first; absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub did_you_mean: BTreeMap<String, Vec<String>>,
    /// Which observations were left out because an answer holds at most 8 MiB of text, and
    /// the call that reads on; absent when none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// A node with its tags and modification time (`get_nodes_by_type`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TypedNode {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary; `null` when none was set.
    pub summary: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// When it or any child was last written.
    pub updated_at: Timestamp,
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

/// Result of `set_summary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SummaryUpdate {
    /// The node's name.
    pub name: String,
    /// The summary now set.
    pub summary: String,
    /// The node's new modification time.
    pub updated_at: Timestamp,
}

/// Result of `set_tags`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TagsUpdate {
    /// The node's name.
    pub name: String,
    /// The tag set now stored.
    pub tags: Vec<String>,
}

/// Observations to append to one node (`add_observations`), as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "ObservationInput"))]
#[serde(deny_unknown_fields)]
pub struct ObservationAdditions {
    /// The node to append to.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Texts, or {content, valid_from?, expires_at?}.
    pub contents: Vec<NewFact>,
}

/// One row of `add_observations`' result, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AddedObservations {
    /// The node appended to.
    pub entity_name: String,
    /// What was added with the ordinals it got (empty when the node does not exist).
    pub added: Vec<Observation>,
    /// `true` when no node has this name; nothing was added for it (a row, not a tool error, as the
    /// specification's shape has it: check it before believing the facts were stored).
    pub not_found: bool,
    /// Given texts the node already held (or that the call repeated), not stored again: each
    /// with the ordinal that holds it (the reference memory server's habit); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_duplicates: Vec<Observation>,
    /// When `not_found`, up to three existing node names close to `entity_name`
    /// ([`crate::suggestions`]), best first; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub did_you_mean: Vec<String>,
    /// Added facts that a current fact of the node already says, or that look like an update
    /// of one (the same sentence with another number, date or word), so the caller can
    /// delete the new one or end the old; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub similar_to: Vec<SimilarFact>,
}

/// An added fact like one the node held (an `add_observations` row's `similar_to`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarFact {
    /// The added fact's ordinal.
    pub ordinal: Ordinal,
    /// The held fact's ordinal.
    pub similar_ordinal: Ordinal,
    /// The held fact's text, cut at 160 characters.
    pub content: String,
    /// How the added fact is like it.
    pub kind: SimilarKind,
}

/// How an added fact is like a held one, and so what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SimilarKind {
    /// It says the held fact again: delete one (`delete_observations`).
    Repeats,
    /// It may update the held fact: end the held one (`end_observations`).
    MayUpdate,
}

/// Result of `replace_observation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReplacedObservation {
    /// The node.
    pub entity_name: String,
    /// The ordinal, unchanged.
    pub ordinal: Ordinal,
    /// The text before.
    pub old_content: String,
    /// The text now.
    pub new_content: String,
}

/// Ordinals to delete from one node (`delete_observations`), as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "DeletionInput", transform = ordinals_required))]
#[serde(deny_unknown_fields)]
pub struct ObservationDeletions {
    /// The node.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Ordinals to delete; the remaining observations keep theirs.
    #[serde(default)]
    pub ordinals: Vec<Ordinal>,
    /// Texts to delete (every observation of the node with exactly this content), as the
    /// reference memory server deletes, by its key `observations` (not advertised); their
    /// ordinals are reported as deleted, and a text that matches nothing is not reported.
    #[serde(default, rename = "observations")]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub contents: Vec<String>,
}

/// The catalog's schema of [`ObservationDeletions`]: `ordinals` required. Serde defaults it
/// only so that the reference server's `observations` (texts) can stand in its place.
#[cfg(feature = "schema")]
fn ordinals_required(schema: &mut schemars::Schema) {
    if let Some(ordinals) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("ordinals"))
        .and_then(|o| o.as_object_mut())
    {
        ordinals.remove("default");
    }
    if let Some(required) = schema.get_mut("required").and_then(|r| r.as_array_mut()) {
        required.push("ordinals".into());
    }
}

/// One row of `delete_observations`' result, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DeletedObservations {
    /// The node.
    pub entity_name: String,
    /// Ordinals that existed and are gone, ascending.
    pub deleted_ordinals: Vec<Ordinal>,
    /// Ordinals that did not exist (all of them when the node does not exist), ascending.
    pub not_found_ordinals: Vec<Ordinal>,
}

/// Result of `create_relations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CreatedRelations {
    /// Relations created now.
    pub created: Vec<RelationSpec>,
    /// Relations that existed already (unchanged).
    pub already_existed: Vec<RelationSpec>,
    /// Endpoint names that do not exist, each once; relations naming them were skipped.
    pub not_found: Vec<String>,
    /// For each of `not_found` that has any, up to three existing node names close to it
    /// (another case or punctuation, a shortened name, a slip: [`crate::suggestions`]),
    /// best first; absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub did_you_mean: BTreeMap<String, Vec<String>>,
}

/// Result of `delete_relations`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DeletedRelations {
    /// How many of the given relations existed and were deleted.
    pub deleted: u64,
    /// How many did not exist.
    pub not_found: u64,
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

/// Result of `get_neighborhood`: the node, every node within `depth` hops (relations followed
/// in either direction), and every relation among them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Neighborhood {
    /// The nodes, nearest first, then by name.
    pub nodes: Vec<GraphNode>,
    /// The relations whose both endpoints are among `nodes`, sorted.
    pub relations: Vec<Relation>,
}

/// Result of `get_path`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphPath {
    /// Whether a path exists within [`crate::limits::MAX_PATH_HOPS`] hops.
    pub found: bool,
    /// Node names from source to target (just the source when both are the same).
    pub path: Vec<String>,
    /// The relation taken at each hop, in path order; `relations[i]` links `path[i]` and
    /// `path[i + 1]` in one direction or the other.
    pub relations: Vec<Relation>,
}

/// One row of `find_unlinked_references`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UnlinkedReference {
    /// The node whose observations mention another node.
    pub node: String,
    /// The name mentioned.
    pub referenced_name: String,
    /// In how many of `node`'s observations the name occurs.
    pub reference_count: i64,
}

/// One row of `get_pending_consolidation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingConsolidation {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// How many observations it holds.
    pub observation_count: i64,
    /// When its newest observation was written (added or replaced).
    pub last_observation_at: Timestamp,
    /// When its summary was last set; `null` when never.
    pub summary_updated_at: Option<Timestamp>,
}

/// Result of `get_stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Stats {
    /// Nodes in the workspace.
    pub node_count: i64,
    /// Observations in the workspace, those that no longer hold (ended, or expired and not
    /// yet purged) included.
    pub observation_count: i64,
    /// Of those, the ones that no longer hold: kept for `include_ended`, `as_of` and history
    /// (an expired one until the purge deletes it, within a minute); absent when none.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub ended_observations: i64,
    /// Current observations that will expire (`expires_at`); absent when none.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub expiring_observations: i64,
    /// Relations in the workspace.
    pub relation_count: i64,
    /// Fraction (0.0–1.0) of observation × perspective pairs whose embedding is current.
    /// While the indexer is working it may be up to 5 seconds old, unless something was
    /// written since.
    #[serde(serialize_with = "crate::compact::share")]
    pub embedding_coverage: f64,
    /// Observation × perspective texts of the workspace the embedder refused: set aside with
    /// their reason, tried again after a back-off, found by full text meanwhile (an
    /// extension; 0 when this process runs no indexer).
    pub rejected_texts: u64,
    /// The model the embeddings are made with (`local/multilingual-e5-small`,
    /// `ollama/nomic-embed-text`); absent without an embedder (an extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// The workspace's name.
    pub workspace: String,
}

/// Counts of events in a workspace since a point in time (the report's `event_summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EventCounts {
    /// The start of the window.
    pub since: Timestamp,
    /// Nodes, observations and relations created.
    pub creates: i64,
    /// Nodes and observations changed, relations renamed.
    pub updates: i64,
    /// Nodes, observations and relations deleted.
    pub deletes: i64,
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
