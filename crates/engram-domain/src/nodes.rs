//! Nodes: creating, deleting, opening and browsing them, their summaries and tags, each asked
//! by its tool's request (the MCP input), checked, then answered by the store.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits::{self, batch_total, first_duplicate, names_batch};
use crate::model::*;
use crate::naming::aliases::Aliased;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

fn default_days() -> u32 {
    7
}

fn default_recent_limit() -> u32 {
    20
}

/// `create_entities`: nodes to create with their observations, summaries and tags.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateEntities {
    /// 1–1,000 (1,000 facts in all); an existing name: `already_existed`.
    pub entities: Vec<NewNode>,
    /// "merge": add the facts, tags and summary to an existing node. Default "skip".
    #[serde(default)]
    pub if_exists: IfExists,
}

/// What `create_entities` does with a name that exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum IfExists {
    /// Leave it exactly as it is (the specification's behaviour).
    #[default]
    Skip,
    /// Add the new observations and tags, and the summary when given.
    Merge,
}

impl CreateEntities {
    /// The nodes `entities`; existing ones left as they are.
    pub fn new(entities: Vec<NewNode>) -> Self {
        Self {
            entities,
            if_exists: IfExists::Skip,
        }
    }

    /// The same, merging into existing nodes.
    #[must_use]
    pub fn merging(mut self) -> Self {
        self.if_exists = IfExists::Merge;
        self
    }

    /// The request with its tags de-duplicated and its texts as the secret policy leaves
    /// them, if every name, type, summary, tag and observation is within its limits, no name
    /// repeats and the policy refuses nothing; else [`Error::InvalidArgument`] naming the
    /// field.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        let entities = &mut self.entities;
        limits::batch("entities", entities)?;
        let mut observation_total = 0;
        for (i, entity) in entities.iter_mut().enumerate() {
            let field = format!("entities[{i}]");
            limits::name(&format!("{field}.name"), &entity.name)?;
            limits::name(&format!("{field}.entity_type"), &entity.entity_type)?;
            if let Some(summary) = &entity.summary {
                limits::content(&format!("{field}.summary"), summary)?;
            }
            entity.tags = limits::tags(&format!("{field}.tags"), &entity.tags)?;
            for (j, observation) in entity.observations.iter().enumerate() {
                limits::fact(&format!("{field}.observations[{j}]"), observation)?;
            }
            observation_total += entity.observations.len();
        }
        batch_total("entities[].observations", observation_total)?;
        secrets.screen_nodes(entities)?;
        if let Some((first, second)) = first_duplicate(entities.iter().map(|e| &e.name)) {
            return Err(Error::invalid(
                format!("entities[{second}].name"),
                format!("repeats entities[{first}].name within one call"),
            ));
        }
        Ok(Checked::new(self))
    }
}

/// `delete_entities`: nodes to delete by name, with their observations and relations.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeleteEntities {
    /// 1–1,000 names.
    #[serde(alias = "entityNames")]
    pub entity_names: Vec<String>,
}

impl DeleteEntities {
    /// The nodes named `entity_names`.
    pub fn new(entity_names: &[String]) -> Self {
        Self {
            entity_names: entity_names.to_vec(),
        }
    }

    /// The request if it names 1–1,000 valid node names; else [`Error::InvalidArgument`]
    /// naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        names_batch("entity_names", &self.entity_names)?;
        Ok(Checked::new(self))
    }
}

/// `open_nodes`: nodes to read in full by name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OpenNodes {
    /// Names of the nodes to read in full, 1–1,000.
    pub names: Vec<String>,
    /// With ended ones.
    #[serde(default)]
    pub include_ended: bool,
    /// As it was then.
    #[serde(default)]
    pub as_of: Option<Timestamp>,
    /// Read on where `notice` says.
    #[serde(default)]
    pub after_ordinal: Option<i64>,
}

impl OpenNodes {
    /// The nodes named `names`, as they are now.
    pub fn new(names: &[String]) -> Self {
        Self {
            names: names.to_vec(),
            include_ended: false,
            as_of: None,
            after_ordinal: None,
        }
    }

    /// The same nodes as `time` sees them.
    pub fn at(mut self, time: crate::ReadTime) -> Self {
        (self.include_ended, self.as_of) = time.into_request();
        self
    }

    /// Which facts and relations the request reads.
    pub fn read_time(&self) -> crate::ReadTime {
        crate::ReadTime::from_request(self.include_ended, self.as_of).unwrap_or_default()
    }

