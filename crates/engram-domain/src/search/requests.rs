//! The search tools: each tool's request is its MCP input (the field docs are the published
//! input schema's descriptions), built in code with `new` and the setters, and its `Tool`
//! impl checks it and runs it through the `Searcher` (`tools.rs`).

use std::collections::HashSet;

use derive_setters::Setters;
use serde::Deserialize;

use super::results::*;
use super::tools::{Scope, Searcher, neighbours_of, unrelated_pairs};
use crate::error::{Error, Result};
use crate::limits;
use crate::model::WorkspaceId;
use crate::search;
use crate::store::GetNodeVectors;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// The default number of results of `search_nodes` and `search_observations`.
pub const DEFAULT_SEARCH_LIMIT: u32 = 10;
/// The default number of pairs of `find_similar_nodes`.
pub const DEFAULT_SIMILAR_LIMIT: u32 = 20;
/// The default least cosine similarity of `find_similar_nodes` (the specification's 0.75).
pub const DEFAULT_SIMILAR_MIN_SCORE: f64 = 0.75;

fn default_search_limit() -> u32 {
    DEFAULT_SEARCH_LIMIT
}

/// `search_nodes`: the nodes best matching a query, each once with its best observation.
#[derive(Debug, Clone, PartialEq, Deserialize, Setters)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchNodes {
    /// In your own words, 1–4,096 bytes.
    pub query: String,
    /// At most this many nodes, 1–1,000. Default 10.
    #[serde(default = "default_search_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// "hybrid" (default), "embedding" (meaning) or "text" (exact terms).
    #[serde(default)]
    pub mode: SearchMode,
    /// Leave out results scoring below this (0–1); 0 keeps all.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    pub min_score: Option<f64>,
    /// Search the facts that held then.
    #[setters(strip_option)]
    #[serde(default)]
    pub as_of: Option<crate::Timestamp>,
}

impl SearchNodes {
    /// `query` with the defaults: 10 results, hybrid, the default `min_score`, now.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            limit: DEFAULT_SEARCH_LIMIT,
            mode: SearchMode::default(),
            min_score: None,
            as_of: None,
        }
    }
}

/// `search_observations`: the observations best matching a query across the workspace.
#[derive(Debug, Clone, PartialEq, Deserialize, Setters)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchObservations {
    /// In your own words, 1–4,096 bytes.
    pub query: String,
    /// At most this many observations, 1–1,000. Default 10.
    #[serde(default = "default_search_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// As in search_nodes.
    #[serde(default)]
    pub mode: SearchMode,
    /// Only these node types (at most 100).
    #[serde(default)]
    pub entity_types: Vec<String>,
    /// As in search_nodes.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    pub min_score: Option<f64>,
    /// As in search_nodes.
    #[setters(strip_option)]
    #[serde(default)]
    pub as_of: Option<crate::Timestamp>,
}

impl SearchObservations {
    /// `query` with the defaults: 10 results, hybrid, every type, the default `min_score`.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            limit: DEFAULT_SEARCH_LIMIT,
            mode: SearchMode::default(),
            entity_types: Vec::new(),
            min_score: None,
            as_of: None,
        }
    }
}

/// `query_observations`: one node's observations best matching a query.
#[derive(Debug, Clone, PartialEq, Deserialize, Setters)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct QueryObservations {
    /// The node whose observations to search.
    pub entity_name: String,
    /// What to look for, 1–4,096 bytes.
    pub query: String,
    /// As in search_nodes.
    #[serde(default)]
    pub mode: SearchMode,
    /// As in search_nodes.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    pub min_score: Option<f64>,
    /// Search the facts that held then.
    #[setters(strip_option)]
    #[serde(default)]
    pub as_of: Option<crate::Timestamp>,
}

