//! Search: the search tools (`requests.rs`: `search_nodes`, `search_observations`,
//! `query_observations`, `find_similar_nodes`) and the `Searcher` they run on (`tools.rs`),
//! what a store sees of one search ([`candidates`]), how candidates are ranked ([`ranking`]) and scored so that a score
//! means the same across queries ([`calibration`]), the cues a question carries ([`dates`],
//! [`words`]), late interaction over token signs ([`late_interaction`]), nearest neighbours
//! in memory ([`similarity`]) and what the tools answer ([`results`]).
//!
//! A search runs: the query rendered per enabled perspective and embedded once (cached) →
//! one [`crate::SearchStore::search`] call gathering [`Candidate`]s in one snapshot →
//! [`rank`] → [`calibrate`] → the hits. Stores run SQL and nothing else; all ranking is here.

pub mod calibration;
pub mod candidates;
pub mod dates;
pub mod late_interaction;
mod query_embedding;
pub mod ranking;
pub mod requests;
pub mod results;
pub mod similarity;
pub(crate) mod tools;
pub mod words;

pub use candidates::*;
pub(crate) use query_embedding::{QUERY_EMBEDDING_BUDGET, QueryEmbedding};
pub use ranking::*;
pub(crate) use tools::{NODE_NEIGHBOURS, neighbours_of, unrelated_pairs};
