//! The parts of a tool's request and answer that name nodes, as `naming::answer` rereads
//! them ([`crate::naming`]): rows and relations to ask again by the nodes' names, and what a
//! search's query may write as aliases. Plain functions over data; they read nothing.

use std::collections::HashMap;

use crate::model::RelationSpec;

/// The nodes some aliases stand for: alias → the node's name.
pub type Aliased = HashMap<String, String>;

/// An entry of a batch answered row by row that names one node (`add_observations`,
/// `delete_observations`, `end_observations`).
pub(crate) trait NodeEntry: Clone {
    /// The node's name, as given.
    fn node(&self) -> &String;
    /// The node's name, to replace.
    fn node_mut(&mut self) -> &mut String;
}

/// Replaces each of `names` that is an alias by its node's name.
pub(crate) fn rename<'a>(names: impl IntoIterator<Item = &'a mut String>, aliased: &Aliased) {
    for name in names {
        if let Some(node) = aliased.get(name.as_str()) {
            name.clone_from(node);
        }
    }
}

/// For a batch answered row by row (`rows[i]` answers `entries[i]`): the node names of the
/// rows that `missed`.
pub(crate) fn missed_rows<E: NodeEntry, R>(
    (entries, rows): (&[E], &[R]),
    missed: impl Fn(&R) -> bool,
) -> Vec<String> {
    (entries.iter().zip(rows))
        .filter(|(_, row)| missed(row))
        .map(|(entry, _)| entry.node().clone())
        .collect()
}

/// The indexes of the entries whose row missed and whose node name is an alias.
fn aliased_rows<E: NodeEntry, R>(
    (entries, rows): (&[E], &[R]),
    missed: &impl Fn(&R) -> bool,
    aliased: &Aliased,
) -> Vec<usize> {
    (entries.iter().zip(rows).enumerate())
        .filter(|(_, (entry, row))| missed(row) && aliased.contains_key(entry.node()))
        .map(|(i, _)| i)
        .collect()
}

/// The entries to ask again (`Tool::retry` of a batch answered row by row): those whose row
/// missed through an alias, by their nodes' names; `None` when there is none.
pub(crate) fn retry_rows<E: NodeEntry, R>(
    (entries, rows): (&[E], &[R]),
    missed: impl Fn(&R) -> bool,
    aliased: &Aliased,
) -> Option<Vec<E>> {
    let retried = aliased_rows((entries, rows), &missed, aliased);
    let again: Vec<E> = (retried.into_iter())
        .map(|i| {
            let mut entry = entries[i].clone();
            let node = aliased[entry.node()].clone();
            *entry.node_mut() = node;
            entry
        })
        .collect();
    (!again.is_empty()).then_some(again)
}

/// `rows` with the rows of the retried entries (as [`retry_rows`] chose them) replaced by
/// `again`'s, in order.
pub(crate) fn join_rows<E: NodeEntry, R>(
    (entries, mut rows): (&[E], Vec<R>),
    again: Vec<R>,
    missed: impl Fn(&R) -> bool,
    aliased: &Aliased,
) -> Vec<R> {
    let retried = aliased_rows((entries, &rows), &missed, aliased);
    for (i, row) in retried.into_iter().zip(again) {
        rows[i] = row;
    }
    rows
}

/// The relations of `relations` with an endpoint that is an alias, by their nodes' names;
/// `None` when none has.
pub(crate) fn by_node_names(
    relations: &[RelationSpec],
    aliased: &Aliased,
) -> Option<Vec<RelationSpec>> {
    let named = |name: &String| aliased.get(name).unwrap_or(name).clone();
    let again: Vec<RelationSpec> = (relations.iter())
        .filter(|r| aliased.contains_key(&r.from_entity) || aliased.contains_key(&r.to_entity))
        .map(|r| RelationSpec {
            from_entity: named(&r.from_entity),
            to_entity: named(&r.to_entity),
            ..r.clone()
        })
        .collect();
    (!again.is_empty()).then_some(again)
}

