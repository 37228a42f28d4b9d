//! The report's `merge_candidates`: pairs of nodes of one type that look like one thing
//! written twice, by name or by content. `merge_entities` folds them.
//!
//! By name (no embedding model needed): the same words but for case, punctuation, a plural or
//! a known abbreviation ("Deploy Pipelines" and "deploy-pipeline", "Prod DB" and "Production
//! Database"); one name a short extension of the other ("Postgres" and "PostgreSQL"); an
//! acronym and the words it stands for ("AWS" and "Amazon Web Services"); a numeronym and its
//! word ("k8s" and "Kubernetes"). By content: aggregate vectors at least [`SAME_THING`] alike.
//! Every rule is found through a hash or a sort, never by comparing every pair of names.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::search::similarity::{Neighbour, cosine};
use crate::vectors::NodeVector;

/// Least cosine similarity of two nodes' aggregate vectors that reads as one thing twice.
pub const SAME_THING: f32 = 0.9;

/// Common abbreviations in project memories and what they stand for, as a name's words are
/// compared.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("app", "application"),
    ("auth", "authentication"),
    ("cfg", "configuration"),
    ("config", "configuration"),
    ("db", "database"),
    ("dev", "development"),
    ("doc", "documentation"),
    ("docs", "documentation"),
    ("env", "environment"),
    ("gh", "github"),
    ("infra", "infrastructure"),
    ("js", "javascript"),
    ("k8s", "kubernetes"),
    ("mgmt", "management"),
    ("msg", "message"),
    ("pg", "postgresql"),
    ("postgres", "postgresql"),
    ("prod", "production"),
    ("py", "python"),
    ("repo", "repository"),
    ("svc", "service"),
    ("ts", "typescript"),
];

/// Words an acronym leaves out ("Bank of America" is "BoA" or "BA").
const ACRONYM_SKIPS: &[&str] = &["and", "for", "of", "the", "&"];

/// A node as the report's name rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamedNode {
    /// Its name.
    pub(crate) name: String,
    /// Its type.
    pub(crate) entity_type: String,
}

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
    /// "name" (the names differ only in case, punctuation, a plural, an ending, an
    /// abbreviation or an acronym) or "content" (their facts are nearly the same).
    pub reason: String,
    /// Cosine similarity of their aggregate vectors, −1 to 1; `null` when either has none.
    #[serde(serialize_with = "crate::compact::optional_score")]
    pub similarity_score: Option<f64>,
}

/// A name's words as compared: lower case, abbreviations written out, plurals made singular.
fn canonical_words(name: &str) -> Vec<String> {
    crate::search::words::words(name)
        .map(|word| {
            let one = singular(&word);
            let written_out = |w: &str| {
                (ABBREVIATIONS.iter())
                    .find(|(short, _)| *short == w)
                    .map(|(_, long)| (*long).to_owned())
            };
            written_out(&word)
                .or_else(|| written_out(&one))
                .unwrap_or(one)
        })
        .collect()
}

/// A word without a plural ending ("stories" → "story", "tables" → "table").
fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies").filter(|s| s.len() >= 2) {
        return format!("{stem}y");
    }
    match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_owned(),
        _ => word.to_owned(),
    }
}

/// Whether `long` is `short` with a short ending: a name and its longer form ("postgres",
/// "postgresql"), `short` of five characters or more, `long` at most three more.
fn extends(short: &str, long: &str) -> bool {
    short.len() >= 5
        && long.len() > short.len()
        && long.len() <= short.len() + 3
        && long.starts_with(short)
        // Not a numbered series: "sprint1" and "sprint12", "python3" and "python311".
        && !short.ends_with(|c: char| c.is_ascii_digit())
        && !long[short.len()..].contains(|c: char| c.is_ascii_digit())
}

/// The initials of a name of two or more words, with and without its small words ("Bank of
/// America": "boa", "ba"); none for a name of one word.
fn initials(words: &[String]) -> Vec<String> {
    let every: String = words.iter().filter_map(|w| w.chars().next()).collect();
    let kept: String = (words.iter())
        .filter(|w| !ACRONYM_SKIPS.contains(&w.as_str()))
        .filter_map(|w| w.chars().next())
        .collect();
    let mut initials = Vec::new();
    for candidate in [every, kept] {
        if candidate.chars().count() >= 2 && !initials.contains(&candidate) {
            initials.push(candidate);
        }
    }
    initials
}

/// Whether a one-word name is written as an acronym: letters only, 3–6 of them (two letters
/// are the initials of too many names), two or more capitals ("AWS", "BoA"; not "Bob").
fn is_acronym(name: &str) -> bool {
    let letters = name.chars().filter(|c| c.is_alphabetic()).count();
    (3..=6).contains(&letters)
        && name.chars().all(char::is_alphabetic)
        && name.chars().filter(|c| c.is_uppercase()).count() >= 2
}

