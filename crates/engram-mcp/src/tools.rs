//! The tools: each parses its parameters, resolves the bound workspace, calls `Memory`, and
//! returns the catalog's result as structured JSON.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;

use crate::arguments::Parameters;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use crate::EngramServer;
use crate::error::ToolError;
use crate::params::*;
use crate::results::*;

fn relation_specs(relations: Vec<RelationInput>) -> Vec<RelationSpec> {
    relations
        .into_iter()
        .map(|r| RelationSpec {
            from_entity: r.from_entity,
            to_entity: r.to_entity,
            relation_type: r.relation_type,
        })
        .collect()
}

#[tool_router(vis = "pub(crate)")]
impl EngramServer {
    /// Create nodes (entities) with a type and optional observations, summary and tags.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn create_entities(
        &self,
        Parameters(params): Parameters<CreateEntitiesParams>,
        extensions: Extensions,
    ) -> Result<Json<CreateEntitiesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let entities = params
            .entities
            .into_iter()
            .map(|e| NewNode {
                name: e.name,
                entity_type: e.entity_type,
                observations: e.observations,
                summary: e.summary,
                tags: e.tags,
            })
            .collect();
        let entities = self.memory.create_entities(workspace, entities).await?;
        Ok(Json(CreateEntitiesResult { entities }))
    }

    /// Delete nodes with all their observations, relations (both directions) and history.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_entities(
        &self,
        Parameters(params): Parameters<DeleteEntitiesParams>,
        extensions: Extensions,
    ) -> Result<Json<DeletedNodes>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let deleted = self
            .memory
            .delete_entities(workspace, &params.entity_names)
            .await?;
        Ok(Json(deleted))
    }

    /// Read nodes in full: type, summary, tags, observations in ordinal order, and every
    /// relation touching them.
    #[tool(annotations(read_only_hint = true))]
    async fn open_nodes(
        &self,
        Parameters(params): Parameters<OpenNodesParams>,
        extensions: Extensions,
    ) -> Result<Json<OpenedNodes>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory.open_nodes(workspace, &params.names).await?,
        ))
    }

    /// List every node of one type.
    #[tool(annotations(read_only_hint = true))]
    async fn get_nodes_by_type(
        &self,
        Parameters(params): Parameters<NodesByTypeParams>,
        extensions: Extensions,
    ) -> Result<Json<TypedNodesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self
            .memory
            .get_nodes_by_type(workspace, &params.entity_type)
            .await?;
        Ok(Json(TypedNodesResult { nodes }))
    }

    /// Nodes changed (themselves or their observations, relations, tags or summary) in the last
    /// `days` days, newest first.
    #[tool(annotations(read_only_hint = true))]
    async fn get_recently_modified(
        &self,
        Parameters(params): Parameters<RecentlyModifiedParams>,
        extensions: Extensions,
    ) -> Result<Json<NodeBriefsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self
            .memory
            .get_recently_modified(workspace, params.days, params.limit)
            .await?;
        Ok(Json(NodeBriefsResult { nodes }))
    }

    /// Set or replace a node's summary.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn set_summary(
        &self,
        Parameters(params): Parameters<SetSummaryParams>,
        extensions: Extensions,
    ) -> Result<Json<SummaryUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let update = self
            .memory
            .set_summary(workspace, &params.name, &params.summary)
            .await?;
        Ok(Json(update))
    }

    /// Replace a node's whole tag set.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn set_tags(
        &self,
        Parameters(params): Parameters<SetTagsParams>,
        extensions: Extensions,
    ) -> Result<Json<TagsUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let update = self
            .memory
            .set_tags(workspace, &params.name, &params.tags)
            .await?;
        Ok(Json(update))
    }

    /// Append observations (facts) to existing nodes; each gets the node's next ordinal.
    #[tool(annotations(destructive_hint = false))]
    async fn add_observations(
        &self,
        Parameters(params): Parameters<AddObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<AddObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let additions: Vec<ObservationAdditions> = params
            .observations
            .into_iter()
            .map(|o| ObservationAdditions {
                entity_name: o.entity_name,
                contents: o.contents,
            })
            .collect();
        let results = self.memory.add_observations(workspace, &additions).await?;
        Ok(Json(AddObservationsResult { results }))
    }

    /// Replace one observation's text in place, keeping its ordinal.
    #[tool(annotations(idempotent_hint = true, destructive_hint = true))]
    async fn replace_observation(
        &self,
        Parameters(params): Parameters<ReplaceObservationParams>,
        extensions: Extensions,
    ) -> Result<Json<ReplacedObservation>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let replaced = self
            .memory
            .replace_observation(
                workspace,
                &params.entity_name,
                Ordinal(params.ordinal),
                &params.new_content,
            )
            .await?;
        Ok(Json(replaced))
    }

    /// Delete observations by ordinal; the others keep their ordinals.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_observations(
        &self,
        Parameters(params): Parameters<DeleteObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<DeleteObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let deletions: Vec<ObservationDeletions> = params
            .deletions
            .into_iter()
            .map(|d| ObservationDeletions {
                entity_name: d.entity_name,
                ordinals: d.ordinals.into_iter().map(Ordinal).collect(),
                contents: d.observations,
            })
            .collect();
        let results = self
            .memory
            .delete_observations(workspace, &deletions)
            .await?;
        Ok(Json(DeleteObservationsResult { results }))
    }

    /// Create directed typed relations between existing nodes.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn create_relations(
        &self,
        Parameters(params): Parameters<RelationsParams>,
        extensions: Extensions,
    ) -> Result<Json<CreatedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relations = relation_specs(params.relations);
        Ok(Json(
            self.memory.create_relations(workspace, &relations).await?,
        ))
    }

    /// Delete specific relations.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_relations(
        &self,
        Parameters(params): Parameters<RelationsParams>,
        extensions: Extensions,
    ) -> Result<Json<DeletedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relations = relation_specs(params.relations);
        Ok(Json(
            self.memory.delete_relations(workspace, &relations).await?,
        ))
    }

    /// Change the type of one existing relation.
    #[tool(annotations(idempotent_hint = false, destructive_hint = false))]
    async fn rename_relation_type(
        &self,
        Parameters(params): Parameters<RenameRelationTypeParams>,
        extensions: Extensions,
    ) -> Result<Json<RenamedRelation>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relation = RelationSpec {
            from_entity: params.from_entity,
            to_entity: params.to_entity,
            relation_type: params.old_type,
        };
        self.memory
            .rename_relation_type(workspace, &relation, &params.new_type)
            .await?;
        Ok(Json(RenamedRelation {
            from_entity: relation.from_entity,
            to_entity: relation.to_entity,
            old_type: relation.relation_type,
            new_type: params.new_type,
        }))
    }

    /// Every relation between two nodes, in both directions.
    #[tool(annotations(read_only_hint = true))]
    async fn get_relations_between(
        &self,
        Parameters(params): Parameters<RelationsBetweenParams>,
        extensions: Extensions,
    ) -> Result<Json<RelationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relations = self
            .memory
            .get_relations_between(workspace, &params.entity_a, &params.entity_b)
            .await?;
        Ok(Json(RelationsResult { relations }))
    }

    /// A node and every node within `depth` hops (relations followed in either direction),
    /// with the relations among them.
    #[tool(annotations(read_only_hint = true))]
    async fn get_neighborhood(
        &self,
        Parameters(params): Parameters<NeighborhoodParams>,
        extensions: Extensions,
    ) -> Result<Json<Neighborhood>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let neighborhood = self
            .memory
            .get_neighborhood(workspace, &params.name, params.depth)
            .await?;
        Ok(Json(neighborhood))
    }

    /// The shortest chain of relations (followed in either direction) between two nodes.
    #[tool(annotations(read_only_hint = true))]
    async fn get_path(
        &self,
        Parameters(params): Parameters<PathParams>,
        extensions: Extensions,
    ) -> Result<Json<GraphPath>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let path = self
            .memory
            .get_path(workspace, &params.from_entity, &params.to_entity)
            .await?;
        Ok(Json(path))
    }

    /// Nodes with no relation at all: candidates to link or to remove.
    #[tool(annotations(read_only_hint = true))]
    async fn get_orphaned_nodes(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<NodeBriefsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self.memory.get_orphaned_nodes(workspace).await?;
        Ok(Json(NodeBriefsResult { nodes }))
    }

    /// Nodes whose observations mention another node's name with no relation between the
    /// two: candidates for explicit relations (a heuristic; judge each).
    #[tool(annotations(read_only_hint = true))]
    async fn find_unlinked_references(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<UnlinkedReferencesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let references = self.memory.find_unlinked_references(workspace).await?;
        Ok(Json(UnlinkedReferencesResult { references }))
    }

    /// Where the graph needs attention: stale summaries (with drafts for set_summary),
    /// unrelated similar pairs (relate or merge them?), orphaned nodes, clusters of similar
    /// nodes, and counts of writes since `since`. It proposes; you decide.
    #[tool(annotations(read_only_hint = true))]
    async fn get_consolidation_report(
        &self,
        Parameters(params): Parameters<ConsolidationReportParams>,
        extensions: Extensions,
    ) -> Result<Json<ConsolidationReport>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let options = ReportOptions {
            since: params.since,
            limit: params.limit,
            min_score: params.min_score,
            cluster_min_score: params.cluster_min_score,
        };
        Ok(Json(
            self.memory
                .get_consolidation_report(workspace, options)
                .await?,
        ))
    }

    /// Nodes never summarised, or whose summary is older than their newest observation.
    #[tool(annotations(read_only_hint = true))]
    async fn get_pending_consolidation(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<PendingConsolidationResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self.memory.get_pending_consolidation(workspace).await?;
        Ok(Json(PendingConsolidationResult { nodes }))
    }

    /// Counts of nodes, observations and relations, embedding coverage, and texts the
    /// embedder refused (found by full text meanwhile).
    #[tool(annotations(read_only_hint = true))]
    async fn get_stats(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<Stats>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.get_stats(workspace).await?))
    }

    /// Find nodes by meaning and keywords, each once with its best-matching observation.
    /// `score` is the probability (0–1) that a result is relevant, comparable across
    /// queries; when nothing relevant is in memory, `results` is empty and `notice` says so.
    #[tool(annotations(read_only_hint = true))]
    async fn search_nodes(
        &self,
        Parameters(params): Parameters<SearchNodesParams>,
        extensions: Extensions,
    ) -> Result<Json<SearchResults>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self
            .memory
            .search_nodes(
                workspace,
                &params.query,
                params.limit,
                params.mode,
                params.min_score,
            )
            .await?;
        Ok(Json(results))
    }

    /// Search within one node's observations, best match first (modes as in search_nodes).
    #[tool(annotations(read_only_hint = true))]
    async fn query_observations(
        &self,
        Parameters(params): Parameters<QueryObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<ObservationResults>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self
            .memory
            .query_observations(
                workspace,
                &params.entity_name,
                &params.query,
                params.mode,
                params.min_score,
            )
            .await?;
        Ok(Json(results))
    }

    /// Find single facts (observations) across the workspace, best first, each with its node;
    /// unlike search_nodes, every matching observation of a node is listed.
    #[tool(annotations(read_only_hint = true))]
    async fn search_observations(
        &self,
        Parameters(params): Parameters<SearchObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<FoundObservations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self
            .memory
            .search_observations(
                workspace,
                &params.query,
                params.limit,
                params.mode,
                &params.entity_types,
                params.min_score,
            )
            .await?;
        Ok(Json(results))
    }

    /// Pairs of nodes whose content is similar but that no relation links: candidates to
    /// relate, merge or group during consolidation.
    #[tool(annotations(read_only_hint = true))]
    async fn find_similar_nodes(
        &self,
        Parameters(params): Parameters<FindSimilarNodesParams>,
        extensions: Extensions,
    ) -> Result<Json<SimilarNodesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let pairs = self
            .memory
            .find_similar_nodes(workspace, params.limit, params.min_score)
            .await?;
        Ok(Json(SimilarNodesResult { pairs }))
    }

    /// Walk the whole graph a page at a time: nodes in name order with the relations leaving
    /// them, the totals, and a `next_cursor` to pass back for the next page.
    #[tool(annotations(read_only_hint = true))]
    async fn read_graph(
        &self,
        Parameters(params): Parameters<ReadGraphParams>,
        extensions: Extensions,
    ) -> Result<Json<transfer::GraphPageResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let page = self
            .memory
            .read_graph(
                workspace,
                params.cursor.as_deref(),
                params.limit,
                params.entity_type.as_deref(),
                params.detail,
            )
            .await?;
        Ok(Json(page))
    }
}
