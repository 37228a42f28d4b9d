//! `get_consolidation_report`: where the graph needs attention. The backend finds the
//! candidates; the model reading the report decides (specification, "Consolidation").

mod clusters;
mod drafts;
mod duplicates;
pub(crate) mod facts;
mod meaning;
mod scan;
mod splits;
pub(crate) mod store;

use std::sync::Arc;

use chrono::{Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::generate::{GenerationBudget, TextGenerator};
use crate::limits;
use crate::model::*;
use crate::search::results::SimilarPair;
use crate::search::similarity::Neighbour;
use crate::search::tools::Searcher;
use crate::search::{neighbours_of, unrelated_pairs};
use crate::store::{CountEvents, GetNodeVectors, ModelEmbeddings};
use crate::tool::MemoryStore;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};
use crate::vectors::NodeVector;

pub use clusters::CLUSTER_NEIGHBOURS;
pub use duplicates::{MergeCandidate, SAME_THING};
pub use facts::FactPair;
pub use meaning::FactPairCosines;
pub use splits::{GroupBrief, SPLIT_MIN_FACTS, SplitCandidate};
pub use store::{ConsolidationStore, EventCounts, PendingConsolidation};

/// Who wrote a generated text in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TextSource {
    /// The configured text model.
    Llm,
    /// Taken from the graph itself: observations, shared terms, names.
    Extractive,
}

/// A node whose summary is missing or older than its newest observation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StaleSummary {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// When its newest observation was written (what made the summary stale).
    pub last_modified: Timestamp,
    /// How many observations it holds.
    pub observation_count: i64,
    /// When its summary was last set; absent when never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_updated_at: Option<Timestamp>,
    /// A proposed summary, for the model to check and pass to `set_summary`; `null` when
    /// none could be written.
    pub draft_summary: Option<String>,
    /// Who wrote `draft_summary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_source: Option<TextSource>,
}

/// Two unrelated nodes similar enough that a relation (or a merge) may be due.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelationCandidate {
    /// One node (the name that sorts first).
    pub node_a: String,
    /// The other node.
    pub node_b: String,
    /// `node_a`'s type.
    pub node_a_type: String,
    /// `node_b`'s type.
    pub node_b_type: String,
    /// Cosine similarity of their aggregate vectors, −1 to 1.
    #[serde(serialize_with = "crate::compact::score")]
    pub similarity_score: f64,
    /// Why they may belong together; `null` when no rationale was written.
    pub rationale: Option<String>,
    /// Who wrote `rationale`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rationale_source: Option<TextSource>,
}

/// A group of nodes whose aggregate vectors are close to each other.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cluster {
    /// 1, 2, … in order of size, largest first (stable for one report only).
    pub cluster_id: i64,
    /// Its nodes, the most central first (at most [`MAX_CLUSTER_NAMES`]).
    pub node_names: Vec<String>,
    /// How many nodes it has (may exceed `node_names`' length).
    pub size: i64,
    /// A short name for what the nodes share; `null` when none was found.
    pub centroid_label: Option<String>,
    /// Who wrote `centroid_label`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_source: Option<TextSource>,
}

/// Names listed per cluster.
pub const MAX_CLUSTER_NAMES: usize = 50;

/// Result of `get_consolidation_report`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConsolidationReport {
    /// Nodes whose summary is missing or stale, oldest summary first.
    pub stale_summaries: Vec<StaleSummary>,
    /// Unrelated similar pairs, most similar first.
    pub relation_candidates: Vec<RelationCandidate>,
    /// Pairs of one type that may be one node written twice (by name, then by content),
    /// for `merge_entities`; absent when none (an extension).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merge_candidates: Vec<MergeCandidate>,
    /// Nodes whose many facts fall into distinct groups, largest first, for `propose_split`;
    /// absent when none (an extension).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub split_candidates: Vec<SplitCandidate>,
    /// Facts of one node that say one thing twice, for `delete_observations`; absent when
    /// none (an extension).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicate_observations: Vec<FactPair>,
    /// Current facts of one node where the newer looks like an update of the older (the same
    /// sentence with another number, date or word), for `end_observations`; absent when none
    /// (an extension).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub possibly_superseded: Vec<FactPair>,
    /// Nodes without relations, most recently updated first.
    pub orphaned_nodes: Vec<NodeBrief>,
    /// Nodes nobody wrote for `stale_days` and nobody read since, or read at most twice in all,
    /// least recently written first: to refresh or delete; absent when none (an extension).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_nodes: Vec<crate::StaleNode>,
    /// Clusters of similar nodes, largest first.
    pub cluster_summary: Vec<Cluster>,
    /// Writes since `since`.
    pub event_summary: EventCounts,
    /// What the report could not do fully, and why (lists cut at `limit`, no embedding model,
    /// vectors still being computed, generation that ran out of time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// `get_consolidation_report`: what the report looks at; every field is optional.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct GetConsolidationReport {
    /// event_summary from then. Default: 7 days ago.
    pub since: Option<Timestamp>,
    /// Per list, 1–1,000. Default 20.
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// Least cosine of a relation candidate. Default 0.75.
    pub min_score: f64,
    /// Least cosine of neighbours in a cluster. Default 0.6.
    pub cluster_min_score: f64,
    /// Days unwritten: stale_nodes.
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 36500)))]
    pub stale_days: u32,
}

