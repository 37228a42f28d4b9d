//! What a store sees of a search: the [`CandidateQuery`] it answers in one snapshot and the
//! [`Candidate`]s it hands back, each observation with every signal's raw score.
//!
//! A store answers one [`CandidateQuery`]: the `depth` nearest observations per query vector,
//! the `text_depth` best full-text matches, and then, for every candidate found by either, its
//! stored vector in each perspective (from which [`CandidateSet`] computes the similarities
//! the nearest-neighbour search did not give) and its full-text score, so that ranking
//! ([`super::rank`]) compares like with like and can compare candidates with one another
//! (hubness). [`CandidateSet`] does the bookkeeping so that stores only run SQL.

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{Timestamp, WorkspaceId};
use crate::perspectives::Perspective;
use crate::search::results::ObservationHit;
use crate::store::*;
use crate::vectors::IndexStore;

/// Nearest observations gathered per query vector, at the least (more when a search asks for
/// more results).
pub const EMBEDDING_DEPTH: usize = 50;

/// Full-text matches gathered, as a multiple of the embedding depth: keyword matches are
/// cheap to gather and a deep list keeps a strong keyword match that embeddings rank low.
pub const TEXT_DEPTH_FACTOR: usize = 2;

/// Nodes whose names a query writes, at most, whose facts become candidates
/// ([`CandidateSet::add_named`]): a name is found when no fact repeats it and no vector comes
/// near it ("CND-881", "ADR-7 Kafka").
pub const NAMED_NODES: usize = 10;

/// The newest current facts of each named node that become candidates.
pub const NAMED_FACTS: usize = 5;

/// What a store looks up among node names for a query: its words that are not stop words
/// (lower-cased, split as node names are, each once), and how many of them a name must hold
/// for the query to name the node by part of its name — all of them when every word of the
/// query is such a word ("Kafka", "CND-881"), else none (0: a question names a node only by
/// its whole name, every word of which it writes: "what does engram-pg keep?"). A store
/// finds the nodes whose names hold `required` of the words (when not 0), or whose every name
/// word is one of them, [`NAMED_NODES`] at most.
pub fn name_probe(text: &str) -> (Vec<String>, usize) {
    let mut words = crate::suggestions::name_words(text);
    let count = words.len();
    words.retain(|word| !crate::search::words::is_stop_word(word));
    let required = if words.len() == count { count } else { 0 };
    (words, required)
}

/// One query vector: the query rendered for a perspective, embedded.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryVector {
    /// The perspective's id.
    pub perspective: crate::PerspectiveId,
    /// The perspective's name, for the result's signals.
    pub perspective_name: String,
    /// The vector.
    pub vector: Vec<f32>,
    /// Its token signs ([`crate::Embedding::token_signs`]), when the model gives them and
    /// the search ranks by them; a store reads the candidates' token signs only then.
    pub token_signs: Option<Vec<u8>>,
}

/// What a store gathers for one search ([`crate::SearchStore::search`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateQuery {
    /// The workspace searched.
    pub workspace: WorkspaceId,
    /// The query for full-text search (any of its words, stemmed, stop words dropped);
    /// `None` leaves the text signal out.
    pub text: Option<String>,
    /// The model the vectors come from; only stored vectors of this model are compared.
    pub model: String,
    /// Query vectors, one per searched perspective; empty leaves the embedding signal out.
    pub vectors: Vec<QueryVector>,
    /// Nearest observations gathered per vector.
    pub depth: usize,
    /// Best full-text matches gathered.
    pub text_depth: usize,
    /// Only the observations of this node.
    pub within: Option<String>,
    /// Only the observations of nodes of these types; empty for every type.
    pub entity_types: Vec<String>,
    /// The facts that held at this time, each text as it read then; `None`: the current
    /// facts (not ended, not expired).
    pub as_of: Option<Timestamp>,
    /// Whether to read the workspace's perspectives too ([`Gathered::perspectives`]; empty
    /// otherwise): a search that rendered its query for them checks they still hold.
    pub perspectives: bool,
    /// What the query may write as aliases (runs of its words, `naming::aliases::alias_runs`):
    /// the store answers the nodes they name
    /// ([`Gathered::aliased`]) from the same snapshot; empty asks nothing.
    pub alias_runs: Vec<String>,
}

impl CandidateQuery {
    /// Whether the search is narrowed to one node or to some types; otherwise it covers the
    /// whole workspace (and a store need not join nodes to filter).
    pub fn is_narrowed(&self) -> bool {
        self.within.is_some() || !self.entity_types.is_empty()
    }

    /// The types to keep, `None` for every type.
    pub fn types(&self) -> Option<&[String]> {
        (!self.entity_types.is_empty()).then_some(&self.entity_types[..])
    }
}

