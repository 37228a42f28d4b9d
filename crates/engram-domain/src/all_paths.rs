//! Every simple path between two nodes (`find_all_paths`), relations followed in either
//! direction: a depth-first search driven by the store (no I/O here). The store asks
//! [`AllPathsSearch::wants`] whose neighbours it needs, answers with
//! [`AllPathsSearch::give`] (one query a node, [`crate::path::STEP_SQL`]: neighbours by name,
//! then relation id), and takes the answer from [`AllPathsSearch::finish`].
//!
//! The search deepens one hop at a time (paths of one hop, then of two, …), so the shortest
//! paths come first and a `limit` keeps the shortest; each node's neighbours are read once and
//! kept for the deeper passes; the last hop of every path is read from the target's own
//! neighbours, so the nodes one hop short of it are not read for that alone. A path is simple:
//! no node twice. Its cost is bounded whatever
//! the graph: at most [`MAX_NODES_READ`] nodes' neighbours and [`MAX_STEPS`] steps, after
//! which the answer says it stopped early.

use std::collections::{HashMap, HashSet};

use crate::model::Relation;

/// Most nodes whose neighbours one search reads.
pub const MAX_NODES_READ: usize = 5_000;
/// Most steps (a neighbour looked at) of one search, over all its passes.
pub const MAX_STEPS: usize = 200_000;

/// Why a search stopped before it looked at every path it was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It found one path more than its limit.
    Limit,
    /// It read [`MAX_NODES_READ`] nodes or took [`MAX_STEPS`] steps.
    Bound,
}

/// A neighbour of a node, as a store reads it: its id and name, and the relation between the
/// two (in either direction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The neighbour's node id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The relation linking it to the node asked about.
    pub relation: Relation,
}

/// One path found: node names from source to target, and the relation of each hop.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FoundPath {
    /// Node names from `from_entity` to `to_entity`.
    pub path: Vec<String>,
    /// `relations[i]` links `path[i]` and `path[i + 1]`, in one direction or the other.
    pub relations: Vec<Relation>,
}

/// A search for the simple paths of at most `max_hops` between two nodes (ids).
#[derive(Debug)]
pub struct AllPathsSearch {
    target: i64,
    target_name: String,
    max_hops: usize,
    limit: usize,
    /// The hops of the paths the current pass looks for.
    hops: usize,
    /// Neighbours read so far, by node.
    neighbours: HashMap<i64, Vec<Neighbour>>,
    /// The path being walked: each node with the index of its next neighbour to look at.
    stack: Vec<(i64, usize)>,
    names: Vec<String>,
    relations: Vec<Relation>,
    on_path: HashSet<i64>,
    found: Vec<FoundPath>,
    steps: usize,
    /// Why the search stopped before it looked at every path it was asked for.
    stopped: Option<Stopped>,
    /// The node whose neighbours the search waits for.
    wanted: Option<i64>,
}

impl AllPathsSearch {
    /// The search from `source` to `target` (each an id and a name), for at most `limit`
    /// paths of at most `max_hops` hops, shortest first. From a node to itself the one path is the
    /// node alone.
    pub fn new(
        (source, source_name): (i64, &str),
        (target, target_name): (i64, &str),
        max_hops: usize,
        limit: usize,
    ) -> Self {
        let mut search = Self {
            target,
            target_name: target_name.to_owned(),
            max_hops,
            limit,
            hops: 1,
            neighbours: HashMap::new(),
            stack: vec![(source, 0)],
            names: vec![source_name.to_owned()],
            relations: Vec::new(),
            on_path: HashSet::from([source]),
            found: Vec::new(),
            steps: 0,
            stopped: None,
            wanted: None,
        };
        if source == target {
            search.found.push(FoundPath {
                path: search.names.clone(),
                relations: Vec::new(),
            });
            search.stack.clear();
        } else {
            search.advance();
        }
        search
    }

    /// The node whose neighbours the search needs next, `None` when it is done.
    pub fn wants(&self) -> Option<i64> {
        self.wanted
    }

    /// Gives the neighbours of `node` (the one [`AllPathsSearch::wants`] named), in the
    /// store's order, and goes on.
    pub fn give(&mut self, node: i64, neighbours: Vec<Neighbour>) {
        self.neighbours.insert(node, neighbours);
        self.wanted = None;
        self.advance();
    }

    /// The paths found, shortest first, and why the search stopped early (`None` when it
    /// looked at every path it was asked for).
    pub fn finish(self) -> (Vec<FoundPath>, Option<Stopped>) {
        (self.found, self.stopped)
    }

    /// Walks on until it needs a node's neighbours or is done.
    fn advance(&mut self) {
        while let Some(&(node, next)) = self.stack.last() {
            let depth = self.stack.len() - 1;
            if depth + 1 == self.hops {
                // The last hop: the target's own neighbours say which relations reach it from
                // `node`, so a node one hop short is never read for that alone.
                let Some(ends) = self.read(self.target) else {
                    return;
                };
                let hops: Vec<Relation> = (ends.iter())
                    .filter(|end| end.id == node)
                    .map(|end| end.relation.clone())
                    .collect();
                for relation in hops {
                    if !self.record(relation) {
                        return self.stack.clear();
                    }
                }
                self.back();
                continue;
            }
            let Some(neighbours) = self.read(node) else {
                return;
            };
            let Some(neighbour) = neighbours.get(next).cloned() else {
                self.back();
                continue;
            };
            if let Some(top) = self.stack.last_mut() {
                top.1 += 1;
            }
            self.steps += 1;
            if self.steps > MAX_STEPS {
                self.stopped = Some(Stopped::Bound);
                return self.stack.clear();
            }
            // The target ends a path only on the last hop (above); a path through it is none.
            if self.on_path.contains(&neighbour.id) || neighbour.id == self.target {
                continue;
            }
            self.on_path.insert(neighbour.id);
            self.stack.push((neighbour.id, 0));
            self.names.push(neighbour.name);
            self.relations.push(neighbour.relation);
        }
    }

