//! The search tools: `search_nodes`, `search_observations`, `query_observations`,
//! `find_similar_nodes`, run by a [`Searcher`], which [`crate::Memory`] delegates them to.

use std::collections::HashSet;
use std::sync::Arc;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::limits;
use crate::model::WorkspaceId;
use crate::perspectives::{Perspective, render_query};
use crate::search::QueryEmbedding;
use crate::search::calibration;
use crate::search::requests::*;
use crate::search::results::*;
use crate::search::similarity::{self, Neighbour};
use crate::search::{self, CandidateQuery, QueryCues, QueryVector, Ranked};
use crate::store::{GetNodeVectors, MemoryStore};
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};
use crate::vectors::*;

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

/// Neighbours considered per node when pairing similar nodes (and clustering them).
pub(crate) const NODE_NEIGHBOURS: usize = 10;

/// Every node's [`NODE_NEIGHBOURS`] nearest other nodes with similarity ≥ `min_score`
/// ([`similarity::nearest_neighbours`]: about a second of matrix work at 10,000 nodes, so on
/// a blocking thread), with the vectors handed back.
pub(crate) async fn neighbours_of(
    vectors: Vec<NodeVector>,
    min_score: f32,
) -> Result<(Vec<NodeVector>, Vec<Vec<Neighbour>>)> {
    tokio::task::spawn_blocking(move || {
        let plain: Vec<&[f32]> = vectors.iter().map(|v| v.vector.as_slice()).collect();
        let neighbours = similarity::nearest_neighbours(&plain, NODE_NEIGHBOURS, min_score);
        (vectors, neighbours)
    })
    .await
    .map_err(|err| Error::Internal(format!("comparing node vectors: {err}")))
}

/// The `limit` most similar pairs of `neighbours` with similarity ≥ `min_score` that no
/// relation links (in either direction), names in order.
pub(crate) fn unrelated_pairs(
    vectors: &[NodeVector],
    neighbours: &[Vec<Neighbour>],
    related: &[(String, String)],
    min_score: f32,
    limit: usize,
) -> Vec<SimilarPair> {
    let related: HashSet<(&str, &str)> = related
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    similarity::pairs(neighbours, min_score)
        .into_iter()
        .map(|(a, b, similarity)| {
            let (a, b) = (&vectors[a], &vectors[b]);
            if a.name <= b.name {
                (a, b, similarity)
            } else {
                (b, a, similarity)
            }
        })
        .filter(|(a, b, _)| {
            !related.contains(&(a.name.as_str(), b.name.as_str()))
                && !related.contains(&(b.name.as_str(), a.name.as_str()))
        })
        .take(limit)
        .map(|(a, b, similarity)| SimilarPair {
            node_a: a.name.clone(),
            node_b: b.name.clone(),
            similarity: f64::from(similarity),
            node_a_type: a.entity_type.clone(),
            node_b_type: b.entity_type.clone(),
        })
        .collect()
}

/// Entity types a search may be narrowed to.
const MAX_ENTITY_TYPES: usize = 100;

/// Where a search looks: the whole workspace, one node, or nodes of some types.
#[derive(Default)]
struct Scope<'a> {
    within: Option<&'a str>,
    entity_types: &'a [String],
    /// The time whose facts are searched; `None`: now.
    as_of: Option<crate::Timestamp>,
}

/// Ranked observations, the mode that ranked them, and why it differs from the one asked for.
struct Retrieval {
    ranked: Vec<Ranked>,
    mode: SearchMode,
    notice: Option<String>,
}

/// What a search needs: the store, the embedder, and the query vectors' cache with the time a
/// search waits for the embedder. Cheap to clone (clones share the cache).
#[derive(Clone)]
pub(crate) struct Searcher {
    store: Arc<dyn MemoryStore>,
    embedder: Option<Arc<dyn Embedder>>,
    query_embedding: Arc<QueryEmbedding>,
    /// The indexer, for the texts its embedder rejected (found by full text only).
    indexer: Option<crate::Indexer>,
}