/// What a store answers for one search ([`crate::SearchStore::search`]), all from one
/// snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Gathered {
    /// The candidates, in any order.
    pub candidates: Vec<Candidate>,
    /// The workspace's perspectives, by name, when [`CandidateQuery::perspectives`] asked for
    /// them: a search renders its query for the perspectives it saw last, and checks here
    /// that they still hold.
    pub perspectives: Vec<Perspective>,
    /// The names of the nodes that some of [`CandidateQuery::alias_runs`] are aliases of, in
    /// any order: a search that finds some runs once more with them added to its query (each
    /// once, sorted), so that a fact naming the node answers a query by its former name.
    pub aliased: Vec<String>,
}

/// An observation a store gathered, with each signal's raw score.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The observation's row.
    pub row: ObservationRow,
    /// What each signal made of it.
    pub signals: Signals,
}

/// One candidate's raw scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Signals {
    /// Cosine similarity per [`CandidateQuery::vectors`] entry, in order; `None` where the
    /// observation has no vector in that perspective.
    pub similarities: Vec<Option<f64>>,
    /// Whether it was among each vector's `depth` nearest.
    pub nearest: Vec<bool>,
    /// Its stored vector per [`CandidateQuery::vectors`] entry, in order; `None` where it has
    /// none. Hybrid ranking compares the best candidates with one another
    /// ([`super::HUBNESS_WEIGHT`]).
    pub vectors: Vec<Option<Vec<f32>>>,
    /// Its stored token signs per [`CandidateQuery::vectors`] entry, in order; `None` where
    /// it has none ([`super::TOKEN_WEIGHT`]).
    pub token_signs: Vec<Option<Vec<u8>>>,
    /// Its full-text score (higher is better) when it matches the text query.
    pub text_score: Option<f64>,
}

/// An observation with its node, as a store reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationRow {
    /// The observation's id.
    pub observation_id: i64,
    /// The node's name.
    pub name: String,
    /// The node's type.
    pub entity_type: String,
    /// The node's summary.
    pub summary: Option<String>,
    /// The observation's ordinal.
    pub ordinal: crate::Ordinal,
    /// The observation's text.
    pub content: String,
    /// When the observation was written.
    pub created_at: Timestamp,
    /// Since when the fact holds: when it was written, unless the client gave an earlier
    /// `valid_from`.
    pub valid_from: Timestamp,
}

/// Collects a store's answers for one [`CandidateQuery`], keyed by observation id.
#[derive(Debug)]
pub struct CandidateSet {
    queries: Vec<Vec<f32>>,
    by_id: BTreeMap<i64, Signals>,
}

impl CandidateSet {
    /// An empty set for `query`.
    pub fn new(query: &CandidateQuery) -> Self {
        Self {
            queries: query.vectors.iter().map(|v| v.vector.clone()).collect(),
            by_id: BTreeMap::new(),
        }
    }

    fn slot(&mut self, id: i64) -> &mut Signals {
        let vectors = self.queries.len();
        self.by_id.entry(id).or_insert_with(|| Signals {
            similarities: vec![None; vectors],
            nearest: vec![false; vectors],
            vectors: vec![None; vectors],
            token_signs: vec![None; vectors],
            text_score: None,
        })
    }

    /// Adds the nearest observations of vector `index` as `(observation id, similarity)`.
    pub fn add_nearest(&mut self, index: usize, hits: impl IntoIterator<Item = (i64, f64)>) {
        for (id, similarity) in finite(hits) {
            let slot = self.slot(id);
            slot.similarities[index] = Some(similarity);
            slot.nearest[index] = true;
        }
    }

    /// Adds the best full-text matches as `(observation id, score)`.
    pub fn add_text_matches(&mut self, hits: impl IntoIterator<Item = (i64, f64)>) {
        for (id, score) in finite(hits) {
            self.slot(id).text_score = Some(score);
        }
    }

    /// Adds the facts of the nodes a query names ([`NAMED_NODES`], [`name_probe`]) as
    /// candidates, with no signal yet: their vectors and text scores are filled in as every
    /// other candidate's.
    pub fn add_named(&mut self, ids: impl IntoIterator<Item = i64>) {
        for id in ids {
            self.slot(id);
        }
    }

    /// Adds a full-text ranking, best first, as `(observation id, score)`: the first `depth`
    /// become candidates, the others fill in the text scores of candidates already found
    /// (add the nearest observations first).
    pub fn add_text_ranking(&mut self, ranking: Vec<(i64, f64)>, depth: usize) {
        let mut ranking = ranking.into_iter();
        self.add_text_matches(ranking.by_ref().take(depth));
        self.set_text_scores(ranking);
    }

    /// Every candidate's observation id, ascending.
    pub fn ids(&self) -> Vec<i64> {
        self.by_id.keys().copied().collect()
    }