impl QueryObservations {
    /// `query` within `entity_name`, with the defaults: hybrid, the default `min_score`, now.
    pub fn new(entity_name: impl Into<String>, query: impl Into<String>) -> Self {
        Self {
            entity_name: entity_name.into(),
            query: query.into(),
            mode: SearchMode::default(),
            min_score: None,
            as_of: None,
        }
    }
}

/// `find_similar_nodes`: unrelated pairs of similar nodes.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FindSimilarNodes {
    /// At most this many pairs, 1–1,000. Default 20.
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// Cosine similarity threshold, -1.0–1.0. Default 0.75.
    pub min_score: f64,
}

impl Default for FindSimilarNodes {
    fn default() -> Self {
        Self {
            limit: DEFAULT_SIMILAR_LIMIT,
            min_score: DEFAULT_SIMILAR_MIN_SCORE,
        }
    }
}

/// Checks a search's `min_score`: a number from 0 to 1.
fn check_min_score(min_score: Option<f64>) -> Result<()> {
    match min_score {
        Some(score) if !(0.0..=1.0).contains(&score) => Err(Error::invalid(
            "min_score",
            format!("must be from 0 to 1 (a calibrated score), got {score}"),
        )),
        _ => Ok(()),
    }
}

/// Queries: bytes, inclusive.
const QUERY_BYTES: std::ops::RangeInclusive<usize> = 1..=4_096;

/// Entity types a search may be narrowed to.
const MAX_ENTITY_TYPES: usize = 100;

fn check_query(query: &str) -> Result<()> {
    limits::no_nul("query", query)?;
    // A query of white space alone is as empty as none.
    let query = if query.trim().is_empty() { "" } else { query };
    limits::text("query", query, QUERY_BYTES)
}

/// A hit's signals less what the result says already: `text` in text mode, and in embedding
/// mode the matched perspective's `embedding:<perspective>` (when the result names it).
fn unsaid(mut signals: Vec<String>, mode: SearchMode, perspective: Option<&str>) -> Vec<String> {
    signals.retain(|signal| match mode {
        SearchMode::Hybrid => true,
        SearchMode::Text => signal != "text",
        SearchMode::Embedding => {
            perspective.is_none() || signal.strip_prefix("embedding:") != perspective
        }
    });
    signals
}

/// `query_observations` of the node `request` (checked) names, as it is named.
async fn node_observations(
    (store, search): (&dyn crate::NodeStore, &Searcher),
    workspace: WorkspaceId,
    request: &QueryObservations,
) -> Result<ObservationResults> {
    let QueryObservations {
        entity_name,
        query,
        mode,
        min_score,
        as_of,
    } = request;
    let (entity_name, query, mode, min_score) =
        (entity_name.as_str(), query.as_str(), *mode, *min_score);
    // Unknown nodes are an error, not an empty answer.
    let names = [entity_name.to_owned()];
    let time = as_of.map_or(crate::ReadTime::Now, crate::ReadTime::At);
    let opened = crate::nodes::open_checked(store, workspace, &names, time).await?;
    let Some(node) = opened.entities.first() else {
        return Err(Error::node_not_found(entity_name));
    };
    let scope = Scope {
        within: Some(entity_name),
        entity_types: &[],
        as_of: *as_of,
    };
    let depth = node.observations.len().max(1);
    let found = (search.retrieve(workspace, query, mode, scope, depth, min_score)).await?;
    let mut observations: Vec<ScoredObservation> = (found.ranked.into_iter())
        .map(|hit| ScoredObservation {
            ordinal: hit.row.ordinal,
            content: hit.row.content,
            valid_from: hit.row.valid_from,
            score: hit.score,
            signals: unsaid(hit.signals, found.mode, None),
        })
        .collect();
    let notice = within_answer(&mut observations, |o| &o.content, found.notice, "min_score");
    Ok(ObservationResults {
        observations,
        mode: found.mode,
        notice,
    })
}

