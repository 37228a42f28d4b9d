//! The report's fact pairs by meaning (issue 58): two facts of one node that say one thing in
//! other words, or where the newer, worded anew, says that the older changed ("Billing is
//! owned by Payments; Priya is the contact" and "Ownership of billing moved to Platform…").
//! Words alone ([`super::facts`]) find neither. Read from the vectors the indexer stored, of
//! the most recently changed nodes, and judged by the embedding model's own cosines
//! ([`FactPairCosines`]): a repeat is at least [`FactPairCosines::repeats`] alike and more
//! than one short passage apart (facts one word apart may both stay true, and vectors cannot
//! tell); an update says it changed ("now", "moved", "no longer", …) and is at least
//! [`FactPairCosines::may_update`] alike. Each newer fact is paired with the older fact most
//! like it, and only when words found no pair for it.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::grouping;
use crate::model::{Ordinal, PerspectiveId, WorkspaceId};
use crate::search::similarity::unit;
use crate::store::FactVectors;
use crate::tool::MemoryStore;

use super::facts::{self, FactPair, Words};
use super::scan::Scan;

/// The cosines at which an embedding model finds two facts of one node a repeat or an update
/// ([`crate::Embedder::fact_pairs`]), fitted on the project's fact pairs
/// (`xtask/data/fact-pairs.json`, BENCHMARKS.md "Updates and repeats").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FactPairCosines {
    /// Least cosine of a repeat.
    pub repeats: f64,
    /// Least cosine of an update the newer fact says.
    pub may_update: f64,
}

/// Nodes a report compares by meaning: the most recently changed with two or more current
/// facts (older ones were compared by earlier reports); one store read each.
const MEANING_NODES: usize = 200;

/// A node's newest facts compared by meaning, as `add_observations` compares a new fact with
/// the newest it holds: each read carries their vectors.
const MEANING_FACTS: u32 = 128;

/// The pairs by meaning among the facts of the [`MEANING_NODES`] most recently changed nodes
/// of `scan` (vectors of `model` in `perspective`), within `deadline`, added to the scan's
/// `duplicates` and `versions` where words found none for the newer fact. A notice in
/// `notices` says when the deadline left nodes uncompared.
pub(super) async fn add(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    (model, perspective): (&str, PerspectiveId),
    cosines: FactPairCosines,
    (scan, notices): (&mut Scan, &mut Vec<String>),
    deadline: Instant,
) -> Result<()> {
    let mut recent: Vec<usize> = (0..scan.nodes.len())
        .filter(|&i| scan.fact_counts[i] >= 2)
        .collect();
    recent.sort_by(|&a, &b| scan.updated_at[b].cmp(&scan.updated_at[a]));
    recent.truncate(MEANING_NODES);
    let mut paired: HashMap<String, HashSet<Ordinal>> = HashMap::new();
    for pair in scan.duplicates.iter().chain(&scan.versions) {
        (paired.entry(pair.name.clone()).or_default()).insert(pair.ordinals[1]);
    }
    let chosen = recent.len();
    for (done, i) in recent.into_iter().enumerate() {
        if Instant::now() >= deadline {
            notices.push(format!(
                "duplicate_observations, possibly_superseded: compared the facts of {done} of \
                 the {chosen} most recently changed nodes by meaning within the report's {} s",
                grouping::ANALYSIS_BUDGET.as_secs()
            ));
            break;
        }
        let name = scan.nodes[i].name.clone();
        let request = FactVectors {
            workspace,
            name: &name,
            model: Some(model),
            perspective: Some(perspective),
            newest: Some(MEANING_FACTS),
        };
        let facts = match store.fact_vectors(request).await {
            Ok(node) => node.facts,
            // Deleted since the scan.
            Err(Error::NotFound { .. }) => continue,
            Err(error) => return Err(error),
        };
        let skip = paired.remove(&name).unwrap_or_default();
        let (repeats, updates) = grouping::off_runtime(deadline, move |budget| {
            pairs(&name, &facts, &skip, cosines, budget)
        })
        .await?;
        scan.duplicates.extend(repeats);
        scan.versions.extend(updates);
    }
    Ok(())
}

/// The repeats and updates by meaning among one node's `facts` (in ordinal order, those
/// without a vector left out), for each newer fact not in `skip`.
fn pairs(
    name: &str,
    facts: &[crate::store::FactVector],
    skip: &HashSet<Ordinal>,
    cosines: FactPairCosines,
    budget: &grouping::Budget,
) -> (Vec<FactPair>, Vec<FactPair>) {
    let embedded: Vec<(&crate::store::FactVector, Vec<f32>, Words)> = (facts.iter())
        .filter_map(|f| Some((f, unit(f.vector.as_deref()?), Words::of(&f.content))))
        .collect();
    let (mut repeats, mut updates) = (Vec::new(), Vec::new());
    for newer in 1..embedded.len() {
        if budget.spent() {
            break;
        }
        let (fact, vector, words) = &embedded[newer];
        if skip.contains(&fact.ordinal) {
            continue;
        }
        let best = (embedded[..newer].iter())
            .map(|older| (older, dot(&older.1, vector)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some(((older, _, older_words), similarity)) = best else {
            continue;
        };
        if facts::one_passage_apart(older_words, words) {
            continue;
        }
        let pair = || FactPair {
            name: name.to_owned(),
            ordinals: [older.ordinal, fact.ordinal],
            contents: [facts::quote(&older.content), facts::quote(&fact.content)],
        };
        if similarity >= cosines.repeats {
            repeats.push(pair());
        } else if words.says_changed() && similarity >= cosines.may_update {
            updates.push(pair());
        }
    }
    (repeats, updates)
}

/// The dot product of two vectors: their cosine once each is a [`unit`] vector.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    f64::from(a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
}
