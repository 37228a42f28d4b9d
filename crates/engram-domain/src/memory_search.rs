//! The search tools of [`Memory`]: `search_nodes`, `query_observations`,
//! `find_similar_nodes`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::limits;
use crate::memory::Memory;
use crate::model::WorkspaceId;
use crate::perspectives::{Perspective, render_query};
use crate::search::*;
use crate::similarity::{self, Neighbour};

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

/// One query vector per enabled perspective.
struct QueryVectors {
    model: String,
    vectors: Vec<(Perspective, Vec<f32>)>,
}

impl Memory {
    /// `search_nodes`: the `limit` (1–1,000) nodes best matching `query` (1–4,096 bytes).
    ///
    /// Embedding mode embeds the query once per enabled perspective (identical renderings
    /// once), searches each perspective, and keeps each node's best score with its observation
    /// and perspective. When the model is unavailable or no current vector matches, it answers
    /// from full text and says so in `notice`.
    pub async fn search_nodes(
        &self,
        workspace: WorkspaceId,
        query: &str,
        limit: u32,
        mode: SearchMode,
    ) -> Result<SearchResults> {
        check_query(query)?;
        limits::within("limit", limit, limits::LIMIT)?;
        let limit = limit as usize;
        let mut notice = None;
        if mode == SearchMode::Embedding {
            match self
                .best_matches(workspace, query, limit * 2, None, |hit| hit.name.clone())
                .await
            {
                Ok(best) if !best.is_empty() => {
                    let mut results: Vec<SearchHit> = best
                        .into_iter()
                        .map(|(hit, perspective)| search_hit(hit, Some(&perspective)))
                        .collect();
                    results.sort_by(|a, b| {
                        b.score
                            .total_cmp(&a.score)
                            .then_with(|| a.name.cmp(&b.name))
                    });
                    results.truncate(limit);
                    return Ok(SearchResults {
                        results,
                        mode,
                        notice: None,
                    });
                }
                Ok(_) => {
                    notice = Some(
                        "no current embedding matched (indexing may still be running); answered by full-text search"
                            .to_owned(),
                    );
                }
                Err(error) => notice = Some(fallback_notice(&error)?),
            }
        }
        let hits = self
            .store
            .text_search(workspace, query, limit * 4, None)
            .await?;
        let mut results: Vec<SearchHit> = Vec::new();
        for hit in hits {
            if results.len() < limit && !results.iter().any(|r| r.name == hit.name) {
                results.push(search_hit(hit, None));
            }
        }
        Ok(SearchResults {
            results,
            mode: SearchMode::Text,
            notice,
        })
    }