/// The `limit` nodes best matching `query`, each once with its best-matching observation.
/// `mode`: hybrid (the default) fuses embedding similarity across every enabled perspective
/// with full-text rank ([`crate::search`]); embedding and text use one signal. When the model is
/// unavailable or no current vector matches, hybrid and embedding answer from full text and
/// say so in `notice`.
impl Tool for SearchNodes {
    const NAME: &'static str = "search_nodes";
    const DESCRIPTION: &'static str = "Find nodes by meaning and keywords, each once with its best observation, best first.\n\
`score` (0–1): how likely it is relevant (default min_score 0.8); ≥ 0.95 if a fact\n\
has every query word; of close facts the newer first. If none passes, `notice`\n\
names the best.";
    const EFFECT: Effect = Effect::Reads;
    type Output = SearchResults;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let SearchNodes {
            query,
            limit,
            mode,
            min_score,
            as_of,
        } = self;
        check_query(&query)?;
        limits::within("limit", limit, limits::LIMIT)?;
        check_min_score(min_score)?;
        let limit = limit as usize;
        // Several observations of one node may rank high: gather twice the nodes asked for.
        let depth = search::EMBEDDING_DEPTH.max(limit * 2);
        let scope = Scope {
            as_of,
            ..Scope::default()
        };
        let search = context.search;
        let found = (search.retrieve(workspace, &query, mode, scope, depth, min_score)).await?;
        let mut seen = HashSet::new();
        let results = (found.ranked.into_iter())
            .filter(|hit| seen.insert(hit.row.name.clone()))
            .take(limit)
            .map(|hit| SearchHit {
                signals: unsaid(hit.signals, found.mode, hit.perspective.as_deref()),
                name: hit.row.name,
                entity_type: hit.row.entity_type,
                summary: hit.row.summary,
                matched_observation: hit.row.content,
                ordinal: hit.row.ordinal,
                valid_from: hit.row.valid_from,
                matched_perspective: hit.perspective,
                score: hit.score,
            })
            .collect();
        Ok(SearchResults {
            results,
            mode: found.mode,
            notice: found.notice,
        })
    }

    fn found_nodes(output: &SearchResults) -> Vec<&str> {
        output.results.iter().map(|hit| hit.name.as_str()).collect()
    }
}

/// The `limit` observations of the whole workspace best matching `query`, each with its node,
/// so a node with many observations shows every one that matches; `entity_types` narrows the
/// search to nodes of those types. Modes and fallback as in `search_nodes`.
impl Tool for SearchObservations {
    const NAME: &'static str = "search_observations";
    const DESCRIPTION: &'static str =
        "Find single facts across the workspace, best first, each with its node.";
    const EFFECT: Effect = Effect::Reads;
    type Output = FoundObservations;

    fn accessed(output: &Self::Output) -> Vec<&str> {
        (output.observations.iter())
            .map(|hit| hit.name.as_str())
            .collect()
    }

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let SearchObservations {
            query,
            limit,
            mode,
            entity_types,
            min_score,
            as_of,
        } = self;
        check_query(&query)?;
        limits::within("limit", limit, limits::LIMIT)?;
        check_min_score(min_score)?;
        if entity_types.len() > MAX_ENTITY_TYPES {
            return Err(Error::invalid(
                "entity_types",
                format!(
                    "at most {MAX_ENTITY_TYPES} types, got {}",
                    entity_types.len()
                ),
            ));
        }
        for (index, entity_type) in entity_types.iter().enumerate() {
            limits::name(&format!("entity_types[{index}]"), entity_type)?;
        }
        let limit = limit as usize;
        let scope = Scope {
            within: None,
            entity_types: &entity_types,
            as_of,
        };
        let depth = search::EMBEDDING_DEPTH.max(limit);
        let search = context.search;
        let found = (search.retrieve(workspace, &query, mode, scope, depth, min_score)).await?;
        let mut observations: Vec<FoundObservation> = (found.ranked.into_iter().take(limit))
            .map(|hit| FoundObservation {
                name: hit.row.name,
                entity_type: hit.row.entity_type,
                ordinal: hit.row.ordinal,
                content: hit.row.content,
                valid_from: hit.row.valid_from,
                score: hit.score,
                signals: unsaid(hit.signals, found.mode, None),
            })
            .collect();
        let notice = within_answer(
            &mut observations,
            |o| &o.content,
            found.notice,
            "a lower limit",
        );
        Ok(FoundObservations {
            observations,
            mode: found.mode,
            notice,
        })
    }
}

