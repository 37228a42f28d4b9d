//! Which nodes are read and found, and which together (the "limbic" signals of the system in
//! `shared/reference/004`): an [`AccessLog`] notes, in memory, the nodes each read or search
//! returned (`open_nodes`, `search_nodes`, `search_observations`; [`crate::Tool::accessed`]) and the pairs among its first [`PAIRED`]; the server writes what
//! it gathered every few seconds in one store call ([`AccessStore::record_access`]), so a
//! read costs no write of its own. The stores keep per node how often and how lately it was
//! read, and per pair how often the two came together. The consolidation report reads them for
//! its `stale_nodes`; searches read them to rank by use only where the operator asks
//! ([`AccessRanking`]): on held-out conversations it cost recall (BENCHMARKS.md, "Ranking by
//! use").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;

use crate::error::Result;
use crate::model::{Timestamp, WorkspaceId};

/// The first results of one read whose pairs are noted as found together.
pub const PAIRED: usize = 5;

/// Distinct nodes an [`AccessLog`] holds for one write at most; past it, reads of further
/// nodes are dropped until the next write empties the log (so a store that refuses every
/// write costs bounded memory).
pub const MAX_LOGGED_NODES: usize = 50_000;

/// Pairs found together an [`AccessLog`] holds at most, as [`MAX_LOGGED_NODES`].
pub const MAX_LOGGED_PAIRS: usize = 200_000;

/// What an [`AccessLog`] gathered for one workspace: reads per node name, and pairs of names
/// found together (the lesser name first) with how often.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceAccess {
    /// Reads per node name.
    pub reads: HashMap<String, u64>,
    /// Times found together, per pair of names (the lesser first).
    pub together: HashMap<(String, String), u64>,
}

/// What [`AccessStore::record_access`] writes: each workspace's reads and pairs, all as of `at`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessBatch {
    /// When the reads happened (the last of them).
    pub at: Timestamp,
    /// Per workspace.
    pub workspaces: HashMap<WorkspaceId, WorkspaceAccess>,
}

impl AccessBatch {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.workspaces.values().all(|w| w.reads.is_empty())
    }
}

/// The reads and searches of a running server, gathered in memory until the next write
/// ([`AccessLog::take`]). Cheap to clone (clones share the log).
#[derive(Debug, Clone, Default)]
pub struct AccessLog(Arc<Mutex<AccessBatch>>);

impl AccessLog {
    /// Notes that one read of `workspace` returned `names`, in order: a read each, and a
    /// pair for every two among the first [`PAIRED`]. A node named twice counts once.
    pub fn note(&self, workspace: WorkspaceId, names: &[&str]) {
        if names.is_empty() {
            return;
        }
        let mut distinct: Vec<&str> = Vec::with_capacity(names.len());
        for name in names {
            if !distinct.contains(name) {
                distinct.push(name);
            }
        }
        let mut batch = self.0.lock().unwrap_or_else(|p| p.into_inner());
        batch.at = chrono::Utc::now();
        let held: usize = batch.workspaces.values().map(|w| w.reads.len()).sum();
        let paired: usize = batch.workspaces.values().map(|w| w.together.len()).sum();
        let mut room = MAX_LOGGED_NODES.saturating_sub(held);
        let mut pair_room = MAX_LOGGED_PAIRS.saturating_sub(paired);
        let log = batch.workspaces.entry(workspace).or_default();
        let mut admitted: Vec<&str> = Vec::with_capacity(distinct.len());
        for name in &distinct {
            if let Some(reads) = log.reads.get_mut(*name) {
                *reads += 1;
            } else if room > 0 {
                log.reads.insert((*name).to_owned(), 1);
                room -= 1;
            } else {
                continue;
            }
            admitted.push(name);
        }
        let first = &admitted[..admitted.len().min(PAIRED)];
        for (i, a) in first.iter().enumerate() {
            for b in &first[i + 1..] {
                let pair = match a < b {
                    true => ((*a).to_owned(), (*b).to_owned()),
                    false => ((*b).to_owned(), (*a).to_owned()),
                };
                match log.together.get_mut(&pair) {
                    Some(together) => *together += 1,
                    None if pair_room > 0 => {
                        log.together.insert(pair, 1);
                        pair_room -= 1;
                    }
                    None => {}
                }
            }
        }
        batch
            .workspaces
            .retain(|_, access| !access.reads.is_empty());
    }