    /// The neighbours of `node` if read; else asks for them (`None`), or stops the search
    /// when it has read as many nodes as it may.
    fn read(&mut self, node: i64) -> Option<&Vec<Neighbour>> {
        if !self.neighbours.contains_key(&node) {
            match self.neighbours.len() >= MAX_NODES_READ {
                true => {
                    self.stopped = Some(Stopped::Bound);
                    self.stack.clear();
                }
                false => self.wanted = Some(node),
            }
            return None;
        }
        self.neighbours.get(&node)
    }

    /// Records the path walked so far and `last` hop to the target; `false` (and the search
    /// stopped) when `limit` paths are found already: there are more than asked for.
    fn record(&mut self, last: Relation) -> bool {
        if self.found.len() >= self.limit {
            self.stopped = Some(Stopped::Limit);
            return false;
        }
        let mut path = self.names.clone();
        path.push(self.target_name.clone());
        let mut relations = self.relations.clone();
        relations.push(last);
        self.found.push(FoundPath { path, relations });
        true
    }

    /// Leaves the last node of the path; when the source is left, starts the next pass one
    /// hop deeper, if any.
    fn back(&mut self) {
        let Some((node, _)) = self.stack.pop() else {
            return;
        };
        if self.stack.is_empty() {
            if self.hops < self.max_hops {
                self.hops += 1;
                self.stack.push((node, 0));
            }
            return;
        }
        self.on_path.remove(&node);
        self.names.pop();
        self.relations.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search over `edges` (undirected, by node number; names `n0`, `n1`, …).
    fn search(edges: &[(i64, i64)], from: i64, to: i64, hops: usize, limit: usize) -> Vec<String> {
        let mut search = AllPathsSearch::new(
            (from, &format!("n{from}")),
            (to, &format!("n{to}")),
            hops,
            limit,
        );
        let mut reads = 0;
        while let Some(node) = search.wants() {
            reads += 1;
            let mut neighbours: Vec<Neighbour> = (edges.iter())
                .filter_map(|&(a, b)| match (a == node, b == node) {
                    (true, _) => Some((b, a, b)),
                    (_, true) => Some((a, a, b)),
                    _ => None,
                })
                .map(|(id, a, b)| Neighbour {
                    id,
                    name: format!("n{id}"),
                    relation: Relation::new(format!("n{a}"), format!("n{b}"), "r"),
                })
                .collect();
            neighbours.sort_by(|x, y| x.name.cmp(&y.name));
            search.give(node, neighbours);
        }
        assert!(
            reads <= edges.len() * 2 + 1,
            "each node's neighbours read once"
        );
        let (paths, stopped) = search.finish();
        let mut lines: Vec<String> = paths.iter().map(|p| p.path.join(">")).collect();
        if let Some(stopped) = stopped {
            lines.push(format!("stopped: {stopped:?}"));
        }
        lines
    }

    #[test]
    fn paths_come_shortest_first_and_never_repeat_a_node() {
        // 0-1-3, 0-2-3, 0-3, and a cycle 1-2.
        let edges = [(0, 1), (1, 3), (0, 2), (2, 3), (0, 3), (1, 2)];
        assert_eq!(
            search(&edges, 0, 3, 6, 10),
            [
                "n0>n3",
                "n0>n1>n3",
                "n0>n2>n3",
                "n0>n1>n2>n3",
                "n0>n2>n1>n3"
            ]
        );
        assert_eq!(search(&edges, 0, 3, 1, 10), ["n0>n3"]);
        assert_eq!(
            search(&edges, 0, 3, 6, 2),
            ["n0>n3", "n0>n1>n3", "stopped: Limit"]
        );
        assert_eq!(search(&edges, 3, 3, 6, 10), ["n3"]);
        // Exactly `limit` paths: no notice of more.
        assert_eq!(search(&[(0, 1)], 0, 1, 6, 1), ["n0>n1"]);
        assert!(search(&[(0, 1), (2, 3)], 0, 3, 6, 10).is_empty());
    }

    #[test]
    fn a_hub_s_leaves_are_not_read_to_end_a_path() {
        // Leaf 1 to leaf 2 through a hub (node 0) with 10,000 leaves, within 3 hops: the
        // paths of 3 hops end at a leaf next to the hub, and the target's own neighbours say
        // none reaches it, so the leaves are not read (more than the search may read).
        let edges: Vec<(i64, i64)> = (1..=10_000).map(|leaf| (0, leaf)).collect();
        assert_eq!(search(&edges, 1, 2, 3, 10), ["n1>n0>n2"]);
        // Within 4 hops every leaf would have to be read: the search says it stopped.
        assert_eq!(search(&edges, 1, 2, 4, 10), ["n1>n0>n2", "stopped: Bound"]);
    }

    #[test]
    fn a_search_through_a_dense_graph_stops_within_its_bounds() {
        let edges: Vec<(i64, i64)> = (0..60)
            .flat_map(|a| (a + 1..60).map(move |b| (a, b)))
            .collect();
        let found = search(&edges, 0, 59, 6, 100);
        assert_eq!(found.len(), 101, "{:?}", found.last());
        assert_eq!(found.last().unwrap(), "stopped: Limit");
        assert_eq!(found[0], "n0>n59");
    }
}