/// A numeronym's shape, `(first letter, last letter, letters between)`: "k8s" is
/// `('k', 's', 8)`, "i18n" `('i', 'n', 18)`.
fn numeronym(word: &str) -> Option<(char, char, usize)> {
    let first = word.chars().next()?;
    let last = word.chars().last()?;
    let middle = word.get(first.len_utf8()..word.len() - last.len_utf8())?;
    (first.is_alphabetic()
        && last.is_alphabetic()
        && !middle.is_empty()
        && middle.chars().all(|c| c.is_ascii_digit()))
    .then(|| Some((first, last, middle.parse().ok()?)))
    .flatten()
}

/// A word's numeronym shape: `(first, last, letters between)`.
fn shape(word: &str) -> Option<(char, char, usize)> {
    let first = word.chars().next()?;
    let last = word.chars().last()?;
    let between = word.chars().count().checked_sub(2)?;
    (between >= 3).then_some((first, last, between))
}

/// The pairs (indices into `nodes`, of one type) whose names say one thing.
fn by_name(nodes: &[NamedNode]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut by_type: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        by_type.entry(&node.entity_type).or_default().push(i);
    }
    for members in by_type.values() {
        let words: Vec<Vec<String>> = (members.iter())
            .map(|&i| canonical_words(&nodes[i].name))
            .collect();
        let keys: Vec<String> = words.iter().map(|w| w.concat()).collect();
        // The same key: one bucket each.
        let mut buckets: HashMap<&str, Vec<usize>> = HashMap::new();
        for (at, key) in keys.iter().enumerate().filter(|(_, k)| !k.is_empty()) {
            buckets.entry(key).or_default().push(at);
        }
        for bucket in buckets.values() {
            for (n, &a) in bucket.iter().enumerate() {
                pairs.extend(bucket[n + 1..].iter().map(|&b| (members[a], members[b])));
            }
        }
        // A key and its short extensions sit together once the keys are sorted.
        let mut sorted: Vec<usize> = (0..keys.len()).filter(|&k| !keys[k].is_empty()).collect();
        sorted.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        for (n, &a) in sorted.iter().enumerate() {
            for &b in &sorted[n + 1..] {
                if !keys[b].starts_with(&keys[a]) {
                    break;
                }
                if extends(&keys[a], &keys[b]) {
                    pairs.push((members[a], members[b]));
                }
            }
        }
        // An acronym of one word and the words it stands for; a numeronym and its word.
        let mut by_initials: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_shape: HashMap<(char, char, usize), Vec<usize>> = HashMap::new();
        for (at, w) in words.iter().enumerate() {
            for initials in initials(w) {
                by_initials.entry(initials).or_default().push(at);
            }
            if let [word] = w.as_slice()
                && let Some(shape) = shape(word)
            {
                by_shape.entry(shape).or_default().push(at);
            }
        }
        for (at, w) in words.iter().enumerate() {
            let [word] = w.as_slice() else { continue };
            let name = &nodes[members[at]].name;
            if is_acronym(name) {
                // As written ("PG", "SaaS"), not as the abbreviation table or plurals read it.
                let found = by_initials.get(&name.to_lowercase()).into_iter().flatten();
                pairs.extend(found.map(|&other| (members[at], members[other])));
            }
            if let Some(found) = numeronym(word).and_then(|n| by_shape.get(&n)) {
                pairs.extend(found.iter().map(|&other| (members[at], members[other])));
            }
        }
    }
    pairs
}

