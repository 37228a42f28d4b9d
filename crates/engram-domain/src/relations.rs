//! Relations: creating, deleting, renaming them, and those between two nodes, each asked by its
//! tool's request (the MCP input), checked, then answered by the store.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::Result;
use crate::limits::{self, relations_batch};
use crate::model::*;
use crate::naming::aliases::{self, Aliased};
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// `create_relations`: directed typed relations to create between existing nodes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRelations {
    /// The relations, 1–1,000 per call.
    pub relations: Vec<RelationSpec>,
}

impl CreateRelations {
    /// The relations `relations`.
    pub fn new(relations: &[RelationSpec]) -> Self {
        Self {
            relations: relations.to_vec(),
        }
    }

    /// The request if it holds 1–1,000 relations with valid names and types and no text the
    /// secret policy refuses; else [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        relations_batch(&self.relations)?;
        for (i, relation) in self.relations.iter().enumerate() {
            limits::not_in_future(&format!("relations[{i}].valid_from"), relation.valid_from)?;
        }
        secrets.screen_relations(&self.relations)?;
        Ok(Checked::new(self))
    }
}

/// `delete_relations`: relations to delete.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeleteRelations {
    /// The relations, 1–1,000 per call.
    pub relations: Vec<RelationSpec>,
}

impl DeleteRelations {
    /// The relations `relations`.
    pub fn new(relations: &[RelationSpec]) -> Self {
        Self {
            relations: relations.to_vec(),
        }
    }

    /// The request if it holds 1–1,000 relations with valid names and types; else
    /// [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        relations_batch(&self.relations)?;
        Ok(Checked::new(self))
    }
}

/// `rename_relation_type`: one existing relation and its new type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RenameRelationType {
    /// Source node name.
    pub from_entity: String,
    /// Target node name.
    pub to_entity: String,
    /// The relation's current type.
    pub old_type: String,
    /// The new type; refused if that relation already exists.
    pub new_type: String,
}

impl RenameRelationType {
    /// `relation` to be renamed `new_type`.
    pub fn new(relation: &RelationSpec, new_type: impl Into<String>) -> Self {
        Self {
            from_entity: relation.from_entity.clone(),
            to_entity: relation.to_entity.clone(),
            old_type: relation.relation_type.clone(),
            new_type: new_type.into(),
        }
    }

    /// The relation as it is now.
    pub fn relation(&self) -> RelationSpec {
        RelationSpec::new(&self.from_entity, &self.to_entity, &self.old_type)
    }

    /// The request if the names and types are valid and the new type holds no text the secret
    /// policy refuses; else [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        limits::name("from_entity", &self.from_entity)?;
        limits::name("to_entity", &self.to_entity)?;
        limits::name("old_type", &self.old_type)?;
        limits::name("new_type", &self.new_type)?;
        secrets.screen_relation_type(&self.new_type)?;
        Ok(Checked::new(self))
    }
}

/// `get_relations_between`: two nodes, relations read in both directions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetRelationsBetween {
    /// One node.
    pub entity_a: String,
    /// The other node.
    pub entity_b: String,
    /// With ended ones.
    #[serde(default)]
    pub include_ended: bool,
    /// As it was then.
    #[serde(default)]
    pub as_of: Option<Timestamp>,
}

impl GetRelationsBetween {
    /// The relations between `entity_a` and `entity_b` now.
    pub fn new(entity_a: impl Into<String>, entity_b: impl Into<String>) -> Self {
        Self {
            entity_a: entity_a.into(),
            entity_b: entity_b.into(),
            include_ended: false,
            as_of: None,
        }
    }

    /// The same relations as `time` sees them.
    pub fn at(mut self, time: crate::ReadTime) -> Self {
        (self.include_ended, self.as_of) = time.into_request();
        self
    }

    /// Which relations the request reads.
    pub fn read_time(&self) -> crate::ReadTime {
        crate::ReadTime::from_request(self.include_ended, self.as_of).unwrap_or_default()
    }

    /// The request if both are valid node names and at most one of `include_ended` and
    /// `as_of` is given; else [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("entity_a", &self.entity_a)?;
        limits::name("entity_b", &self.entity_b)?;
        crate::ReadTime::from_request(self.include_ended, self.as_of)?;
        Ok(Checked::new(self))
    }
}

impl Tool for CreateRelations {
    const NAME: &'static str = "create_relations";
    const DESCRIPTION: &'static str = "Create directed typed relations between existing nodes.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
    };
    type Output = CreatedRelations;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check(context.secrets)?;
        context.store.create_relations(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        aliases::endpoint_names(&mut self.relations)
    }

    fn missed(&self, output: &Self::Output) -> Vec<String> {
        output.not_found.clone()
    }

    fn retry(&self, _: &Self::Output, aliased: &Aliased) -> Option<Self> {
        aliases::by_node_names(&self.relations, aliased).map(|relations| Self { relations })
    }

    fn join(
        &self,
        mut first: Self::Output,
        again: Self::Output,
        aliased: &Aliased,
    ) -> Self::Output {
        first.created.extend(again.created);
        first.already_existed.extend(again.already_existed);
        first.not_found.retain(|name| !aliased.contains_key(name));
        for name in again.not_found {
            if !first.not_found.contains(&name) {
                first.not_found.push(name);
            }
        }
        first
    }

    const SUGGESTS: bool = true;

    fn suggest(output: &mut Self::Output, close: BTreeMap<String, Vec<String>>) {
        output.did_you_mean = close;
    }
}