    /// The candidates that have no full-text score yet.
    pub fn without_text_score(&self) -> Vec<i64> {
        (self.by_id.iter())
            .filter(|(_, s)| s.text_score.is_none())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Sets the stored vectors (and token signs) in the perspective of query vector `index`
    /// of candidates already in the set (others are ignored), and the similarity of those
    /// not among its nearest (cosine; a vector of zeros has none).
    pub fn set_vectors(&mut self, index: usize, vectors: impl IntoIterator<Item = StoredVector>) {
        let query = &self.queries[index];
        for stored in vectors {
            let (id, vector) = (stored.observation_id, stored.vector);
            if let Some(slot) = self.by_id.get_mut(&id) {
                slot.token_signs[index] = stored.token_signs;
                if slot.similarities[index].is_none() && vector.iter().any(|x| *x != 0.0) {
                    let similarity = f64::from(crate::search::similarity::cosine(query, &vector));
                    slot.similarities[index] = Some(similarity).filter(|s| s.is_finite());
                }
                slot.vectors[index] = Some(vector);
            }
        }
    }

    /// Fills in full-text scores of candidates already in the set (others are ignored).
    pub fn set_text_scores(&mut self, scores: impl IntoIterator<Item = (i64, f64)>) {
        for (id, score) in finite(scores) {
            if let Some(slot) = self.by_id.get_mut(&id) {
                slot.text_score = Some(score);
            }
        }
    }

    /// The candidates with their rows; ids without a row (none, within one snapshot) are
    /// dropped.
    pub fn finish(mut self, rows: Vec<ObservationRow>) -> Vec<Candidate> {
        rows.into_iter()
            .filter_map(|row| {
                let signals = self.by_id.remove(&row.observation_id)?;
                Some(Candidate { row, signals })
            })
            .collect()
    }
}

/// An observation's stored vector in one perspective, as a store reads it for
/// [`CandidateSet::set_vectors`].
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVector {
    /// The observation's id.
    pub observation_id: i64,
    /// The vector.
    pub vector: Vec<f32>,
    /// Its token signs, if stored.
    pub token_signs: Option<Vec<u8>>,
}

/// The scores that are numbers: a vector of zeros has no cosine (NaN in pgvector), and such
/// a score must neither rank first nor reach a client.
fn finite(scores: impl IntoIterator<Item = (i64, f64)>) -> impl Iterator<Item = (i64, f64)> {
    scores.into_iter().filter(|(_, score)| score.is_finite())
}

/// Gathering one search's candidates, and the pairs of related nodes similarity searches
/// leave out.
#[async_trait]
pub trait SearchStore: IndexStore + Send + Sync + 'static {
    /// Gathers the candidates of one search in one snapshot ([`crate::search`]): the
    /// `query.depth` nearest observations per query vector (cosine similarity, only stored
    /// vectors of `query.model`), the `query.text_depth` best matches of `query.text` by full
    /// text (any of its words, stemmed, stop words dropped; higher scores are better), all
    /// within `query.within` and `query.entity_types` when given; then, for every candidate,
    /// its stored vector per query vector's perspective and its full-text score
    /// ([`crate::search::CandidateSet::set_vectors`], `set_text_scores`); and, when
    /// `query.perspectives`, the workspace's perspectives. Candidates come back in any order.
    async fn search(&self, query: &CandidateQuery) -> Result<Gathered>;
    /// How the nodes `names` of the workspace were used ([`crate::access`]), for those read
    /// at all, with how often each was found together with the node `first`: for a search
    /// that ranks by use ([`crate::AccessRanking`]).
    async fn node_use(
        &self,
        workspace: WorkspaceId,
        names: &[String],
        first: &str,
    ) -> Result<Vec<crate::NodeUse>>;
    /// The `request.k` observations of the workspace (or of the node `within`) whose `model`
    /// vector in `perspective` is closest to `vector`, with cosine similarity, best first (ties by node
    /// name, then ordinal): [`SearchStore::search`] with that one vector and no text.
    async fn vector_search(&self, request: VectorSearch<'_>) -> Result<Vec<ObservationHit>> {
        let VectorSearch {
            workspace,
            model,
            perspective,
            vector,
            k,
            within,
        } = request;
        let request = CandidateQuery {
            workspace,
            perspectives: false,
            alias_runs: Vec::new(),
            text: None,
            model: model.to_owned(),
            vectors: vec![QueryVector {
                perspective,
                perspective_name: String::new(),
                vector: vector.to_vec(),
                token_signs: None,
            }],
            depth: k,
            text_depth: 0,
            within: within.map(str::to_owned),
            entity_types: Vec::new(),
            as_of: None,
        };
        let gathered = self.search(&request).await?;
        let mut hits: Vec<ObservationHit> = (gathered.candidates.into_iter())
            .filter_map(|c| {
                let score = c.signals.similarities[0]?;
                let row = c.row;
                Some(ObservationHit {
                    name: row.name,
                    entity_type: row.entity_type,
                    summary: row.summary,
                    ordinal: row.ordinal,
                    content: row.content,
                    score,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            (b.score.total_cmp(&a.score))
                .then_with(|| a.name.cmp(&b.name))
                .then(a.ordinal.cmp(&b.ordinal))
        });
        Ok(hits)
    }
    /// The `(from, to)` node names of every relation of the workspace (a pair once however
    /// many types link it), for telling related nodes from unrelated ones.
    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>>;
}
