//! Every simple path between two nodes (`find_all_paths`), relations followed in either
//! direction: a depth-first search driven by the store (no I/O here). The store asks
//! [`AllPathsSearch::wants`] whose neighbours it needs, answers with
//! [`AllPathsSearch::give`] (one query a node, [`crate::path::STEP_SQL`]: neighbours by name,
//! then relation id), and takes the answer from [`AllPathsSearch::finish`].
//!
//! The search deepens one hop at a time (paths of one hop, then of two, …), so the shortest
//! paths come first and a `limit` keeps the shortest; each node's neighbours are read once and
//! kept for the deeper passes. A path is simple: no node twice. Its cost is bounded whatever
//! the graph: at most [`MAX_NODES_READ`] nodes' neighbours and [`MAX_STEPS`] steps, after
//! which the answer says it stopped early.

use std::collections::{HashMap, HashSet};

use crate::model::Relation;

/// Most nodes whose neighbours one search reads.
pub const MAX_NODES_READ: usize = 5_000;
/// Most steps (a neighbour looked at) of one search, over all its passes.
pub const MAX_STEPS: usize = 200_000;

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
    stopped: Option<&'static str>,
    /// The node whose neighbours the search waits for.
    wanted: Option<i64>,
}

impl AllPathsSearch {
    /// The search from `source` (named `source_name`) to `target`, for at most `limit` paths
    /// of at most `max_hops` hops, shortest first. From a node to itself the one path is the
    /// node alone.
    pub fn new(
        (source, source_name): (i64, &str),
        target: i64,
        max_hops: usize,
        limit: usize,
    ) -> Self {
        let mut search = Self {
            target,
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
    pub fn finish(self) -> (Vec<FoundPath>, Option<&'static str>) {
        (self.found, self.stopped)
    }

    /// Walks on until it needs a node's neighbours or is done.
    fn advance(&mut self) {
        while let Some(&(node, next)) = self.stack.last() {
            if self.found.len() >= self.limit {
                self.stopped = Some("limit");
                return self.stack.clear();
            }
            let depth = self.stack.len() - 1;
            if depth == self.hops {
                self.back();
                continue;
            }
            let Some(neighbours) = self.neighbours.get(&node) else {
                if self.neighbours.len() >= MAX_NODES_READ {
                    self.stopped = Some("nodes");
                    return self.stack.clear();
                }
                self.wanted = Some(node);
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
                self.stopped = Some("steps");
                return self.stack.clear();
            }
            if self.on_path.contains(&neighbour.id) {
                continue;
            }
            if neighbour.id == self.target {
                // A path of `depth + 1` hops; shorter ones were found by earlier passes.
                if depth + 1 == self.hops {
                    let mut path = self.names.clone();
                    path.push(neighbour.name);
                    let mut relations = self.relations.clone();
                    relations.push(neighbour.relation);
                    self.found.push(FoundPath { path, relations });
                }
                continue;
            }
            if depth + 1 < self.hops {
                self.on_path.insert(neighbour.id);
                self.stack.push((neighbour.id, 0));
                self.names.push(neighbour.name);
                self.relations.push(neighbour.relation);
            }
        }
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
        let mut search = AllPathsSearch::new((from, &format!("n{from}")), to, hops, limit);
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
            lines.push(format!("stopped: {stopped}"));
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
            ["n0>n3", "n0>n1>n3", "stopped: limit"]
        );
        assert_eq!(search(&edges, 3, 3, 6, 10), ["n3"]);
        assert!(search(&[(0, 1), (2, 3)], 0, 3, 6, 10).is_empty());
    }

    #[test]
    fn a_search_through_a_dense_graph_stops_within_its_bounds() {
        let edges: Vec<(i64, i64)> = (0..60)
            .flat_map(|a| (a + 1..60).map(move |b| (a, b)))
            .collect();
        let found = search(&edges, 0, 59, 6, 100);
        assert_eq!(found.len(), 101, "{:?}", found.last());
        assert_eq!(found.last().unwrap(), "stopped: limit");
        assert_eq!(found[0], "n0>n59");
    }
}
