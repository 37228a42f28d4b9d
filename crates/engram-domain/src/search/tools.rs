//! The [`Searcher`] the search tools (`requests.rs`) run on: the store, the embedder, the query
//! vectors' cache and the indexer; one search's retrieval, and the vectors of similar nodes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::model::WorkspaceId;
use crate::perspectives::{Perspective, render_query};
use crate::search::QueryEmbedding;
use crate::search::calibration;
use crate::search::candidates::{CandidateQuery, QueryVector, SearchStore, TEXT_DEPTH_FACTOR};
use crate::search::ranking::{self, QueryCues, Ranked};
use crate::search::results::*;
use crate::search::similarity::{self, Neighbour};
use crate::vectors::*;

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

/// Where a search looks: the whole workspace, one node, or nodes of some types.
#[derive(Default)]
pub(crate) struct Scope<'a> {
    pub(crate) within: Option<&'a str>,
    pub(crate) entity_types: &'a [String],
    /// The time whose facts are searched; `None`: now.
    pub(crate) as_of: Option<crate::Timestamp>,
}

/// Ranked observations, the mode that ranked them, and why it differs from the one asked for.
pub(crate) struct Retrieval {
    pub(crate) ranked: Vec<Ranked>,
    pub(crate) mode: SearchMode,
    pub(crate) notice: Option<String>,
}

/// What a search needs: the store, the embedder, and the query vectors' cache with the time a
/// search waits for the embedder. Cheap to clone (clones share the cache).
#[derive(Clone)]
pub(crate) struct Searcher {
    pub(crate) store: Arc<dyn SearchStore>,
    embedder: Option<Arc<dyn Embedder>>,
    query_embedding: Arc<QueryEmbedding>,
    /// The indexer, for the texts its embedder rejected (found by full text only).
    indexer: Option<crate::Indexer>,
    /// Ranking by use, when the operator asked for it.
    access_ranking: Option<crate::AccessRanking>,
}

impl Searcher {
    /// Searches `store` from full text alone, waiting at most `budget` for an embedder once
    /// one is given ([`Searcher::with_embedder`]).
    pub(crate) fn new(store: Arc<dyn SearchStore>, budget: std::time::Duration) -> Self {
        Self {
            store,
            embedder: None,
            query_embedding: Arc::new(QueryEmbedding::new(budget)),
            indexer: None,
            access_ranking: None,
        }
    }

    /// Ranks by use too ([`crate::AccessRanking`]).
    pub(crate) fn with_access_ranking(mut self, ranking: crate::AccessRanking) -> Self {
        self.access_ranking = Some(ranking);
        self
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

    /// One search: the query's vectors (unless text mode), the store's candidates in one call,
    /// ranked. The query is rendered for the perspectives the workspace's last search saw
    /// (read from the store only for its first search in this process); the store call reads
    /// them again in its snapshot, and a search that finds them changed runs once more with
    /// the new ones. Falls back to full text, with a notice, when the embedder is unavailable
    /// or no stored vector of its model matched; in embedding mode that takes a second store
    /// call.
    pub(crate) async fn retrieve(
        &self,
        workspace: WorkspaceId,
        query: &str,
        mode: SearchMode,
        scope: Scope<'_>,
        depth: usize,
        min_score: Option<f64>,
    ) -> Result<Retrieval> {
        // Text mode, and a memory without an embedder, render the query for no perspective.
        let mut seen = match (mode, &self.embedder) {
            (SearchMode::Text, _) | (_, None) => None,
            _ => Some(self.known_perspectives(workspace).await?),
        };
        let alias_runs = crate::naming::aliases::alias_runs(query);
        // The query followed by the names of the nodes its aliases name, once the store said.
        let mut with_names: Option<String> = None;
        let mut perspectives_again = false;
        let (mut request, mut notice, mut gathered) = loop {
            let text = with_names.as_deref().unwrap_or(query);
            let (mut request, notice) = self
                .candidate_query(
                    workspace,
                    text,
                    mode,
                    &scope,
                    depth,
                    seen.as_deref().map(Vec::as_slice),
                )
                .await?;
            if with_names.is_none() {
                request.alias_runs.clone_from(&alias_runs);
            }
            let gathered = self.store.search(&request).await?;
            // Only a store call that read them says what they are now (none after the embedder failed).
            let changed = request.perspectives
                && (seen.as_deref()).is_some_and(|seen| *seen != gathered.perspectives);
            if changed {
                (self.query_embedding).remember(workspace, Some(gathered.perspectives.clone()));
            }
            // The query writes an alias: searched, embedded and ranked again with the names of
            // the nodes it names.
            let named = with_names.is_none() && !gathered.aliased.is_empty();
            if named {
                let mut names = gathered.aliased.clone();
                names.sort_unstable();
                names.dedup();
                with_names = Some(format!("{query} {}", names.join(" ")));
            }
            // A second change while this search ran again is left to the next search.
            let render_again = changed && !perspectives_again;
            if !render_again && !named {
                break (request, notice, gathered);
            }
            // A perspective changed since this process last searched the workspace: render the
            // query for the perspectives the snapshot holds and search again.
            if render_again {
                perspectives_again = true;
                seen = self.query_embedding.perspectives(workspace);
            }
        };
        let query = with_names.as_deref().unwrap_or(query);
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
                request.alias_runs.clear();
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
            crate::limits::add_notice(&mut notice, refused);
        }
        let cues = QueryCues::of(query);
        let mut ranked = ranking::rank(&request, candidates, effective, &cues);
        let model = self.embedder.as_ref().and_then(|e| e.calibration());
        // Use lifts calibrated scores' log-odds: a model without a calibration has none.
        let calibrated = calibration::of_mode(effective, model.as_ref()).is_some();
        if let Some(access) = self.access_ranking.as_ref().filter(|_| calibrated) {
            self.by_use(workspace, access, &mut ranked).await?;
        }
        let found = ranked.len();
        // Calibrated scores, or a model's uncalibrated ranking scores when a `min_score` is
        // given (none by default: they mean nothing across searches).
        let (least, best_scored) = match calibration::of_mode(effective, model.as_ref()) {
            Some((calibration, default, rescue)) => {
                let least = min_score.unwrap_or(default);
                let rescue = rescue.as_ref();
                let best =
                    ranking::calibrate(&mut ranked, &cues, &calibration, least, rescue, effective);
                (least, best)
            }
            None => match min_score {
                Some(least) => (least, ranking::keep_at_least(&mut ranked, least, None)),
                None => (0.0, None),
            },
        };
        if let Some((name, score)) = best_scored {
            let score = calibration::round(score);
            crate::limits::add_notice(&mut notice, nothing_matched(found, least, &name, score));
        } else if found == 0 {
            // No candidate at all (and so answered by full text: no vector matched either):
            // say so, as a search whose candidates all fell short does.
            crate::limits::add_notice(
                &mut notice,
                "nothing in memory matched: no current fact holds a word of the query".to_owned(),
            );
        }
        Ok(Retrieval {
            ranked,
            mode: effective,
            notice,
        })
    }