    /// The request if it names 1–1,000 valid node names and gives at most one of
    /// `include_ended` and `as_of`; else [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        names_batch("names", &self.names)?;
        crate::ReadTime::from_request(self.include_ended, self.as_of)?;
        if let Some(after) = self.after_ordinal {
            limits::ordinal_counter("after_ordinal", after.saturating_add(1))?;
        }
        Ok(Checked::new(self))
    }
}

/// Drops `opened`'s observations up to the request's `after_ordinal` (when given), then keeps
/// observations, node by node in answer order, while their texts fit in `budget` bytes (the
/// first one always fits); says in `opened.notice` what was left out and how to read it.
fn bound_observations(opened: &mut OpenedNodes, request: &OpenNodes, budget: usize) {
    let (mut used, mut full) = (0usize, false);
    let mut left_out: Vec<(String, i64, usize)> = Vec::new();
    for node in &mut opened.entities {
        if let Some(after) = request.after_ordinal {
            node.observations.retain(|o| o.ordinal.0 > after);
        }
        let at = match full {
            true => (!node.observations.is_empty()).then_some(0),
            false => limits::cut_at(&node.observations, &mut used, budget),
        };
        if let Some(at) = at {
            let rest = node.observations.split_off(at);
            left_out.push((node.name.clone(), rest[0].ordinal.0, rest.len()));
            full = true;
        }
    }
    let Some((first, from, _)) = left_out.first() else {
        return;
    };
    let nodes: Vec<String> = (left_out.iter())
        .map(|(name, from, count)| format!("{name:?} from ordinal {from} ({count})"))
        .collect();
    opened.notice = Some(format!(
        "observations left out past the {} MiB of text one answer holds: {}; read on with {}",
        limits::ANSWER_TEXT_BYTES / (1024 * 1024),
        nodes.join(", "),
        limits::read_on_call(first, from - 1, request.include_ended, request.as_of)
    ));
}

/// `get_nodes_by_type`: every node of one type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetNodesByType {
    /// The exact type, e.g. "person".
    pub entity_type: String,
}

impl GetNodesByType {
    /// The nodes of type `entity_type`.
    pub fn new(entity_type: impl Into<String>) -> Self {
        Self {
            entity_type: entity_type.into(),
        }
    }

    /// The request if the type is a valid name; else [`Error::InvalidArgument`].
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("entity_type", &self.entity_type)?;
        Ok(Checked::new(self))
    }
}

/// `get_recently_modified`: nodes written in the last `days` days, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetRecentlyModified {
    /// How far back to look, in days, 1–36,500. Default 7.
    #[serde(default = "default_days")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 36_500)))]
    pub days: u32,
    /// At most this many nodes, 1–1,000. Default 20.
    #[serde(default = "default_recent_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
}

impl GetRecentlyModified {
    /// At most `limit` nodes written in the last `days` days.
    pub fn new(days: u32, limit: u32) -> Self {
        Self { days, limit }
    }

    /// The request if `days` is 1–36,500 and `limit` 1–1,000; else
    /// [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::within("days", self.days, limits::DAYS)?;
        limits::within("limit", self.limit, limits::LIMIT)?;
        Ok(Checked::new(self))
    }
}

/// `set_summary`: a node's new summary.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SetSummary {
    /// The node.
    pub name: String,
    /// The new summary, 1–65,536 bytes; replaces the old one.
    pub summary: String,
}

impl SetSummary {
    /// `summary` for the node `name`.
    pub fn new(name: impl Into<String>, summary: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            summary: summary.into(),
        }
    }

    /// The request with its summary as the secret policy leaves it, if the name and the
    /// summary are within their limits; else [`Error::InvalidArgument`] naming the field.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        limits::content("summary", &self.summary)?;
        self.summary = secrets.screen("summary", &self.summary)?.into_owned();
        Ok(Checked::new(self))
    }
}

/// `set_tags`: a node's whole new tag set.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SetTags {
    /// The node.
    pub name: String,
    /// The whole new set (at most 64); [] clears it.
    pub tags: Vec<String>,
}

impl SetTags {
    /// `tags` for the node `name`.
    pub fn new(name: impl Into<String>, tags: &[String]) -> Self {
        Self {
            name: name.into(),
            tags: tags.to_vec(),
        }
    }