    /// What was noted since the last take, leaving the log empty.
    pub fn take(&self) -> AccessBatch {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Puts back a batch whose write failed, so its reads are written with the next, within
    /// the log's bounds ([`MAX_LOGGED_NODES`], [`MAX_LOGGED_PAIRS`]; what does not fit is dropped).
    pub fn restore(&self, batch: AccessBatch) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let nodes: usize = held.workspaces.values().map(|w| w.reads.len()).sum();
        let pairs: usize = held.workspaces.values().map(|w| w.together.len()).sum();
        let (mut room, mut pair_room) = (
            MAX_LOGGED_NODES.saturating_sub(nodes),
            MAX_LOGGED_PAIRS.saturating_sub(pairs),
        );
        for (workspace, access) in batch.workspaces {
            let log = held.workspaces.entry(workspace).or_default();
            for (name, reads) in access.reads {
                if let Some(held) = log.reads.get_mut(&name) {
                    *held += reads;
                } else if room > 0 {
                    log.reads.insert(name, reads);
                    room -= 1;
                }
            }
            for (pair, together) in access.together {
                if let Some(held) = log.together.get_mut(&pair) {
                    *held += together;
                } else if pair_room > 0 {
                    log.together.insert(pair, together);
                    pair_room -= 1;
                }
            }
        }
        held.workspaces.retain(|_, access| !access.reads.is_empty());
        held.at = held.at.max(batch.at);
    }
}

/// How a node has been used: its reads, the last one, and how often it came with the node a
/// search ranked first.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeUse {
    /// The node's name.
    pub name: String,
    /// How often it was read or found.
    pub reads: i64,
    /// When last.
    pub last_read_at: Timestamp,
    /// How often it was found together with the search's first result.
    pub together: i64,
}

/// A node nobody has changed for `stale_days` and that is rarely read, in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StaleNode {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// When it or any of its children was last written.
    pub updated_at: Timestamp,
    /// How often it was read or found since the access log began (0: never).
    pub reads: i64,
    /// When it was last read or found, if ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_read_at: Option<Timestamp>,
}

/// The reads a node may have had in all and still be stale though read lately.
pub const STALE_READS: i64 = 2;

/// Where access is kept: written in batches, read for the report (and for ranking, by
/// [`crate::SearchStore::node_use`]).
#[async_trait]
pub trait AccessStore: Send + Sync + 'static {
    /// Adds `batch`'s reads to each named node's count (a name that is no node is skipped)
    /// and its last read to `batch.at`, and its pairs to their counts, in one transaction.
    async fn record_access(&self, batch: &AccessBatch) -> Result<()>;

    /// Up to `limit` (plus one, to tell a cut) nodes not written since `before` and not read
    /// since then either, or read at most [`STALE_READS`] times in all (or never), least
    /// recently written first.
    async fn stale_nodes(
        &self,
        workspace: WorkspaceId,
        before: Timestamp,
        limit: u32,
    ) -> Result<Vec<StaleNode>>;
}

/// Ranking by use, for an operator who asks for it (`engram serve --access-ranking`): a node
/// read often and lately, and one found often with the search's first result, gains up to
/// `weight` log-odds of its calibrated score (a search without a calibrated score, from a
/// model that has none, ranks as without it). Off by default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessRanking {
    /// The most log-odds use adds.
    pub weight: f64,
    /// The days after which a read counts half.
    pub half_life_days: f64,
}