/// The merge candidates: by name among `nodes`, then by content among `vectors` (with their
/// `neighbours`), each part most similar first; at most `limit`.
pub(crate) fn find(
    nodes: &[NamedNode],
    vectors: &[NodeVector],
    neighbours: &[Vec<Neighbour>],
    limit: usize,
) -> Vec<MergeCandidate> {
    let vector_of: HashMap<&str, &[f32]> = (vectors.iter())
        .map(|v| (v.name.as_str(), v.vector.as_slice()))
        .collect();
    let named = |(a, b): (usize, usize)| (&nodes[a], &nodes[b]);
    let by_name = by_name(nodes).into_iter().map(named);
    let by_content = (neighbours.iter().enumerate()).flat_map(|(a, near)| {
        (near.iter())
            .filter(move |n| n.similarity >= SAME_THING)
            .filter(move |n| vectors[a].entity_type == vectors[n.index].entity_type)
            .map(move |n| (&vectors[a], &vectors[n.index]))
    });
    let by_content = by_content.map(|(a, b)| {
        let node = |v: &NodeVector| NamedNode {
            name: v.name.clone(),
            entity_type: v.entity_type.clone(),
        };
        (node(a), node(b))
    });
    let by_content: Vec<(NamedNode, NamedNode)> = by_content.collect();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut found: Vec<MergeCandidate> = Vec::new();
    let lists: [(&str, Vec<(&NamedNode, &NamedNode)>); 2] = [
        ("name", by_name.collect()),
        ("content", by_content.iter().map(|(a, b)| (a, b)).collect()),
    ];
    for (reason, pairs) in lists {
        let start = found.len();
        for (a, b) in pairs {
            let (a, b) = if a.name <= b.name { (a, b) } else { (b, a) };
            if a.name == b.name || !seen.insert((a.name.clone(), b.name.clone())) {
                continue;
            }
            let similarity = (vector_of.get(a.name.as_str()))
                .zip(vector_of.get(b.name.as_str()))
                .map(|(x, y)| f64::from(cosine(x, y)));
            found.push(MergeCandidate {
                node_a: a.name.clone(),
                node_b: b.name.clone(),
                entity_type: a.entity_type.clone(),
                reason: reason.into(),
                similarity_score: similarity,
            });
        }
        found[start..].sort_by(|x, y| {
            let score = |c: &MergeCandidate| c.similarity_score.unwrap_or(-1.0);
            score(y)
                .total_cmp(&score(x))
                .then_with(|| x.node_a.cmp(&y.node_a))
        });
    }
    found.truncate(limit);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, entity_type: &str) -> NamedNode {
        NamedNode {
            name: name.into(),
            entity_type: entity_type.into(),
        }
    }

    fn node(name: &str, entity_type: &str, vector: &[f32]) -> NodeVector {
        NodeVector {
            name: name.into(),
            entity_type: entity_type.into(),
            vector: vector.to_vec(),
        }
    }

    fn names(found: &[MergeCandidate]) -> Vec<(&str, &str)> {
        (found.iter())
            .map(|c| (c.node_a.as_str(), c.node_b.as_str()))
            .collect()
    }

    #[test]
    fn names_that_differ_only_in_form_are_one_thing() {
        let nodes = [
            named("PostgreSQL", "database"),
            named("Postgres", "database"),
            named("user-stories", "doc"),
            named("User Story", "doc"),
            named("Bob", "person"),
            named("Bobby Tables", "person"),
            named("Post", "database"),
        ];
        let vectors = [
            node("PostgreSQL", "database", &[1.0, 0.0]),
            node("Postgres", "database", &[0.0, 1.0]),
        ];
        let found = find(&nodes, &vectors, &[Vec::new(), Vec::new()], 10);
        assert_eq!(
            names(&found),
            [("PostgreSQL", "Postgres"), ("User Story", "user-stories")]
        );
        assert!(found.iter().all(|c| c.reason == "name"));
        // Scored where both have vectors, else `null` (without a model: every pair).
        assert_eq!(found[0].similarity_score, Some(0.0));
        assert_eq!(found[1].similarity_score, None);
    }

    #[test]
    fn abbreviations_acronyms_and_numeronyms_name_their_words() {
        let nodes = [
            named("Prod DB", "system"),
            named("production databases", "system"),
            named("AWS", "vendor"),
            named("Amazon Web Services", "vendor"),
            named("k8s", "platform"),
            named("Kubernetes", "platform"),
            named("i18n", "topic"),
            named("internationalization", "topic"),
            named("BoA", "bank"),
            named("Bank of America", "bank"),
            // Same shapes, another type, or no match.
            named("AWS", "person"),
            named("Amazon Warehouse", "vendor"),
            named("k9s", "platform"),
            named("Kubernetes Operator", "platform"),
            named("Sprint 1", "sprint"),
            named("Sprint 12", "sprint"),
            named("Python 3", "language"),
            named("Python 3.11", "language"),
            named("AI", "topic"),
            named("Applied Informatics", "topic"),
        ];
        let found = find(&nodes, &[], &[], 20);
        let mut found = names(&found);
        found.sort();
        assert_eq!(
            found,
            [
                ("AWS", "Amazon Web Services"),
                ("Bank of America", "BoA"),
                ("Kubernetes", "k8s"),
                ("Prod DB", "production databases"),
                ("i18n", "internationalization"),
            ]
        );
    }

    #[test]
    fn nearly_the_same_facts_of_one_type_are_one_thing() {
        let vectors = [
            node("Marco Rossi", "person", &[1.0, 0.0]),
            node("Marko Rossi", "person", &[0.99, 0.1]),
            node("Trattoria Rossi", "restaurant", &[0.99, 0.1]),
        ];
        let nodes: Vec<NamedNode> = (vectors.iter())
            .map(|v| named(&v.name, &v.entity_type))
            .collect();
        let near = |index, similarity| Neighbour { index, similarity };
        let neighbours = vec![
            vec![near(1, 0.99), near(2, 0.99)],
            vec![near(0, 0.99)],
            vec![near(0, 0.99)],
        ];
        let found = find(&nodes, &vectors, &neighbours, 10);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].node_a.as_str(), found[0].reason.as_str()),
            ("Marco Rossi", "content")
        );
    }
}
