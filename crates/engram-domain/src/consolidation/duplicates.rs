//! The report's `merge_candidates`: pairs of nodes of one type that look like one thing
//! written twice, by name (the same words in another case, punctuation or plural, or one name
//! the start of the other: "Postgres" and "PostgreSQL") or by content (aggregate vectors at
//! least [`SAME_THING`] alike). `merge_entities` folds them.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::search::similarity::Neighbour;
use crate::vectors::NodeVector;

/// Least cosine similarity of two nodes' aggregate vectors that reads as one thing twice.
pub const SAME_THING: f32 = 0.9;

/// Two nodes that may be one (`get_consolidation_report`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MergeCandidate {
    /// One node (the name that sorts first).
    pub node_a: String,
    /// The other.
    pub node_b: String,
    /// Their type.
    pub entity_type: String,
    /// "name" (the names differ only in case, punctuation, a plural or an ending) or
    /// "content" (their facts are nearly the same).
    pub reason: String,
    /// Cosine similarity of their aggregate vectors, −1 to 1.
    #[serde(serialize_with = "crate::compact::score")]
    pub similarity_score: f64,
}

/// A name as compared: lower case, letters and digits only.
fn key(name: &str) -> String {
    (name.chars())
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A [`key`] without a plural ending ("stories" → "story", "tables" → "table").
fn singular(key: &str) -> String {
    if let Some(stem) = key.strip_suffix("ies").filter(|s| s.len() >= 2) {
        return format!("{stem}y");
    }
    match key.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_owned(),
        _ => key.to_owned(),
    }
}

/// Whether `long` is `short` with a short ending: a name and its longer form ("postgres",
/// "postgresql"), `short` of five characters or more, `long` at most three more.
fn extends(short: &str, long: &str) -> bool {
    short.len() >= 5 && long.len() <= short.len() + 3 && long.starts_with(short)
}

/// The merge candidates among `vectors` (with their `neighbours`), by name first, then most
/// similar first; at most `limit`.
pub(crate) fn find(
    vectors: &[NodeVector],
    neighbours: &[Vec<Neighbour>],
    limit: usize,
) -> Vec<MergeCandidate> {
    // By name: the same singular key within one type, or one key a short extension of the
    // other (keys sorted, so that a key and its extensions sit together).
    let mut by_type: BTreeMap<&str, Vec<(String, usize)>> = BTreeMap::new();
    for (i, node) in vectors.iter().enumerate() {
        (by_type.entry(&node.entity_type).or_default()).push((key(&node.name), i));
    }
    let mut by_name = Vec::new();
    for keys in by_type.values_mut() {
        keys.sort();
        for (at, (first, a)) in keys.iter().enumerate() {
            for (other, b) in &keys[at + 1..] {
                if singular(first) == singular(other) || extends(first, other) {
                    by_name.push((*a, *b));
                }
            }
        }
    }
    let by_content = (neighbours.iter().enumerate()).flat_map(|(a, near)| {
        (near.iter())
            .filter(move |n| n.similarity >= SAME_THING)
            .filter(move |n| vectors[a].entity_type == vectors[n.index].entity_type)
            .map(move |n| (a, n.index))
    });
    let mut seen = HashSet::new();
    let mut found: Vec<MergeCandidate> = Vec::new();
    for (reason, pairs) in [("name", by_name), ("content", by_content.collect())] {
        let start = found.len();
        for (a, b) in pairs {
            let (a, b) = if vectors[a].name <= vectors[b].name {
                (a, b)
            } else {
                (b, a)
            };
            if a == b || !seen.insert((a, b)) {
                continue;
            }
            let similarity =
                crate::search::similarity::cosine(&vectors[a].vector, &vectors[b].vector);
            found.push(MergeCandidate {
                node_a: vectors[a].name.clone(),
                node_b: vectors[b].name.clone(),
                entity_type: vectors[a].entity_type.clone(),
                reason: reason.into(),
                similarity_score: f64::from(similarity),
            });
        }
        found[start..].sort_by(|x, y| y.similarity_score.total_cmp(&x.similarity_score));
    }
    found.truncate(limit);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, entity_type: &str, vector: &[f32]) -> NodeVector {
        NodeVector {
            name: name.into(),
            entity_type: entity_type.into(),
            vector: vector.to_vec(),
        }
    }

    #[test]
    fn names_that_differ_only_in_form_are_one_thing() {
        let vectors = [
            node("PostgreSQL", "database", &[1.0, 0.0]),
            node("Postgres", "database", &[0.0, 1.0]),
            node("user-stories", "doc", &[1.0, 0.0]),
            node("User Story", "doc", &[0.0, 1.0]),
            node("Bob", "person", &[1.0, 0.0]),
            node("Bobby Tables", "person", &[0.0, 1.0]),
            node("Post", "database", &[0.6, 0.8]),
        ];
        let found = find(&vectors, &vec![Vec::new(); vectors.len()], 10);
        let pairs: Vec<(&str, &str)> = (found.iter())
            .map(|c| (c.node_a.as_str(), c.node_b.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("PostgreSQL", "Postgres"), ("User Story", "user-stories")]
        );
        assert!(found.iter().all(|c| c.reason == "name"));
    }

    #[test]
    fn nearly_the_same_facts_of_one_type_are_one_thing() {
        let vectors = [
            node("Marco Rossi", "person", &[1.0, 0.0]),
            node("Marko Rossi", "person", &[0.99, 0.1]),
            node("Trattoria Rossi", "restaurant", &[0.99, 0.1]),
        ];
        let near = |index, similarity| Neighbour { index, similarity };
        let neighbours = vec![
            vec![near(1, 0.99), near(2, 0.99)],
            vec![near(0, 0.99)],
            vec![near(0, 0.99)],
        ];
        let found = find(&vectors, &neighbours, 10);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].node_a.as_str(), found[0].reason.as_str()),
            ("Marco Rossi", "content")
        );
    }
}