impl Default for AccessRanking {
    /// Half a unit of log-odds at most; reads count half after 30 days.
    fn default() -> Self {
        Self {
            weight: 0.5,
            half_life_days: 30.0,
        }
    }
}

impl AccessRanking {
    /// The log-odds a node gains from `reads` (the last `days_since` days ago) and from being
    /// found `together` times with the first result: `weight` × (0.7 × importance + 0.3 ×
    /// co-occurrence), each in 0–1 (importance `1 − 1 / (1 + ln(1 + reads) × decay)`,
    /// co-occurrence `together / (together + 3)`).
    pub fn boost(&self, reads: i64, days_since: f64, together: i64) -> f64 {
        let decay = 0.5_f64.powf(days_since.max(0.0) / self.half_life_days);
        let used = (1.0 + reads.max(0) as f64).ln() * decay;
        let importance = 1.0 - 1.0 / (1.0 + used);
        let together = together.max(0) as f64;
        let paired = together / (together + 3.0);
        self.weight * (0.7 * importance + 0.3 * paired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_counts_each_node_once_and_pairs_its_first_results() {
        let log = AccessLog::default();
        let ws = WorkspaceId(1);
        log.note(ws, &["b", "a", "b", "c", "d", "e", "f"]);
        log.note(ws, &["a"]);
        log.note(WorkspaceId(2), &[]);
        let batch = log.take();
        let access = &batch.workspaces[&ws];
        assert_eq!(access.reads["a"], 2);
        assert_eq!(access.reads["b"], 1);
        assert_eq!(access.reads.len(), 6);
        // The first five distinct: b, a, c, d, e; ten pairs, the lesser name first.
        assert_eq!(access.together.len(), 10);
        assert_eq!(access.together[&("a".to_owned(), "b".to_owned())], 1);
        assert!(
            !access
                .together
                .contains_key(&("a".to_owned(), "f".to_owned()))
        );
        assert!(!batch.workspaces.contains_key(&WorkspaceId(2)));
        assert!(log.take().is_empty(), "taken means gone");
        log.restore(batch);
        assert_eq!(
            log.take().workspaces[&ws].reads["a"],
            2,
            "a failed write is kept"
        );
    }

    #[test]
    fn a_log_holds_at_most_its_bound_and_a_restored_batch_fits_within_it() {
        let log = AccessLog::default();
        let names: Vec<String> = (0..MAX_LOGGED_NODES + 10)
            .map(|i| format!("n{i}"))
            .collect();
        for chunk in names.chunks(1_000) {
            let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
            log.note(WorkspaceId(1), &chunk);
        }
        log.note(WorkspaceId(2), &["late", "later"]);
        let batch = log.take();
        let held = |b: &AccessBatch| b.workspaces.values().map(|w| w.reads.len()).sum::<usize>();
        assert_eq!(held(&batch), MAX_LOGGED_NODES);
        assert!(
            !batch.workspaces.contains_key(&WorkspaceId(2)),
            "no room, no pair"
        );
        log.note(WorkspaceId(3), &["a", "b"]);
        log.restore(batch);
        let again = log.take();
        assert_eq!(
            held(&again),
            MAX_LOGGED_NODES,
            "the newer reads kept, the rest to the bound"
        );
        assert_eq!(again.workspaces[&WorkspaceId(3)].reads.len(), 2);
    }

    #[test]
    fn use_lifts_less_as_it_ages_and_never_past_the_weight() {
        let ranking = AccessRanking::default();
        assert_eq!(ranking.boost(0, 0.0, 0), 0.0);
        let fresh = ranking.boost(10, 0.0, 0);
        let old = ranking.boost(10, 90.0, 0);
        assert!(fresh > old && old > 0.0, "{fresh} {old}");
        assert!(ranking.boost(1_000_000, 0.0, 1_000_000) <= ranking.weight);
        assert!(ranking.boost(1, 0.0, 5) > ranking.boost(1, 0.0, 0));
    }
}
