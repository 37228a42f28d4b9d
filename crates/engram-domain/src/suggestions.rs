//! "Did you mean": the existing node names closest to a name a caller almost typed.
//!
//! A tool that answers "not found" for a node name (`open_nodes`' `not_found`, a row of
//! `add_observations`, an endpoint of `create_relations`, a tool error) names up to
//! [`SUGGESTIONS`] existing names a caller plausibly meant: the same name in another case or
//! with other punctuation ("priya_raman"), a shortened one ("Priya" for "Priya Raman",
//! "postgres" for "PostgreSQL"), or one with a slip of the keyboard ("Pryia Raman"). A store
//! keeps every name's words ([`name_words`]) and finds a few candidates by the words of the
//! name not found ([`probe`]: a few index range scans in both stores,
//! [`SuggestionStore::similar_names`]); [`rank`] keeps the close ones. The lookup runs only
//! when something was not found, for at most [`MAX_NAMES`] names a call, and a failed lookup
//! leaves the answer without suggestions, never failing it. A slip inside a name's only word
//! ("Alcie") is not found: no word of it matches.

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::model::WorkspaceId;
use crate::store::SimilarNames;

/// At most this many suggestions per name.
pub const SUGGESTIONS: usize = 3;

/// How many candidates a store hands over per name, before [`rank`] judges them.
pub const CANDIDATES: usize = 16;

/// Suggestions are looked up for at most this many names not found in one call.
pub const MAX_NAMES: usize = 32;

/// How close a candidate must be, from 0 to 1 ([`closeness`]), to be suggested.
const THRESHOLD: f64 = 0.75;

/// For each name of `missing`, up to [`SUGGESTIONS`] existing names close to it, best first;
/// names with none are left out. Empty when the lookup fails (a hint is not worth an error).
pub(crate) async fn did_you_mean(
    store: &dyn SuggestionStore,
    workspace: WorkspaceId,
    missing: &[String],
) -> BTreeMap<String, Vec<String>> {
    let missing = &missing[..missing.len().min(MAX_NAMES)];
    if missing.is_empty() {
        return BTreeMap::new();
    }
    let request = SimilarNames {
        workspace,
        names: missing,
        limit: CANDIDATES,
    };
    let Ok(candidates) = store.similar_names(request).await else {
        return BTreeMap::new();
    };
    (missing.iter().zip(candidates))
        .filter_map(|(name, candidates)| {
            let close = rank(name, candidates);
            (!close.is_empty()).then(|| (name.clone(), close))
        })
        .collect()
}

/// `result` with suggestions added when it is a node's [`Error::NotFound`].
pub(crate) async fn explain<T>(
    store: &dyn SuggestionStore,
    workspace: WorkspaceId,
    result: Result<T>,
) -> Result<T> {
    match result {
        Err(Error::NotFound {
            kind: "node", name, ..
        }) => {
            let mut found = did_you_mean(store, workspace, std::slice::from_ref(&name)).await;
            Err(Error::NotFound {
                kind: "node",
                did_you_mean: found.remove(&name).unwrap_or_default(),
                name,
            })
        }
        other => other,
    }
}

/// The candidates close enough to `query` ([`closeness`] at least 0.75), best first (ties by
/// name), at most [`SUGGESTIONS`].
pub fn rank(query: &str, candidates: Vec<String>) -> Vec<String> {
    let query = Normalized::new(query);
    let mut scored: Vec<(f64, String)> = (candidates.into_iter())
        .map(|candidate| (closeness(&query, &Normalized::new(&candidate)), candidate))
        .filter(|(score, _)| *score >= THRESHOLD)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.truncate(SUGGESTIONS);
    scored.into_iter().map(|(_, name)| name).collect()
}

/// The words of a node name as the stores index them: lowercased, split at whatever is not a
/// letter or digit, each once, in order ("Priya_Raman-2" → `["priya", "raman", "2"]`).
pub fn name_words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in crate::search::words::words(name) {
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

/// What a store looks up for a name not found, in its index of name words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Stored words beginning with one of these are candidates: each word of the name, and of
    /// a word of five characters or more its start without the last two (a slip near a
    /// word's end, "postgress" for "postgresql").
    pub starts: Vec<String>,
    /// Stored words equal to one of these are candidates: each word's starts of three
    /// characters or more ("postgres" in a name for a query of "postgresql").
    pub wholes: Vec<String>,
}

