//! What searches answer: the mode, the hits of each search tool, similar pairs, and the
//! observations a store hands the domain to rank.

use serde::{Deserialize, Serialize};

/// How a search ranks: both signals fused (default), embedding similarity alone, or
/// full-text rank alone.
// `hybrid` is the default because it finds more than either signal alone (LoCoMo dev split,
// BENCHMARKS.md: R@5 0.66 against 0.58 for embedding and 0.60 for text); this departs from
// the catalog's default of `embedding`, which remains available by name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Embedding similarity, full-text rank and late interaction fused ([`crate::search`]).
    #[default]
    Hybrid,
    /// Cosine similarity of embeddings, across every enabled perspective.
    Embedding,
    /// The database's full-text search and its rank (keyword weights, not meaning).
    Text,
}

/// One node found by `search_nodes`.
// Deserialize: `engram recall --url` reads it back from a server's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchHit {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary; `null` when none was set.
    pub summary: Option<String>,
    /// The observation that matched best.
    pub matched_observation: String,
    /// That observation's ordinal within the node.
    pub ordinal: crate::Ordinal,
    /// Since when that observation holds ([`crate::compact::instant`]: a day, `"2026-03-02"`,
    /// for a fact dated with one, else the instant to the second, `"2026-03-02T09:14:05Z"`):
    /// when it was written, unless the client gave an earlier `valid_from`.
    #[serde(
        serialize_with = "crate::compact::instant",
        deserialize_with = "crate::compact::read_instant"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub valid_from: crate::Timestamp,
    /// The perspective whose vector is closest to the query's (when the observation has a
    /// vector; embedding and hybrid mode); `null` otherwise (text mode).
    pub matched_perspective: Option<String>,
    /// How likely the observation is relevant, 0 to 1 (3 decimals), comparable across queries
    /// and memory sizes: its meaning (a logistic function of its cosine similarity to the
    /// query, its late interaction and the share of the query's terms it holds) or its exact
    /// evidence (every query word held by the fact or its node's name: 0.95 or more), spread
    /// out below the search's best, and of two close facts of one node the newer first
    /// ([`crate::search::calibration`]); results come in score order and those below the
    /// search's `min_score` are left out. With an embedding model engram has no calibration for (an Ollama
    /// model), hybrid and embedding scores are ranking scores instead, comparable within one
    /// result only: hybrid the fused score (0 to 2.1: each signal scaled among the
    /// candidates, plus late interaction and the `date`, `proximity` and `named` bonuses),
    /// embedding the cosine similarity.
    #[serde(serialize_with = "crate::compact::score")]
    pub score: f64,
    /// The signals that found the matched observation: `embedding:<perspective>` for each
    /// perspective among whose nearest it was, `text` when it matched the query's words,
    /// `date`, `proximity` and `named` for the hybrid bonuses above. In text and embedding
    /// mode, what `mode` and `matched_perspective` say is not repeated; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
}

/// What `search_nodes` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchResults {
    /// The best nodes, best first.
    pub results: Vec<SearchHit>,
    /// The mode that produced them (text when embedding mode had to fall back).
    pub mode: SearchMode,
    /// Why the mode differs from the one asked for, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// One observation scored by `query_observations`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ScoredObservation {
    /// The observation's ordinal.
    pub ordinal: crate::Ordinal,
    /// Its text.
    pub content: String,
    /// As in [`SearchHit::valid_from`].
    #[serde(serialize_with = "crate::compact::instant")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub valid_from: crate::Timestamp,
    /// As in [`SearchHit::score`].
    #[serde(serialize_with = "crate::compact::score")]
    pub score: f64,
    /// As in [`SearchHit::signals`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
}

/// What `query_observations` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ObservationResults {
    /// The node's matching observations, best first.
    pub observations: Vec<ScoredObservation>,
    /// The mode that produced them.
    pub mode: SearchMode,
    /// Why the mode differs from the one asked for, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// One observation found by `search_observations`, with its node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FoundObservation {
    /// The node's name.
    pub name: String,
    /// The node's type.
    pub entity_type: String,
    /// The observation's ordinal within its node.
    pub ordinal: crate::Ordinal,
    /// Its text.
    pub content: String,
    /// As in [`SearchHit::valid_from`].
    #[serde(serialize_with = "crate::compact::instant")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub valid_from: crate::Timestamp,
    /// As in [`SearchHit::score`].
    #[serde(serialize_with = "crate::compact::score")]
    pub score: f64,
    /// As in [`SearchHit::signals`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
}

/// What `search_observations` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FoundObservations {
    /// The best observations across the workspace, best first.
    pub observations: Vec<FoundObservation>,
    /// The mode that produced them.
    pub mode: SearchMode,
    /// Why the mode differs from the one asked for, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// One pair found by `find_similar_nodes`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarPair {
    /// One node (the name that sorts first).
    pub node_a: String,
    /// The other node.
    pub node_b: String,
    /// Cosine similarity of their aggregate vectors.
    #[serde(serialize_with = "crate::compact::score")]
    pub similarity: f64,
    /// `node_a`'s type.
    pub node_a_type: String,
    /// `node_b`'s type.
    pub node_b_type: String,
}

/// An observation a store found, with its node and a score.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationHit {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary.
    pub summary: Option<String>,
    /// The observation's ordinal.
    pub ordinal: crate::Ordinal,
    /// The observation's text.
    pub content: String,
    /// Cosine similarity or text rank.
    pub score: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_name_their_facts_ordinal_and_valid_from_compactly() {
        let hit = SearchHit {
            name: "Alice".into(),
            entity_type: "person".into(),
            summary: None,
            matched_observation: "moved to Lisbon".into(),
            ordinal: crate::Ordinal(2),
            valid_from: "2025-01-15T00:00:00Z".parse().unwrap(),
            matched_perspective: None,
            score: 0.5,
            signals: Vec::new(),
        };
        let written = serde_json::to_value(&hit).unwrap();
        assert_eq!(
            (&written["ordinal"], &written["valid_from"]),
            (&json!(2), &json!("2025-01-15"))
        );
        // `engram recall --url` reads it back.
        let read: SearchHit = serde_json::from_value(written).unwrap();
        assert_eq!(read, hit);

        let found = FoundObservation {
            name: "Alice".into(),
            entity_type: "person".into(),
            ordinal: crate::Ordinal(1),
            content: "drinks tea".into(),
            valid_from: "2026-03-02T09:14:05.123456Z".parse().unwrap(),
            score: 0.5,
            signals: Vec::new(),
        };
        let written = serde_json::to_value(&found).unwrap();
        assert_eq!(
            (&written["ordinal"], &written["valid_from"]),
            (&json!(1), &json!("2026-03-02T09:14:05Z"))
        );

        let fact = crate::Observation {
            valid_from: Some("2025-01-15T00:00:00Z".parse().unwrap()),
            ..crate::Observation::new(crate::Ordinal(3), "moved to Lisbon")
        };
        assert_eq!(
            serde_json::to_value(&fact).unwrap(),
            json!({"ordinal": 3, "content": "moved to Lisbon", "valid_from": "2025-01-15"})
        );
        let unsaid = crate::Observation::new(crate::Ordinal(3), "moved to Lisbon");
        assert_eq!(
            serde_json::to_value(&unsaid).unwrap(),
            json!({"ordinal": 3, "content": "moved to Lisbon"})
        );
    }
}