impl Searcher {
    /// Searches `store` from full text alone, waiting at most `budget` for an embedder once
    /// one is given ([`Searcher::with_embedder`]).
    pub(crate) fn new(store: Arc<dyn MemoryStore>, budget: std::time::Duration) -> Self {
        Self {
            store,
            embedder: None,
            query_embedding: Arc::new(QueryEmbedding::new(budget)),
            indexer: None,
        }
    }

    /// Knows `indexer`, to say which texts its embedder rejected.
    pub(crate) fn with_indexer(mut self, indexer: crate::Indexer) -> Self {
        self.indexer = Some(indexer);
        self
    }

    /// Embeds queries with `embedder`.
    pub(crate) fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Waits at most `budget` for the embedder, with an empty query cache.
    pub(crate) fn with_budget(mut self, budget: std::time::Duration) -> Self {
        self.query_embedding = Arc::new(QueryEmbedding::new(budget));
        self
    }

    /// The embedder queries are embedded with, if one is configured.
    pub(crate) fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The indexer filling the store's vectors, if this process runs one.
    pub(crate) fn indexer(&self) -> Option<&crate::Indexer> {
        self.indexer.as_ref()
    }

    /// The workspace's texts the indexer set aside (empty without an indexer).
    pub(crate) fn rejected_texts(&self, workspace: WorkspaceId) -> Vec<crate::RejectedText> {
        (self.indexer.as_ref()).map_or_else(Vec::new, |i| i.rejected_in(workspace))
    }

    /// Forgets the workspace's perspectives, so the next search reads them again.
    pub(crate) fn forget_perspectives(&self, workspace: WorkspaceId) {
        self.query_embedding.remember(workspace, None);
    }

    /// `query_observations` of the node `request` names, as it is named.
    async fn query_node_observations(
        &self,
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
        limits::name("entity_name", entity_name)?;
        check_query(query)?;
        check_min_score(min_score)?;
        // Unknown nodes are an error, not an empty answer.
        let names = [entity_name.to_owned()];
        let time = as_of.map_or(crate::ReadTime::Now, crate::ReadTime::At);
        let opened = crate::nodes::open_checked(&*self.store, workspace, &names, time).await?;
        let Some(node) = opened.entities.first() else {
            return Err(Error::node_not_found(entity_name));
        };
        let scope = Scope {
            within: Some(entity_name),
            entity_types: &[],
            as_of: *as_of,
        };
        let depth = node.observations.len().max(1);
        let found = (self.retrieve(workspace, query, mode, scope, depth, min_score)).await?;
        let observations = (found.ranked.into_iter())
            .map(|hit| ScoredObservation {
                ordinal: hit.row.ordinal,
                content: hit.row.content,
                score: hit.score,
                signals: unsaid(hit.signals, found.mode, None),
            })
            .collect();
        Ok(ObservationResults {
            observations,
            mode: found.mode,
            notice: found.notice,
        })
    }