/// The [`Probe`] of `name`.
pub fn probe(name: &str) -> Probe {
    let words = name_words(name);
    let mut starts = words.clone();
    let mut wholes = Vec::new();
    for word in &words {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() >= 5 {
            starts.push(chars[..chars.len() - 2].iter().collect());
        }
        wholes.extend((3..chars.len()).map(|end| chars[..end].iter().collect::<String>()));
    }
    starts.dedup();
    wholes.sort();
    wholes.dedup();
    Probe { starts, wholes }
}

/// A name's words ([`name_words`]) and the words joined by one space.
struct Normalized {
    text: String,
    words: Vec<String>,
}

impl Normalized {
    fn new(name: &str) -> Self {
        let words = name_words(name);
        Self {
            text: words.join(" "),
            words,
        }
    }
}

/// How close `candidate` is to what `query` meant, from 0 to 1: 1 when they differ only in
/// case and punctuation; 0.8 to 0.95 when every word of the query is the start of one of the
/// candidate's words or one slip away from it (more for a candidate with fewer other words);
/// else the whole texts' normalised Damerau-Levenshtein similarity.
fn closeness(query: &Normalized, candidate: &Normalized) -> f64 {
    if query.text.is_empty() || candidate.text.is_empty() {
        return 0.0;
    }
    if query.text == candidate.text {
        return 1.0;
    }
    let whole = strsim::normalized_damerau_levenshtein(&query.text, &candidate.text);
    let every_word_matches = query
        .words
        .iter()
        .all(|word| (candidate.words.iter()).any(|other| word_matches(word, other)));
    if every_word_matches {
        let share = query.words.len() as f64 / candidate.words.len().max(1) as f64;
        return whole.max(0.8 + 0.15 * share.min(1.0));
    }
    whole
}

/// Whether the query word `word` means the candidate's word `other`: its start (two or more
/// characters), or the same word with one slip (an edit or a swap; two for words of eight
/// characters or more).
fn word_matches(word: &str, other: &str) -> bool {
    let length = word.chars().count();
    if length >= 2 && other.starts_with(word) {
        return true;
    }
    let slips = match length {
        0..4 => 0,
        4..8 => 1,
        _ => 2,
    };
    slips > 0 && strsim::damerau_levenshtein(word, other) <= slips
}

/// The index of node-name words "did you mean" looks candidates up in ([`probe`]).
#[async_trait]
pub trait SuggestionStore: Send + Sync + 'static {
    /// For each of `request.names`, in order, up to `request.limit` names of the workspace's
    /// nodes that share the most trigrams with it (case ignored; any order; never the name
    /// itself), for [`crate::suggestions`]: an index lookup, not a scan.
    async fn similar_names(&self, request: SimilarNames<'_>) -> Result<Vec<Vec<String>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_shortened_name_suggests_the_full_one() {
        let candidates = names(&["Priya Raman", "Prague", "Project Atlas"]);
        assert_eq!(rank("Priya", candidates.clone()), ["Priya Raman"]);
        assert_eq!(rank("raman", candidates), ["Priya Raman"]);
        assert_eq!(
            rank("postgres", names(&["PostgreSQL", "Post-mortem"])),
            ["PostgreSQL"]
        );
    }

    #[test]
    fn case_punctuation_and_slips_are_forgiven() {
        let candidates = names(&["Priya Raman", "Bob", "Alice"]);
        assert_eq!(rank("priya_raman", candidates.clone()), ["Priya Raman"]);
        assert_eq!(rank("Pryia Raman", candidates.clone()), ["Priya Raman"]);
        assert_eq!(rank("Alcie", candidates), ["Alice"]);
    }

    #[test]
    fn unrelated_names_are_not_suggested() {
        let candidates = names(&["Acme Corp", "Billing service", "Rob"]);
        assert!(rank("Globex", candidates.clone()).is_empty());
        assert!(rank("Bob", candidates).is_empty());
        assert!(rank("", names(&["Alice"])).is_empty());
    }

    #[test]
    fn a_probe_looks_for_the_words_their_starts_and_their_prefixes() {
        assert_eq!(name_words("Priya_Raman-2 priya"), ["priya", "raman", "2"]);
        let probe = probe("Postgress DB");
        assert_eq!(probe.starts, ["postgress", "db", "postgre"]);
        assert_eq!(
            probe.wholes,
            ["pos", "post", "postg", "postgr", "postgre", "postgres"]
        );
    }

    #[test]
    fn the_closest_three_come_first() {
        let candidates = names(&[
            "Alice Chen",
            "Alice",
            "Alice Chen (design)",
            "Alice Chen in 2024",
            "alice",
        ]);
        assert_eq!(
            rank("ALICE", candidates),
            ["Alice", "alice", "Alice Chen"],
            "exact up to case first, then the shortest containing name"
        );
    }
}