    /// `query` embedded as a search query in no perspective's template (cached as the
    /// searches' renderings are), with the model's id; `Err` holds the notice saying why it
    /// could not be (no embedder, or it is unavailable), so the caller answers from text.
    ///
    /// Errors: none of its own; the outer `Result` is for the embedder's answers that make no
    /// sense.
    pub(crate) async fn query_embedding(
        &self,
        query: &str,
    ) -> Result<std::result::Result<(String, Arc<crate::Embedding>), String>> {
        let Some(embedder) = &self.embedder else {
            return Ok(Err(
                "no embedding model is configured; answered by full-text search".into(),
            ));
        };
        let text = query.to_owned();
        match self
            .query_embedding
            .embed(embedder, std::slice::from_ref(&text))
            .await
        {
            Ok(mut known) => Ok(known
                .remove(&text)
                .map(|embedding| (embedder.model_id().to_owned(), embedding))
                .ok_or_else(|| "the embedder gave no vector; answered by full-text search".into())),
            Err(error) => Ok(Err(fallback_notice(&error)?)),
        }
    }

    /// Notes on each candidate what its node's use adds ([`crate::AccessRanking::boost`], in
    /// log-odds, [`ranking::Ranked::used`]), from one store call: its reads, their age, and how
    /// often it was found with the node ranked first.
    async fn by_use(
        &self,
        workspace: WorkspaceId,
        access: &crate::AccessRanking,
        ranked: &mut [Ranked],
    ) -> Result<()> {
        let Some(first) = ranked.first().map(|r| r.row.name.clone()) else {
            return Ok(());
        };
        let mut names: Vec<String> = ranked.iter().map(|r| r.row.name.clone()).collect();
        names.sort_unstable();
        names.dedup();
        let used = self.store.node_use(workspace, &names, &first).await?;
        let now = chrono::Utc::now();
        let by_name: std::collections::HashMap<&str, f64> = (used.iter())
            .map(|u| {
                let days =
                    now.signed_duration_since(u.last_read_at).num_seconds() as f64 / 86_400.0;
                (u.name.as_str(), access.boost(u.reads, days, u.together))
            })
            .collect();
        for r in ranked.iter_mut() {
            r.used = by_name.get(r.row.name.as_str()).copied().unwrap_or(0.0);
        }
        Ok(())
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

    pub(crate) fn required_embedder(&self) -> Result<&Arc<dyn Embedder>> {
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
            text_depth: depth * TEXT_DEPTH_FACTOR,
            within: scope.within.map(str::to_owned),
            entity_types: scope.entity_types.to_vec(),
            as_of: scope.as_of,
            // The perspectives are checked when the query was rendered for them (not when the
            // embedder failed: the search answers from text alone).
            perspectives: perspectives.is_some() && notice.is_none(),
            alias_runs: Vec::new(),
        };
        Ok((request, notice))
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

/// The notice of a search whose `found` candidates all scored below `least`, naming the best.
fn nothing_matched(found: usize, least: f64, name: &str, score: f64) -> String {
    format!(
        "nothing in memory matched: {found} candidate(s) scored below min_score {least} (the \
         best: {name}, {score}); a lower min_score shows them"
    )
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