    /// The request with its tags de-duplicated and as the secret policy leaves them, if the
    /// name and every tag are within their limits; else [`Error::InvalidArgument`] naming the
    /// field.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        self.tags = limits::tags("tags", &self.tags)?;
        secrets.screen_tags("tags", &mut self.tags)?;
        Ok(Checked::new(self))
    }
}

impl Tool for CreateEntities {
    const NAME: &'static str = "create_entities";
    const DESCRIPTION: &'static str =
        "Create nodes (entities): a type; optional facts, summary, tags.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
    };
    type Output = CreateEntitiesResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let store = context.store;
        let CreateEntities {
            mut entities,
            if_exists,
        } = self.check(context.secrets)?.into_inner();
        // A text given twice for one node is stored once, at its first place.
        let repeated: Vec<Vec<Observation>> = (entities.iter_mut())
            .map(|entity| {
                let (kept, repeated) = once_each(std::mem::take(&mut entity.observations));
                entity.observations = kept;
                repeated
                    .into_iter()
                    .map(|(kept_at, fact)| {
                        Observation::new(Ordinal(kept_at as i64 + 1), fact.content)
                    })
                    .collect()
            })
            .collect();
        let request = Checked::new(CreateEntities {
            entities,
            if_exists,
        });
        let mut created = store.create_entities(workspace, &request).await?;
        for (row, repeated) in created.iter_mut().zip(repeated) {
            if !row.already_existed {
                row.skipped_duplicates = repeated;
            }
        }
        Ok(CreateEntitiesResult { entities: created })
    }
}

impl Tool for DeleteEntities {
    const NAME: &'static str = "delete_entities";
    const DESCRIPTION: &'static str = "Delete nodes with their facts, relations and history.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: true,
    };
    type Output = DeletedNodes;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        context.store.delete_entities(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        self.entity_names.iter_mut().collect()
    }

    fn missed(&self, output: &Self::Output) -> Vec<String> {
        output.not_found.clone()
    }

    /// The nodes the aliases name, each once.
    fn retry(&self, _: &Self::Output, aliased: &Aliased) -> Option<Self> {
        let mut entity_names: Vec<String> = aliased.values().cloned().collect();
        entity_names.sort();
        entity_names.dedup();
        Some(Self { entity_names })
    }

    fn join(
        &self,
        mut first: Self::Output,
        again: Self::Output,
        aliased: &Aliased,
    ) -> Self::Output {
        first.deleted.extend(again.deleted);
        first.not_found.retain(|name| !aliased.contains_key(name));
        first
    }

    const SUGGESTS: bool = true;

    fn suggest(output: &mut Self::Output, close: BTreeMap<String, Vec<String>>) {
        output.did_you_mean = close;
    }
}

impl Tool for OpenNodes {
    const NAME: &'static str = "open_nodes";
    const DESCRIPTION: &'static str =
        "Read nodes in full: facts in order, summary, tags, relations.";
    const EFFECT: Effect = Effect::Reads;
    type Output = OpenedNodes;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, request) = (context.store, self.check()?);
        let mut opened = store.open_nodes(workspace, &request).await?;
        bound_observations(&mut opened, &request, limits::ANSWER_TEXT_BYTES);
        Ok(opened)
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        self.names.iter_mut().collect()
    }

    fn missed(&self, output: &Self::Output) -> Vec<String> {
        output.not_found.clone()
    }

    fn accessed(output: &Self::Output) -> Vec<&str> {
        output
            .entities
            .iter()
            .map(|node| node.name.as_str())
            .collect()
    }

    /// The whole request again, each alias replaced by its node's name (a node named twice
    /// read once), so that the answer keeps the request's order and one bound on its texts.
    fn retry(&self, _: &Self::Output, aliased: &Aliased) -> Option<Self> {
        let mut names: Vec<String> = Vec::with_capacity(self.names.len());
        for name in &self.names {
            let node = aliased.get(name).unwrap_or(name);
            if !names.contains(node) {
                names.push(node.clone());
            }
        }
        Some(Self {
            names,
            ..self.clone()
        })
    }

    const SUGGESTS: bool = true;

    fn suggest(output: &mut Self::Output, close: BTreeMap<String, Vec<String>>) {
        output.did_you_mean = close;
    }
}