    /// One search: the query's vectors (unless text mode), the store's candidates in one call,
    /// ranked. The query is rendered for the perspectives the workspace's last search saw
    /// (read from the store only for its first search in this process); the store call reads
    /// them again in its snapshot, and a search that finds them changed runs once more with
    /// the new ones. Falls back to full text, with a notice, when the embedder is unavailable
    /// or no stored vector of its model matched; in embedding mode that takes a second store
    /// call.
    async fn retrieve(
        &self,
        workspace: WorkspaceId,
        query: &str,
        mode: SearchMode,
        scope: Scope<'_>,
        depth: usize,
        min_score: Option<f64>,
    ) -> Result<Retrieval> {
        let with_names = self.with_aliased_names(workspace, query).await?;
        let query = with_names.as_str();
        // Text mode, and a memory without an embedder, render the query for no perspective.
        let mut seen = match (mode, &self.embedder) {
            (SearchMode::Text, _) | (_, None) => None,
            _ => Some(self.known_perspectives(workspace).await?),
        };
        let mut attempts = 0;
        let (mut request, mut notice, mut gathered) = loop {
            attempts += 1;
            let (request, notice) = self
                .candidate_query(
                    workspace,
                    query,
                    mode,
                    &scope,
                    depth,
                    seen.as_deref().map(Vec::as_slice),
                )
                .await?;
            let gathered = self.store.search(&request).await?;
            // Only a store call that read them says what they are now (none after the embedder failed).
            let changed = request.perspectives
                && (seen.as_deref()).is_some_and(|seen| *seen != gathered.perspectives);
            if changed {
                (self.query_embedding).remember(workspace, Some(gathered.perspectives.clone()));
            }
            // A second change while this search ran again is left to the next search.
            if !changed || attempts == 2 {
                break (request, notice, gathered);
            }
            // A perspective changed since this process last searched the workspace: render the
            // query for the perspectives the snapshot holds and search again.
            seen = self.query_embedding.perspectives(workspace);
        };
        let mut candidates = std::mem::take(&mut gathered.candidates);
        let embedding_matched = (candidates.iter()).any(|c| c.signals.nearest.contains(&true));
        // Texts the embedder refused are found by full text only: say so.
        let rejected = match mode {
            SearchMode::Text => Vec::new(),
            _ => self.rejected_texts(workspace),
        };
        let mut effective = mode;
        if mode != SearchMode::Text && !embedding_matched {
            effective = SearchMode::Text;
            if notice.is_none() {
                notice = Some(if request.vectors.is_empty() {
                    "every perspective of this workspace is disabled; answered by full-text search"
                        .to_owned()
                } else if rejected.is_empty() {
                    "no current embedding matched (indexing may still be running); answered by full-text search"
                        .to_owned()
                } else {
                    "no current embedding matched; answered by full-text search".to_owned()
                });
            }
            if request.text.is_none() {
                request.text = Some(query.to_owned());
                request.vectors.clear();
                candidates = self.store.search(&request).await?.candidates;
            }
        }
        if let Some(first) = rejected.first() {
            let refused = format!(
                "{} text(s) of this workspace were refused by the embedder (e.g. {} #{}: {}) \
                 and are found by full text only until it accepts them",
                rejected.len(),
                first.name,
                first.ordinal,
                first.reason
            );
            notice = Some(match notice {
                Some(notice) => format!("{notice}; {refused}"),
                None => refused,
            });
        }
        let cues = QueryCues::of(query);
        let mut ranked = search::rank(&request, candidates, effective, &cues);
        let model = self.embedder.as_ref().and_then(|e| e.calibration());
        if let Some((calibration, default, rescue)) =
            calibration::of_mode(effective, model.as_ref())
        {
            let found = ranked.len();
            let least = min_score.unwrap_or(default);
            let rescue = rescue.as_ref();
            let best_scored = search::calibrate(
                &mut ranked,
                &cues.terms,
                &calibration,
                least,
                rescue,
                effective,
            );
            if let Some((name, score)) = best_scored {
                let nothing = format!(
                    "nothing in memory matched: {found} candidate(s) scored below min_score \
                     {least} (the best: {name}, {score}); a lower min_score shows them"
                );
                notice = Some(match notice {
                    Some(notice) => format!("{notice}; {nothing}"),
                    None => nothing,
                });
            }
        } else if let Some(least) = min_score {
            ranked.retain(|r| r.score >= least);
        }
        Ok(Retrieval {
            ranked,
            mode: effective,
            notice,
        })
    }

    /// The perspective whose aggregate vectors stand for a node: `general`, or the first
    /// enabled one.
    ///
    /// Errors: [`Error::Conflict`] when every perspective is disabled.
    pub(crate) async fn node_perspective(&self, workspace: WorkspaceId) -> Result<Perspective> {
        let perspectives = self.store.perspectives(workspace).await?;
        let enabled = || perspectives.iter().filter(|p| p.enabled);
        enabled()
            .find(|p| p.name == "general")
            .or_else(|| enabled().next())
            .cloned()
            .ok_or_else(|| {
                Error::Conflict("every perspective of this workspace is disabled".into())
            })
    }