impl Default for GetConsolidationReport {
    /// The last 7 days, 20 per list, candidates from 0.75 (as `find_similar_nodes`), clusters
    /// from 0.6.
    fn default() -> Self {
        Self {
            since: None,
            limit: crate::search::requests::DEFAULT_SIMILAR_LIMIT,
            min_score: crate::search::requests::DEFAULT_SIMILAR_MIN_SCORE,
            cluster_min_score: 0.6,
            stale_days: 90,
        }
    }
}

impl GetConsolidationReport {
    /// The request if `limit` is 1–1,000, both scores are −1–1 and `since` is a time engram
    /// can store; else [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::within("limit", self.limit, limits::LIMIT)?;
        score_in_range("min_score", self.min_score)?;
        score_in_range("cluster_min_score", self.cluster_min_score)?;
        limits::within("stale_days", self.stale_days, limits::DAYS)?;
        if let Some(since) = self.since {
            limits::timestamp("since", since)?;
        }
        Ok(Checked::new(self))
    }
}

/// What a report reads from: the store, the embedder (pairs and clusters), the text generator
/// and its budget (drafts), and the search tools (the node perspective).
pub(crate) struct Reporter<'a> {
    pub(crate) store: &'a dyn MemoryStore,
    pub(crate) embedder: Option<&'a Arc<dyn Embedder>>,
    pub(crate) generator: Option<&'a Arc<dyn TextGenerator>>,
    pub(crate) budget: GenerationBudget,
    pub(crate) search: &'a Searcher,
}

