//! What a store is asked: one struct per operation that takes more than a workspace, named
//! after the tool it serves, so an operation's arguments are written once here and every
//! layer (the trait, both stores, the call-counting wrapper) passes them as one value.
//!
//! Texts a store writes travel as [`Checked`], which only this crate can make: a request
//! holding one can only come from [`crate::Memory`], after the limits and the secret screening.
//! Requests borrow what the caller passed (no copies) and are `Copy`.

use crate::checked::Checked;
use crate::model::*;
use crate::perspectives::Perspective;
use crate::transfer::{NodeRecord, RelationRecord};
use crate::vectors::PendingCursor;

/// `create_entities`: nodes to create with their observations.
#[derive(Debug, Clone, Copy)]
pub struct CreateEntities<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The nodes, validated.
    pub entities: Checked<&'a [NewNode]>,
}

/// `delete_entities`: nodes to delete by name.
#[derive(Debug, Clone, Copy)]
pub struct DeleteEntities<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Node names, as given (repeats allowed).
    pub names: &'a [String],
}

/// `open_nodes`: nodes to read by name.
#[derive(Debug, Clone, Copy)]
pub struct OpenNodes<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Node names, as given (repeats allowed).
    pub names: &'a [String],
}

/// `get_nodes_by_type`: the nodes of one type.
#[derive(Debug, Clone, Copy)]
pub struct GetNodesByType<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The type.
    pub entity_type: &'a str,
}

/// `get_recently_modified`: nodes written in the last `days` days, at most `limit`.
#[derive(Debug, Clone, Copy)]
pub struct GetRecentlyModified {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// How far back, in days.
    pub days: u32,
    /// At most this many.
    pub limit: u32,
}

/// `set_summary`: a node's new summary.
#[derive(Debug, Clone, Copy)]
pub struct SetSummary<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The node.
    pub name: &'a str,
    /// The summary, validated.
    pub summary: Checked<&'a str>,
}

/// `set_tags`: a node's new tag set, de-duplicated.
#[derive(Debug, Clone, Copy)]
pub struct SetTags<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The node.
    pub name: &'a str,
    /// The tags, validated and de-duplicated.
    pub tags: Checked<&'a [String]>,
}

/// `add_observations`: observations to append, per node.
#[derive(Debug, Clone, Copy)]
pub struct AddObservations<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Per node, the texts to append, validated.
    pub additions: Checked<&'a [ObservationAdditions]>,
}

/// `replace_observation`: an observation's new text, kept at its ordinal.
#[derive(Debug, Clone, Copy)]
pub struct ReplaceObservation<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The node.
    pub entity_name: &'a str,
    /// The observation's ordinal.
    pub ordinal: Ordinal,
    /// The new text, validated.
    pub new_content: Checked<&'a str>,
}

/// `delete_observations`: ordinals to delete, per node.
#[derive(Debug, Clone, Copy)]
pub struct DeleteObservations<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Per node, the ordinals to delete.
    pub deletions: &'a [ObservationDeletions],
}

/// `create_relations`: relations to create.
#[derive(Debug, Clone, Copy)]
pub struct CreateRelations<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The relations, validated.
    pub relations: Checked<&'a [RelationSpec]>,
}

/// `delete_relations`: relations to delete.
#[derive(Debug, Clone, Copy)]
pub struct DeleteRelations<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The relations.
    pub relations: &'a [RelationSpec],
}

/// `rename_relation_type`: one relation and its new type.
#[derive(Debug, Clone, Copy)]
pub struct RenameRelationType<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The relation.
    pub relation: &'a RelationSpec,
    /// The new relation type, validated.
    pub new_type: Checked<&'a str>,
}

/// `get_relations_between`: two nodes, relations read in both directions.
#[derive(Debug, Clone, Copy)]
pub struct GetRelationsBetween<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// One node.
    pub entity_a: &'a str,
    /// The other node.
    pub entity_b: &'a str,
}

/// `get_neighborhood`: a node and how many hops to follow.
#[derive(Debug, Clone, Copy)]
pub struct GetNeighborhood<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The node.
    pub name: &'a str,
    /// Hops to follow, relations in either direction.
    pub depth: u32,
}

/// `get_path`: the two ends of a path.
#[derive(Debug, Clone, Copy)]
pub struct GetPath<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The node the path starts at.
    pub from: &'a str,
    /// The node the path ends at.
    pub to: &'a str,
}

/// `engram import`: one batch of recorded nodes and relations.
#[derive(Debug, Clone, Copy)]
pub struct ImportBatch<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The nodes as recorded, validated.
    pub nodes: Checked<&'a [NodeRecord]>,
    /// The relations as recorded, validated.
    pub relations: Checked<&'a [RelationRecord]>,
}

/// Creating or changing one of a workspace's perspectives.
#[derive(Debug, Clone, Copy)]
pub struct SetPerspective<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The perspective.
    pub perspective: &'a Perspective,
}

/// The indexer's next pass: at most `limit` pending pairs of `model`, from `cursor` on.
#[derive(Debug, Clone, Copy)]
pub struct PendingEmbeddings<'a> {
    /// The embedding model.
    pub model: &'a str,
    /// At most this many.
    pub limit: usize,
    /// Where the last pass stopped.
    pub cursor: &'a PendingCursor,
}

/// The nodes' aggregate vectors of one model in one perspective.
#[derive(Debug, Clone, Copy)]
pub struct GetNodeVectors<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The embedding model.
    pub model: &'a str,
    /// The perspective's id.
    pub perspective: PerspectiveId,
}