    fn required_embedder(&self) -> Result<&Arc<dyn Embedder>> {
        self.embedder
            .as_ref()
            .ok_or_else(|| Error::Unavailable("no embedding model is configured".into()))
    }

    /// What the store is asked for one search: the query's text (unless embedding mode found
    /// vectors) and its vectors for the enabled ones of `perspectives` (none in text mode,
    /// `perspectives` `None`), with the notice when the embedder could not give them.
    async fn candidate_query(
        &self,
        workspace: WorkspaceId,
        query: &str,
        mode: SearchMode,
        scope: &Scope<'_>,
        depth: usize,
        perspectives: Option<&[Perspective]>,
    ) -> Result<(CandidateQuery, Option<String>)> {
        let mut notice = None;
        let (model, vectors) = match mode {
            SearchMode::Text => (String::new(), Vec::new()),
            // Without an embedder `perspectives` is `None`, and this says so.
            _ => match self
                .query_vectors(query, perspectives.unwrap_or_default())
                .await
            {
                Ok(found) => found,
                Err(error) => {
                    notice = Some(fallback_notice(&error)?);
                    (String::new(), Vec::new())
                }
            },
        };
        let request = CandidateQuery {
            workspace,
            text: (mode != SearchMode::Embedding || vectors.is_empty()).then(|| query.to_owned()),
            model,
            vectors,
            depth,
            text_depth: depth * search::TEXT_DEPTH_FACTOR,
            within: scope.within.map(str::to_owned),
            entity_types: scope.entity_types.to_vec(),
            as_of: scope.as_of,
            // The perspectives are checked when the query was rendered for them (not when the
            // embedder failed: the search answers from text alone).
            perspectives: perspectives.is_some() && notice.is_none(),
        };
        Ok((request, notice))
    }

    /// `query` followed by the names of the nodes whose aliases it writes
    /// ([`crate::merge::named_by_aliases`]): searched, embedded and ranked as one query, so
    /// that a fact naming a node answers a query by its former name.
    async fn with_aliased_names(&self, workspace: WorkspaceId, query: &str) -> Result<String> {
        // A failed lookup searches the query as written, as every other alias lookup does.
        let names = (crate::merge::named_by_aliases(self.store.as_ref(), workspace, query).await)
            .unwrap_or_default();
        Ok(match names.is_empty() {
            true => query.to_owned(),
            false => format!("{query} {}", names.join(" ")),
        })
    }

    /// The workspace's perspectives as its last search saw them, or from the store for its
    /// first.
    async fn known_perspectives(&self, workspace: WorkspaceId) -> Result<Arc<Vec<Perspective>>> {
        if let Some(known) = self.query_embedding.perspectives(workspace) {
            return Ok(known);
        }
        let read = self.store.perspectives(workspace).await?;
        self.query_embedding.remember(workspace, Some(read.clone()));
        Ok(Arc::new(read))
    }

    /// The query rendered for every enabled perspective and embedded: identical renderings
    /// once, cached ones from the cache, the rest in one
    /// [`Embedder::embed_queries_with_tokens`] call. Returns the model id and one vector (with
    /// its token signs) per enabled perspective (none when all are disabled).
    async fn query_vectors(
        &self,
        query: &str,
        perspectives: &[Perspective],
    ) -> Result<(String, Vec<QueryVector>)> {
        let embedder = self.required_embedder()?;
        let model = embedder.model_id().to_owned();
        let rendered: Vec<(&Perspective, String)> = (perspectives.iter())
            .filter(|p| p.enabled)
            .map(|p| {
                let text = render_query(&p.query_template, query);
                (p, text)
            })
            .collect();
        let texts: Vec<String> = rendered.iter().map(|(_, text)| text.clone()).collect();
        let known = self.query_embedding.embed(embedder, &texts).await?;
        let vectors = (rendered.into_iter())
            .map(|(perspective, text)| QueryVector {
                perspective: perspective.id,
                perspective_name: perspective.name.clone(),
                vector: known[&text].vector.clone(),
                token_signs: known[&text].token_signs.clone(),
            })
            .collect();
        Ok((model, vectors))
    }
}