impl Reporter<'_> {
    /// The report, as the `get_consolidation_report` tool describes it.
    pub(crate) async fn report(
        &self,
        workspace: WorkspaceId,
        options: GetConsolidationReport,
    ) -> Result<ConsolidationReport> {
        let options = options.check()?.into_inner();
        let limit = options.limit as usize;
        let since = options
            .since
            .unwrap_or_else(|| Utc::now() - Duration::days(7));
        let mut notices = Vec::new();

        let stale_before = Utc::now() - Duration::days(i64::from(options.stale_days));
        let (pending, orphans, event_summary, mut stale_nodes) = futures::try_join!(
            self.store.get_pending_consolidation(workspace),
            self.store.get_orphaned_nodes(workspace),
            self.store.event_counts(CountEvents { workspace, since }),
            self.store
                .stale_nodes(workspace, stale_before, options.limit),
        )?;
        // Read with one more than `limit`, so that a cut shows.
        if stale_nodes.len() > limit {
            stale_nodes.truncate(limit);
            notices.push(format!(
                "stale_nodes: showing the first {limit}; raise `limit` to see more"
            ));
        }
        let mut stale_summaries: Vec<StaleSummary> = pending
            .into_iter()
            .map(|p| StaleSummary {
                name: p.name,
                entity_type: p.entity_type,
                last_modified: p.last_observation_at,
                observation_count: p.observation_count,
                summary_updated_at: p.summary_updated_at,
                draft_summary: None,
                draft_source: None,
            })
            .collect();
        cut("stale_summaries", &mut stale_summaries, limit, &mut notices);
        let mut orphaned_nodes = orphans;
        orphaned_nodes.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.name.cmp(&b.name)));
        cut("orphaned_nodes", &mut orphaned_nodes, limit, &mut notices);

        let similarity = self
            .similarity_inputs(workspace, &options, &mut notices)
            .await?
            .unwrap_or_default();
        let mut clusters = clusters::find(
            &similarity.vectors,
            &similarity.neighbours,
            options.cluster_min_score as f32,
        );
        if clusters.len() > limit {
            notices.push(format!(
                "cluster_summary: showing the {limit} largest of {} clusters",
                clusters.len()
            ));
            clusters.truncate(limit);
        }
        let cluster_summary = clusters
            .iter()
            .zip(1..)
            .map(|(members, cluster_id)| Cluster {
                cluster_id,
                node_names: members
                    .iter()
                    .take(MAX_CLUSTER_NAMES)
                    .map(|&m| similarity.vectors[m].name.clone())
                    .collect(),
                size: members.len() as i64,
                centroid_label: None,
                label_source: None,
            })
            .collect();

        // The pairwise passes (facts within each node, then groupings of the largest nodes)
        // share one budget, so that a report of long facts still answers within a call's time.
        let deadline = std::time::Instant::now() + crate::grouping::ANALYSIS_BUDGET;
        let mut scan = scan::scan(self.store, workspace, deadline).await?;
        let model = self.embedder.map(|e| e.model_id());
        let cosines = self.embedder.and_then(|e| e.fact_pairs());
        // Without an enabled perspective no fact has a vector to compare.
        if let (Some(model), Some(cosines), Some(perspective)) =
            (model, cosines, similarity.perspective)
        {
            let vectors = (model, perspective);
            let passes = (&mut scan, &mut notices);
            meaning::add(self.store, workspace, vectors, cosines, passes, deadline).await?;
        }
        if scan.uncompared > 0 {
            notices.push(format!(
                "duplicate_observations, possibly_superseded: the facts of {} nodes were not \
                 (wholly) compared within the report's {} s",
                scan.uncompared,
                crate::grouping::ANALYSIS_BUDGET.as_secs()
            ));
        }
        let merge_candidates = duplicates::find(
            &scan.nodes,
            &similarity.vectors,
            &similarity.neighbours,
            limit,
        );
        let vectors = (model, similarity.perspective);
        let mut split_candidates = splits::find(
            self.store,
            workspace,
            vectors,
            &scan,
            deadline,
            &mut notices,
        )
        .await?;
        cut(
            "split_candidates",
            &mut split_candidates,
            limit,
            &mut notices,
        );
        let (mut duplicate_observations, mut possibly_superseded) =
            (scan.duplicates, scan.versions);
        cut(
            "duplicate_observations",
            &mut duplicate_observations,
            limit,
            &mut notices,
        );
        cut(
            "possibly_superseded",
            &mut possibly_superseded,
            limit,
            &mut notices,
        );
        let mut report = ConsolidationReport {
            stale_summaries,
            relation_candidates: similarity.pairs.into_iter().map(Into::into).collect(),
            merge_candidates,
            split_candidates,
            duplicate_observations,
            possibly_superseded,
            orphaned_nodes,
            stale_nodes,
            cluster_summary,
            event_summary,
            notices,
        };
        drafts::write(
            self,
            workspace,
            similarity.perspective,
            &similarity.vectors,
            &mut report,
        )
        .await?;
        Ok(report)
    }

    /// Unrelated similar pairs and every node vector, in the node perspective; `None` (with a
    /// notice) when there is no embedding model.
    async fn similarity_inputs(
        &self,
        workspace: WorkspaceId,
        options: &GetConsolidationReport,
        notices: &mut Vec<String>,
    ) -> Result<Option<Similarity>> {
        let Some(embedder) = self.embedder else {
            notices.push(
                "no embedding model is configured: relation_candidates and cluster_summary \
                 need one"
                    .into(),
            );
            return Ok(None);
        };
        let model = embedder.model_id();
        let perspective = match self.search.node_perspective(workspace).await {
            Ok(perspective) => perspective,
            Err(Error::Conflict(reason)) => {
                notices.push(format!(
                    "{reason}: relation_candidates and cluster_summary need one"
                ));
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let (vectors, related, coverage) = futures::try_join!(
            (self.store).node_vectors(GetNodeVectors {
                workspace,
                model,
                perspective: perspective.id
            }),
            self.store.related_pairs(workspace),
            self.store
                .embedding_coverage(ModelEmbeddings { workspace, model }),
        )?;
        // One all-pairs pass serves both sections: each keeps the neighbours above its own
        // threshold (the top 10 above the lower one include the top 10 above the higher).
        let lowest = options.min_score.min(options.cluster_min_score) as f32;
        let (vectors, neighbours) = neighbours_of(vectors, lowest).await?;
        let pairs = unrelated_pairs(
            &vectors,
            &neighbours,
            &related,
            options.min_score as f32,
            options.limit as usize,
        );
        if coverage < 1.0 {
            notices.push(format!(
                "{:.0}% of observations are embedded so far; relation_candidates and \
                 cluster_summary cover those",
                coverage * 100.0
            ));
        }
        Ok(Some(Similarity {
            pairs,
            vectors,
            neighbours,
            perspective: Some(perspective.id),
        }))
    }
}

/// What the report's similarity sections are computed from.
#[derive(Default)]
struct Similarity {
    /// Unrelated similar pairs, as `find_similar_nodes` finds them.
    pairs: Vec<SimilarPair>,
    /// Every node's aggregate vector in `perspective`.
    vectors: Vec<NodeVector>,
    /// Each node's nearest neighbours (indices into `vectors`).
    neighbours: Vec<Vec<Neighbour>>,
    /// The node perspective's id.
    perspective: Option<PerspectiveId>,
}

impl From<SimilarPair> for RelationCandidate {
    fn from(pair: SimilarPair) -> Self {
        Self {
            node_a: pair.node_a,
            node_b: pair.node_b,
            node_a_type: pair.node_a_type,
            node_b_type: pair.node_b_type,
            similarity_score: pair.similarity,
            rationale: None,
            rationale_source: None,
        }
    }
}

fn score_in_range(field: &str, score: f64) -> Result<()> {
    if (-1.0..=1.0).contains(&score) {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!("must be between -1 and 1, got {score}"),
        ))
    }
}

