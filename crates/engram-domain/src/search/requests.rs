//! What a client asks of the search tools: each tool's request is its MCP input (the field
//! docs are the published input schema's descriptions), built in code with `new` and the
//! setters; its limits are checked where it runs (`tools.rs`).

use serde::Deserialize;

use super::results::SearchMode;

/// The default number of results of `search_nodes` and `search_observations`.
pub const DEFAULT_SEARCH_LIMIT: u32 = 10;
/// The default number of pairs of `find_similar_nodes`.
pub const DEFAULT_SIMILAR_LIMIT: u32 = 20;
/// The default least cosine similarity of `find_similar_nodes` (the specification's 0.75).
pub const DEFAULT_SIMILAR_MIN_SCORE: f64 = 0.75;

fn default_search_limit() -> u32 {
    DEFAULT_SEARCH_LIMIT
}

fn default_similar_limit() -> u32 {
    DEFAULT_SIMILAR_LIMIT
}

fn default_similar_min_score() -> f64 {
    DEFAULT_SIMILAR_MIN_SCORE
}

/// `search_nodes`: the nodes best matching a query, each once with its best observation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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

    /// The memory as it was at `time`.
    #[must_use]
    pub fn as_of(mut self, time: crate::Timestamp) -> Self {
        self.as_of = Some(time);
        self
    }

    /// At most `limit` results.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// Ranked by `mode`.
    #[must_use]
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Results below `min_score` left out (`None`: the default threshold).
    #[must_use]
    pub fn min_score(mut self, min_score: Option<f64>) -> Self {
        self.min_score = min_score;
        self
    }
}

/// `search_observations`: the observations best matching a query across the workspace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
        }
    }

    /// At most `limit` results.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// Ranked by `mode`.
    #[must_use]
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Only observations of nodes of these types (all when empty).
    #[must_use]
    pub fn entity_types(mut self, entity_types: Vec<String>) -> Self {
        self.entity_types = entity_types;
        self
    }

    /// Results below `min_score` left out (`None`: the default threshold).
    #[must_use]
    pub fn min_score(mut self, min_score: Option<f64>) -> Self {
        self.min_score = min_score;
        self
    }
}

/// `query_observations`: one node's observations best matching a query.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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

    /// The node's facts as they were at `time`.
    #[must_use]
    pub fn as_of(mut self, time: crate::Timestamp) -> Self {
        self.as_of = Some(time);
        self
    }

    /// Ranked by `mode`.
    #[must_use]
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Results below `min_score` left out (`None`: the default threshold).
    #[must_use]
    pub fn min_score(mut self, min_score: Option<f64>) -> Self {
        self.min_score = min_score;
        self
    }
}

/// `find_similar_nodes`: unrelated pairs of similar nodes.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FindSimilarNodes {
    /// At most this many pairs, 1–1,000. Default 20.
    #[serde(default = "default_similar_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// Cosine similarity threshold, -1.0–1.0. Default 0.75.
    #[serde(default = "default_similar_min_score")]
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