fn check_query(query: &str) -> Result<()> {
    limits::no_nul("query", query)?;
    if query.trim().is_empty() {
        return Err(Error::invalid("query", "must not be empty"));
    }
    if !QUERY_BYTES.contains(&query.len()) {
        return Err(Error::invalid(
            "query",
            format!("at most {} bytes, got {}", QUERY_BYTES.end(), query.len()),
        ));
    }
    Ok(())
}

/// The notice for answering from text because embedding failed; store errors propagate.
fn fallback_notice(error: &Error) -> Result<String> {
    match error {
        Error::Unavailable(reason) => Ok(format!(
            "embedding search unavailable ({reason}); answered by full-text search"
        )),
        other => Err(other.clone()),
    }
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

impl Tool for SearchNodes {
    const NAME: &'static str = "search_nodes";
    const DESCRIPTION: &'static str = "Find nodes by meaning and keywords, each once with its best observation, best first.\n\
`score` (0–1): how likely it is relevant, from it and the query alone (0.5 as likely\n\
as not; default min_score 0.8); if none passes, `notice` names the best and its\n\
score.";
    const EFFECT: Effect = Effect::Reads;
    type Output = SearchResults;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (search, request) = (context.search, &self);
        let SearchNodes {
            query,
            limit,
            mode,
            min_score,
            as_of,
        } = request;
        let (query, limit, mode, min_score) = (query.as_str(), *limit, *mode, *min_score);
        check_query(query)?;
        limits::within("limit", limit, limits::LIMIT)?;
        check_min_score(min_score)?;
        let limit = limit as usize;
        // Several observations of one node may rank high: gather twice the nodes asked for.
        let depth = search::EMBEDDING_DEPTH.max(limit * 2);
        let scope = Scope {
            as_of: *as_of,
            ..Scope::default()
        };
        let found = (search.retrieve(workspace, query, mode, scope, depth, min_score)).await?;
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

impl Tool for SearchObservations {
    const NAME: &'static str = "search_observations";
    const DESCRIPTION: &'static str =
        "Find single facts across the workspace, best first, each with its node.";
    const EFFECT: Effect = Effect::Reads;
    type Output = FoundObservations;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (search, request) = (context.search, &self);
        let SearchObservations {
            query,
            limit,
            mode,
            entity_types,
            min_score,
        } = request;
        let (query, limit, mode, min_score) = (query.as_str(), *limit, *mode, *min_score);
        check_query(query)?;
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
            entity_types,
            as_of: None,
        };
        let depth = search::EMBEDDING_DEPTH.max(limit);
        let found = (search.retrieve(workspace, query, mode, scope, depth, min_score)).await?;
        let observations = (found.ranked.into_iter().take(limit))
            .map(|hit| FoundObservation {
                name: hit.row.name,
                entity_type: hit.row.entity_type,
                ordinal: hit.row.ordinal,
                content: hit.row.content,
                score: hit.score,
                signals: unsaid(hit.signals, found.mode, None),
            })
            .collect();
        Ok(FoundObservations {
            observations,
            mode: found.mode,
            notice: found.notice,
        })
    }
}

impl Tool for QueryObservations {
    const NAME: &'static str = "query_observations";
    const DESCRIPTION: &'static str =
        "Search within one node's observations, best match first (modes as in search_nodes).";
    const EFFECT: Effect = Effect::Reads;
    type Output = ObservationResults;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (search, request) = (context.search, &self);
        let mut result = search.query_node_observations(workspace, request).await;
        if let Err(Error::NotFound {
            kind: "node", name, ..
        }) = &result
            && let Ok(found) =
                crate::merge::resolve(&*search.store, workspace, std::slice::from_ref(name)).await
            && let Some(node) = found.get(name)
        {
            let mut by_name = request.clone();
            by_name.entity_name.clone_from(node);
            result = search.query_node_observations(workspace, &by_name).await;
        }
        crate::suggestions::explain(&*search.store, workspace, result).await
    }
}

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