/// What the store answers to `open_nodes` for `names`, which the domain has checked itself (the
/// search tools, the brief, the report's drafts).
pub(crate) async fn open_checked(
    store: &dyn NodeStore,
    workspace: WorkspaceId,
    names: &[String],
    time: crate::ReadTime,
) -> Result<OpenedNodes> {
    let request = Checked::new(OpenNodes::new(names).at(time));
    store.open_nodes(workspace, &request).await
}

impl Tool for GetNodesByType {
    const NAME: &'static str = "get_nodes_by_type";
    const DESCRIPTION: &'static str = "List every node of one type.";
    const EFFECT: Effect = Effect::Reads;
    type Output = TypedNodesResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let nodes = (context.store)
            .get_nodes_by_type(workspace, &self.check()?)
            .await?;
        Ok(TypedNodesResult { nodes })
    }
}

impl Tool for GetRecentlyModified {
    const NAME: &'static str = "get_recently_modified";
    const DESCRIPTION: &'static str = "Nodes changed in the last `days` days, newest first.";
    const EFFECT: Effect = Effect::Reads;
    type Output = NodeBriefsResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let nodes = (context.store)
            .get_recently_modified(workspace, &self.check()?)
            .await?;
        Ok(NodeBriefsResult { nodes })
    }
}

impl Tool for SetSummary {
    const NAME: &'static str = "set_summary";
    const DESCRIPTION: &'static str = "Set or replace a node's summary.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
    };
    type Output = SummaryUpdate;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check(context.secrets)?;
        context.store.set_summary(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

impl Tool for SetTags {
    const NAME: &'static str = "set_tags";
    const DESCRIPTION: &'static str = "Replace a node's whole tag set.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
    };
    type Output = TagsUpdate;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check(context.secrets)?;
        context.store.set_tags(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

/// `texts` with each text once, at its first place, and the repeats left out: each with the
/// index its first occurrence keeps.
fn once_each(texts: Vec<NewFact>) -> (Vec<NewFact>, Vec<(usize, NewFact)>) {
    // Each kept text's index in `kept`.
    let mut first: HashMap<String, usize> = HashMap::new();
    let (mut kept, mut repeated) = (Vec::with_capacity(texts.len()), Vec::new());
    for text in texts {
        match first.get(&text.content) {
            Some(&at) => repeated.push((at, text)),
            None => {
                first.insert(text.content.clone(), kept.len());
                kept.push(text);
            }
        }
    }
    (kept, repeated)
}

/// `get_orphaned_nodes` takes no arguments: any is refused as unknown.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetOrphanedNodes {}

impl Tool for GetOrphanedNodes {
    const NAME: &'static str = "get_orphaned_nodes";
    const DESCRIPTION: &'static str =
        "Nodes with no relation at all: candidates to link or to remove.";
    const EFFECT: Effect = Effect::Reads;
    type Output = NodeBriefsResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let nodes = context.store.get_orphaned_nodes(workspace).await?;
        Ok(NodeBriefsResult { nodes })
    }
}

/// `create_entities`' result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CreateEntitiesResult {
    /// One row per requested entity, in request order.
    pub entities: Vec<CreatedNode>,
}

/// `get_nodes_by_type`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TypedNodesResult {
    /// The nodes of the type, by name.
    pub nodes: Vec<TypedNode>,
}

/// `get_recently_modified`'s and `get_orphaned_nodes`' result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeBriefsResult {
    /// The nodes.
    pub nodes: Vec<NodeBrief>,
}

/// The node tools.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<CreateEntities>();
    visitor.visit::<DeleteEntities>();
    visitor.visit::<OpenNodes>();
    visitor.visit::<GetNodesByType>();
    visitor.visit::<GetRecentlyModified>();
    visitor.visit::<SetSummary>();
    visitor.visit::<SetTags>();
    visitor.visit::<GetOrphanedNodes>();
}