/// Both endpoints of every relation of `relations`, to replace ([`Tool::node_names`] of the
/// tools that take relations).
///
/// [`Tool::node_names`]: crate::Tool::node_names
pub(crate) fn endpoint_names(relations: &mut [RelationSpec]) -> Vec<&mut String> {
    (relations.iter_mut())
        .flat_map(|r| [&mut r.from_entity, &mut r.to_entity])
        .collect()
}

/// Both endpoints of every relation of `relations`, each once.
pub(crate) fn endpoints(relations: &[RelationSpec]) -> Vec<String> {
    let mut names: Vec<String> = (relations.iter())
        .flat_map(|r| [r.from_entity.clone(), r.to_entity.clone()])
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Most words of an alias a search looks for in its query.
const ALIAS_WORDS: usize = 3;

/// What a search looks up as aliases in its query, each once: every run of one to
/// [`ALIAS_WORDS`] of its words (split at spaces, punctuation trimmed at their ends), as
/// written, lower-cased and capitalised. The store resolves them in the search's own call
/// (`CandidateQuery::alias_runs`), so that a fact naming the node ("PostgreSQL")
/// answers a query by its former name ("where does Postgres run").
pub(crate) fn alias_runs(query: &str) -> Vec<String> {
    let words: Vec<&str> = (query.split_whitespace())
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    let mut runs: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for length in 1..=ALIAS_WORDS {
        for run in words.windows(length) {
            let written = run.join(" ");
            let capitalised = (run.iter())
                .map(|w| {
                    let mut chars = w.chars();
                    chars.next().map_or_else(String::new, |first| {
                        first
                            .to_uppercase()
                            .chain(chars.flat_map(char::to_lowercase))
                            .collect()
                    })
                })
                .collect::<Vec<_>>()
                .join(" ");
            for form in [written.to_lowercase(), capitalised, written] {
                if seen.insert(form.clone()) {
                    runs.push(form);
                }
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aliased(pairs: &[(&str, &str)]) -> Aliased {
        (pairs.iter())
            .map(|(a, n)| ((*a).to_owned(), (*n).to_owned()))
            .collect()
    }

    impl NodeEntry for String {
        fn node(&self) -> &String {
            self
        }
        fn node_mut(&mut self) -> &mut String {
            self
        }
    }

    #[test]
    fn only_rows_that_missed_through_an_alias_are_asked_again_and_replaced() {
        let entries = vec!["Ali".to_owned(), "Bob".to_owned(), "Nobody".to_owned()];
        let rows = vec![false, true, false];
        let missed = |row: &bool| !*row;
        let map = aliased(&[("Ali", "Alice")]);
        assert_eq!(missed_rows((&entries, &rows), missed), ["Ali", "Nobody"]);
        let again = retry_rows((&entries, &rows), missed, &map);
        assert_eq!(again.as_deref(), Some(&["Alice".to_owned()][..]));
        let joined = join_rows((&entries, rows.clone()), vec![true], missed, &map);
        assert_eq!(joined, [true, true, false]);
        assert!(retry_rows((&entries, &rows), missed, &Aliased::new()).is_none());
    }

    #[test]
    fn relations_are_renamed_at_their_aliased_endpoints_only() {
        let spec = |from: &str, to: &str| RelationSpec {
            from_entity: from.into(),
            relation_type: "knows".into(),
            to_entity: to.into(),
            valid_from: None,
        };
        let relations = [spec("Ali", "Bob"), spec("Bob", "Carol")];
        let again = by_node_names(&relations, &aliased(&[("Ali", "Alice")]));
        assert_eq!(again, Some(vec![spec("Alice", "Bob")]));
        assert_eq!(endpoints(&relations), ["Ali", "Bob", "Carol"]);
        assert!(by_node_names(&relations, &Aliased::new()).is_none());
    }

    #[test]
    fn a_query_s_runs_of_up_to_three_words_in_three_forms() {
        let runs = alias_runs("where does Postgres run?");
        for run in [
            "postgres",
            "Postgres",
            "where does postgres",
            "Does Postgres Run",
        ] {
            assert!(runs.contains(&run.to_owned()), "{run}: {runs:?}");
        }
        assert!(!runs.iter().any(|r| r.contains('?')));
        assert_eq!(alias_runs("JWT"), ["jwt", "Jwt", "JWT"]);
    }
}