impl Tool for DeleteRelations {
    const NAME: &'static str = "delete_relations";
    const DESCRIPTION: &'static str = "Delete specific relations.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: true,
    };
    type Output = DeletedRelations;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        context.store.delete_relations(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        aliases::endpoint_names(&mut self.relations)
    }

    /// The answer counts what it did not find: any endpoint may be an alias.
    fn missed(&self, output: &Self::Output) -> Vec<String> {
        match output.not_found {
            0 => Vec::new(),
            _ => aliases::endpoints(&self.relations),
        }
    }

    /// The relations with an alias for an endpoint, by the nodes' names (one deleted already
    /// is not found again).
    fn retry(&self, _: &Self::Output, aliased: &Aliased) -> Option<Self> {
        aliases::by_node_names(&self.relations, aliased).map(|relations| Self { relations })
    }

    fn join(&self, mut first: Self::Output, again: Self::Output, _: &Aliased) -> Self::Output {
        first.deleted += again.deleted;
        first.not_found -= again.deleted.min(first.not_found);
        first
    }
}

impl Tool for RenameRelationType {
    const NAME: &'static str = "rename_relation_type";
    const DESCRIPTION: &'static str = "Change the type of one existing relation.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: false,
    };
    type Output = RenamedRelation;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check(context.secrets)?;
        let renamed = context
            .store
            .rename_relation_type(workspace, &request)
            .await?;
        Ok(RenamedRelation {
            from_entity: renamed.from_entity,
            to_entity: renamed.to_entity,
            old_type: request.into_inner().old_type,
            new_type: renamed.relation_type,
        })
    }
}

impl Tool for GetRelationsBetween {
    const NAME: &'static str = "get_relations_between";
    const DESCRIPTION: &'static str = "Every relation between two nodes, in both directions.";
    const EFFECT: Effect = Effect::Reads;
    type Output = RelationsResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        let relations = context.store.get_relations_between(workspace, &request);
        Ok(RelationsResult {
            relations: relations.await?,
        })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.entity_a, &mut self.entity_b]
    }
}

/// `rename_relation_type`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RenamedRelation {
    /// Source node name.
    pub from_entity: String,
    /// Target node name.
    pub to_entity: String,
    /// The type before.
    pub old_type: String,
    /// The type now.
    pub new_type: String,
}

/// `get_relations_between`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelationsResult {
    /// The relations linking the two nodes, both directions, sorted.
    pub relations: Vec<Relation>,
}

/// The relation tools.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<CreateRelations>();
    visitor.visit::<DeleteRelations>();
    visitor.visit::<RenameRelationType>();
    visitor.visit::<GetRelationsBetween>();
}

/// Relations: creating, deleting, renaming and reading typed relations.
#[async_trait]
pub trait RelationStore: Send + Sync + 'static {
    /// `create_relations`: creates the relations whose endpoints exist and that do not exist.
    async fn create_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateRelations>,
    ) -> Result<CreatedRelations>;
    /// `delete_relations`: deletes the given relations where they exist.
    async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteRelations>,
    ) -> Result<DeletedRelations>;
    /// `rename_relation_type`: changes one relation's type. [`crate::Error::NotFound`] when
    /// the relation does not exist, [`crate::Error::Conflict`] when the renamed relation
    /// already exists (nothing is changed then).
    async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<RenameRelationType>,
    ) -> Result<RelationSpec>;
    /// `get_relations_between`: relations linking the two nodes, in both directions.
    async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelationsBetween>,
    ) -> Result<Vec<Relation>>;
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

impl CreatedRelations {
    /// Records `spec` as a store meets it: an endpoint `missing` (`[from, to]`) puts its name
    /// in `not_found` (once) and skips the relation; else `create` writes it and says whether
    /// it is new (`created`) or was there (`already_existed`).
    ///
    /// # Errors
    /// What `create` reports.
    pub fn record(
        &mut self,
        spec: &RelationSpec,
        missing: [bool; 2],
        create: impl FnOnce() -> Result<bool>,
    ) -> Result<()> {
        for (missing, name) in missing
            .into_iter()
            .zip([&spec.from_entity, &spec.to_entity])
        {
            if missing && !self.not_found.contains(name) {
                self.not_found.push(name.clone());
            }
        }
        if missing.contains(&true) {
            return Ok(());
        }
        match create()? {
            true => self.created.push(spec.clone()),
            false => self.already_existed.push(spec.clone()),
        }
        Ok(())
    }
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