/// Nodes: the node tools of the catalog, and the counts and events kept per workspace.
#[async_trait]
pub trait NodeStore: Send + Sync + 'static {
    /// `create_entities`: inserts the nodes that do not exist yet with their observations;
    /// existing names are left exactly as they were and reported with `already_existed`.
    /// Rows come back in input order.
    async fn create_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateEntities>,
    ) -> Result<Vec<CreatedNode>>;
    /// `delete_entities`: deletes nodes with their observations, relations (both
    /// directions), embeddings and events.
    async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteEntities>,
    ) -> Result<DeletedNodes>;
    /// `open_nodes`: nodes with observations in ordinal order, and every relation touching one.
    async fn open_nodes(
        &self,
        workspace: WorkspaceId,
        request: &Checked<OpenNodes>,
    ) -> Result<OpenedNodes>;
    /// `get_nodes_by_type`: nodes of one type, by name.
    async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNodesByType>,
    ) -> Result<Vec<TypedNode>>;
    /// `get_recently_modified`: nodes written in the last `days` days, newest first.
    async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRecentlyModified>,
    ) -> Result<Vec<NodeBrief>>;
    /// `set_summary`: sets the summary and moves `summary_updated_at` and `updated_at`.
    async fn set_summary(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetSummary>,
    ) -> Result<SummaryUpdate>;
    /// `set_tags`: replaces the tag set (already de-duplicated).
    async fn set_tags(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetTags>,
    ) -> Result<TagsUpdate>;
    /// `get_orphaned_nodes`: nodes with no relation in either direction, by name.
    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>>;
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

impl CreatedNode {
    /// The row of a node created now (`already_existed` false) or left as it was, with no
    /// observation skipped or added.
    pub fn new(name: String, entity_type: String, created_at: Timestamp, existed: bool) -> Self {
        Self {
            name,
            entity_type,
            created_at,
            already_existed: existed,
            skipped_duplicates: Vec::new(),
            added: Vec::new(),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, texts: &[&str]) -> NodeDetail {
        NodeDetail {
            name: name.into(),
            entity_type: "note".into(),
            summary: None,
            tags: Vec::new(),
            observations: (texts.iter().enumerate())
                .map(|(i, text)| Observation::new(Ordinal(i as i64 + 1), *text))
                .collect(),
            aliases: Vec::new(),
            created_at: Timestamp::default(),
            updated_at: Timestamp::default(),
            reflections: Vec::new(),
            more_reflections: None,
        }
    }

    fn ordinals(opened: &OpenedNodes) -> Vec<Vec<i64>> {
        (opened.entities.iter())
            .map(|n| n.observations.iter().map(|o| o.ordinal.0).collect())
            .collect()
    }

    #[test]
    fn an_answer_keeps_observations_within_its_bytes_and_says_where_to_read_on() {
        let mut opened = OpenedNodes {
            entities: vec![node("a", &["aaaa", "bbbb", "cccc"]), node("b", &["dd"])],
            ..OpenedNodes::default()
        };
        bound_observations(&mut opened, &OpenNodes::new(&[]), 9);
        assert_eq!(ordinals(&opened), [vec![1, 2], vec![]]);
        let notice = opened.notice.as_deref().unwrap();
        assert!(
            notice.contains(r#""a" from ordinal 3 (1), "b" from ordinal 1 (1)"#),
            "{notice}"
        );
        assert!(
            notice.contains(r#"{"names": ["a"], "after_ordinal": 2}"#),
            "{notice}"
        );
        // Reading on from there: the rest, and nothing said.
        let mut rest = OpenedNodes {
            entities: vec![node("a", &["aaaa", "bbbb", "cccc"])],
            ..OpenedNodes::default()
        };
        let mut on = OpenNodes::new(&["a".to_owned()]);
        on.after_ordinal = Some(2);
        bound_observations(&mut rest, &on, 9);
        assert_eq!(ordinals(&rest), [vec![3]]);
        assert_eq!(rest.notice, None);
        // One text larger than the budget still comes: no node is unreadable.
        let mut large = OpenedNodes {
            entities: vec![node("a", &["aaaaaaaaaaaa", "b"])],
            ..OpenedNodes::default()
        };
        let mut ended = OpenNodes::new(&["a".to_owned()]);
        ended.include_ended = true;
        bound_observations(&mut large, &ended, 9);
        let notice = large.notice.as_deref().unwrap();
        assert!(
            notice.ends_with(r#""after_ordinal": 1, "include_ended": true}"#),
            "{notice}"
        );
        assert_eq!(ordinals(&large), [vec![1]]);
    }

    #[test]
    fn after_ordinal_is_checked() {
        let mut request = OpenNodes::new(&["a".to_owned()]);
        request.after_ordinal = Some(-1);
        let error = request.check().unwrap_err().to_string();
        assert!(error.contains("after_ordinal"), "{error}");
        let mut request = OpenNodes::new(&["a".to_owned()]);
        request.after_ordinal = Some(0);
        assert!(request.check().is_ok());
    }
}