/// The observations of one node best matching `query`, best first; a node asked by an alias
/// is asked again by its name. Modes and fallback as in `search_nodes`.
///
/// Errors: [`Error::NotFound`] for an unknown node (with "did you mean").
impl Tool for QueryObservations {
    const NAME: &'static str = "query_observations";
    const DESCRIPTION: &'static str =
        "Search within one node's observations, best match first (modes as in search_nodes).";
    const EFFECT: Effect = Effect::Reads;
    type Output = ObservationResults;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        limits::name("entity_name", &self.entity_name)?;
        check_query(&self.query)?;
        check_min_score(self.min_score)?;
        node_observations((context.store, context.search), workspace, &self).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.entity_name]
    }
}

/// Unrelated pairs whose aggregate vectors (in the `general` perspective, or the first enabled
/// one) have cosine similarity ≥ `min_score` (−1.0–1.0), best first, at most `limit`.
///
/// Errors: [`Error::Unavailable`] without an embedder.
impl Tool for FindSimilarNodes {
    const NAME: &'static str = "find_similar_nodes";
    const DESCRIPTION: &'static str =
        "Similar nodes that no relation links: candidates to relate or merge.";
    const EFFECT: Effect = Effect::Reads;
    type Output = SimilarNodesResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let FindSimilarNodes { limit, min_score } = self;
        let search = context.search;
        limits::within("limit", limit, limits::LIMIT)?;
        if !(-1.0..=1.0).contains(&min_score) {
            return Err(Error::invalid(
                "min_score",
                format!("must be between -1 and 1, got {min_score}"),
            ));
        }
        let model = search.required_embedder()?.model_id();
        let perspective = search.node_perspective(workspace).await?;
        let (vectors, related) = futures::try_join!(
            (search.store).node_vectors(GetNodeVectors {
                workspace,
                model,
                perspective: perspective.id
            }),
            search.store.related_pairs(workspace),
        )?;
        let (vectors, neighbours) = neighbours_of(vectors, min_score as f32).await?;
        let pairs = unrelated_pairs(
            &vectors,
            &neighbours,
            &related,
            min_score as f32,
            limit as usize,
        );
        Ok(SimilarNodesResult { pairs })
    }
}

/// `find_similar_nodes`' result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarNodesResult {
    /// Unrelated pairs of similar nodes, most similar first.
    pub pairs: Vec<SimilarPair>,
}

/// The search tools.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<SearchNodes>();
    visitor.visit::<SearchObservations>();
    visitor.visit::<QueryObservations>();
    visitor.visit::<FindSimilarNodes>();
}

/// `rows` cut to the text one answer holds ([`limits::rows_within_answer`]), with a notice
/// added to `notice` of how many lower-ranked rows were left out and that `fewer` asks for
/// fewer.
fn within_answer<T>(
    rows: &mut Vec<T>,
    text: impl Fn(&T) -> &String,
    mut notice: Option<String>,
    fewer: &str,
) -> Option<String> {
    let kept = limits::rows_within_answer(rows.iter().map(|row| text(row).len()));
    if kept < rows.len() {
        let message = format!(
            "{} lower-ranked result(s) left out past the {} MiB of text one answer holds: ask \
             with a narrower query or {fewer}",
            rows.len() - kept,
            limits::ANSWER_TEXT_BYTES / (1024 * 1024)
        );
        limits::add_notice(&mut notice, message);
        rows.truncate(kept);
    }
    notice
}