/// Keeps the first `limit` entries of a list and says so when it had more.
fn cut<T>(field: &str, list: &mut Vec<T>, limit: usize, notices: &mut Vec<String>) {
    if list.len() > limit {
        notices.push(format!(
            "{field}: showing {limit} of {}; raise `limit` to see more",
            list.len()
        ));
        list.truncate(limit);
    }
}

impl Tool for GetConsolidationReport {
    const NAME: &'static str = "get_consolidation_report";
    const DESCRIPTION: &'static str = "What needs attention: stale summaries (set_summary), merge_candidates (merge_entities),\n\
possibly_superseded (end_observations), duplicate_observations (delete_observations),\n\
split_candidates (propose_split), stale_nodes, similar pairs, orphans, clusters.";
    const EFFECT: Effect = Effect::Reads;
    type Output = ConsolidationReport;

    /// Stale summaries with drafts, unrelated similar pairs with rationales, orphans,
    /// clusters with labels, and event counts; each list holds at most `limit` entries. Pairs
    /// and clusters need an embedding model and current node vectors; without them those
    /// lists are empty and `notices` says why. Drafts, rationales and labels come from the
    /// text generator when one is configured and answers within the report's
    /// [`GenerationBudget`]; otherwise they are extractive. Nothing here fails because of the
    /// generator.
    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let reporter = Reporter {
            store: context.store,
            embedder: context.search.embedder(),
            generator: context.generator,
            budget: context.generation_budget,
            search: context.search,
        };
        reporter.report(workspace, self).await
    }
}

/// `get_pending_consolidation` takes no arguments: any is refused as unknown.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetPendingConsolidation {}

impl Tool for GetPendingConsolidation {
    const NAME: &'static str = "get_pending_consolidation";
    const DESCRIPTION: &'static str =
        "Nodes never summarised, or summarised before their newest fact.";
    const EFFECT: Effect = Effect::Reads;
    type Output = PendingConsolidationResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let nodes = context.store.get_pending_consolidation(workspace).await?;
        Ok(PendingConsolidationResult { nodes })
    }
}

/// The consolidation tools.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<GetConsolidationReport>();
    visitor.visit::<GetPendingConsolidation>();
}

/// `get_pending_consolidation`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingConsolidationResult {
    /// Nodes whose summary is missing or older than their newest observation.
    pub nodes: Vec<PendingConsolidation>,
}