    /// `query_observations`: the observations of one node best matching `query`, best first.
    /// Falls back from embedding to text mode as [`Memory::search_nodes`] does.
    pub async fn query_observations(
        &self,
        workspace: WorkspaceId,
        entity_name: &str,
        query: &str,
        mode: SearchMode,
    ) -> Result<ObservationResults> {
        limits::name("entity_name", entity_name)?;
        check_query(query)?;
        // Unknown nodes are an error, not an empty answer.
        let opened = self
            .store
            .open_nodes(workspace, &[entity_name.to_owned()])
            .await?;
        let Some(node) = opened.entities.first() else {
            return Err(Error::node_not_found(entity_name));
        };
        let all = node.observations.len().max(1);
        let mut notice = None;
        if mode == SearchMode::Embedding {
            match self
                .best_matches(workspace, query, all, Some(entity_name), |hit| hit.ordinal)
                .await
            {
                Ok(best) if !best.is_empty() => {
                    let mut observations: Vec<ScoredObservation> =
                        best.into_iter().map(|(hit, _)| scored(hit)).collect();
                    observations.sort_by(|a, b| {
                        b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal))
                    });
                    return Ok(ObservationResults {
                        observations,
                        mode,
                        notice: None,
                    });
                }
                Ok(_) => {
                    notice = Some(
                        "no current embedding for this node yet; answered by full-text search"
                            .to_owned(),
                    );
                }
                Err(error) => notice = Some(fallback_notice(&error)?),
            }
        }
        let hits = self
            .store
            .text_search(workspace, query, all, Some(entity_name))
            .await?;
        Ok(ObservationResults {
            observations: hits.into_iter().map(scored).collect(),
            mode: SearchMode::Text,
            notice,
        })
    }

    /// `find_similar_nodes`: unrelated pairs whose aggregate vectors (in the `general`
    /// perspective, or the first enabled one) have cosine similarity ≥ `min_score`
    /// (−1.0–1.0), best first, at most `limit` (1–1,000).
    ///
    /// Errors: [`Error::Unavailable`] without an embedder.
    pub async fn find_similar_nodes(
        &self,
        workspace: WorkspaceId,
        limit: u32,
        min_score: f64,
    ) -> Result<Vec<SimilarPair>> {
        limits::within("limit", limit, limits::LIMIT)?;
        if !(-1.0..=1.0).contains(&min_score) {
            return Err(Error::invalid(
                "min_score",
                format!("must be between -1 and 1, got {min_score}"),
            ));
        }
        let model = self.required_embedder()?.model_id();
        let perspective = self.node_perspective(workspace).await?;
        let (vectors, related) = futures::try_join!(
            self.store.node_vectors(workspace, model, perspective.id),
            self.store.related_pairs(workspace),
        )?;
        let (vectors, neighbours) = neighbours_of(vectors, min_score as f32).await?;
        Ok(unrelated_pairs(
            &vectors,
            &neighbours,
            &related,
            min_score as f32,
            limit as usize,
        ))
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

    /// Searches every enabled perspective for the `k` nearest observations (of the workspace,
    /// or of the node `within`) and keeps the best hit per `key`, with its perspective.
    async fn best_matches<K: Eq + std::hash::Hash>(
        &self,
        workspace: WorkspaceId,
        query: &str,
        k: usize,
        within: Option<&str>,
        key: impl Fn(&ObservationHit) -> K,
    ) -> Result<Vec<(ObservationHit, String)>> {
        let query_vectors = self.query_vectors(workspace, query).await?;
        let mut best: HashMap<K, (ObservationHit, String)> = HashMap::new();
        for (perspective, vector) in &query_vectors.vectors {
            let hits = self
                .store
                .vector_search(
                    workspace,
                    &query_vectors.model,
                    perspective.id,
                    vector,
                    k,
                    within,
                )
                .await?;
            for hit in hits {
                let slot = key(&hit);
                if best.get(&slot).is_none_or(|(b, _)| hit.score > b.score) {
                    best.insert(slot, (hit, perspective.name.clone()));
                }
            }
        }
        Ok(best.into_values().collect())
    }

    async fn query_vectors(&self, workspace: WorkspaceId, query: &str) -> Result<QueryVectors> {
        let embedder = self.required_embedder()?;
        let perspectives: Vec<Perspective> = self
            .store
            .perspectives(workspace)
            .await?
            .into_iter()
            .filter(|p| p.enabled)
            .collect();
        let mut by_text: HashMap<String, Vec<f32>> = HashMap::new();
        let mut vectors = Vec::with_capacity(perspectives.len());
        for perspective in perspectives {
            let text = render_query(&perspective.query_template, query);
            let vector = match by_text.get(&text) {
                Some(vector) => vector.clone(),
                None => {
                    let vector = embedder.embed_query(&text).await?;
                    by_text.insert(text, vector.clone());
                    vector
                }
            };
            vectors.push((perspective, vector));
        }
        Ok(QueryVectors {
            model: embedder.model_id().to_owned(),
            vectors,
        })
    }
}

fn check_query(query: &str) -> Result<()> {
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

fn search_hit(hit: ObservationHit, perspective: Option<&str>) -> SearchHit {
    SearchHit {
        name: hit.name,
        entity_type: hit.entity_type,
        summary: hit.summary,
        matched_observation: hit.content,
        matched_perspective: perspective.map(str::to_owned),
        score: hit.score,
    }
}

fn scored(hit: ObservationHit) -> ScoredObservation {
    ScoredObservation {
        ordinal: hit.ordinal,
        content: hit.content,
        score: hit.score,
    }
}
