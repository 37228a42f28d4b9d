//! `cluster_summary`: groups of nodes by their aggregate vectors.
//!
//! The clusters are the connected components (petgraph's union-find) of the *mutual* k-nearest
//! -neighbour graph: two nodes are linked when each is among the other's
//! [`CLUSTER_NEIGHBOURS`] most similar nodes and their cosine similarity reaches the threshold.
//! Why this and not k-means or DBSCAN (linfa): the number of clusters is not known in advance
//! (k-means needs it), most nodes belong to no cluster at all (k-means assigns every node),
//! and DBSCAN's neighbourhood queries over 384-dimensional vectors degrade to brute force
//! without the blocked matrix product used here. Requiring mutual neighbours keeps one hub
//! node from chaining unrelated groups into one giant component, the usual failure of plain
//! threshold components.

use std::collections::HashMap;

use petgraph::unionfind::UnionFind;

use crate::search::NODE_NEIGHBOURS;
use crate::search::similarity::{Neighbour, centroid, cosine};
use crate::vectors::NodeVector;

/// Neighbours per node in the mutual k-nearest-neighbour graph.
pub const CLUSTER_NEIGHBOURS: usize = NODE_NEIGHBOURS;

/// Clusters of two nodes or more as indices into `nodes`, each ordered most central first
/// (closest to the cluster's centroid; ties by name), largest cluster first (ties by the
/// central node's name).
///
/// `neighbours` are each node's nearest neighbours ([`crate::search::similarity::nearest_neighbours`]
/// with [`CLUSTER_NEIGHBOURS`] and a threshold of at most `min_score`).
pub(crate) fn find(
    nodes: &[NodeVector],
    neighbours: &[Vec<Neighbour>],
    min_score: f32,
) -> Vec<Vec<usize>> {
    let vectors: Vec<&[f32]> = nodes.iter().map(|n| n.vector.as_slice()).collect();
    let close = |i: usize, j: usize| {
        neighbours[i]
            .iter()
            .any(|n| n.index == j && n.similarity >= min_score)
    };
    let mut components = UnionFind::<usize>::new(nodes.len());
    for (i, near) in neighbours.iter().enumerate() {
        for j in near.iter().map(|n| n.index).filter(|&j| j > i) {
            if close(i, j) && close(j, i) {
                components.union(i, j);
            }
        }
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, root) in components.into_labeling().into_iter().enumerate() {
        groups.entry(root).or_default().push(i);
    }
    let mut clusters: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|members| members.len() >= 2)
        .map(|mut members| {
            let member_vectors: Vec<&[f32]> = members.iter().map(|&m| vectors[m]).collect();
            let center = centroid(&member_vectors);
            let centrality: HashMap<usize, f32> = members
                .iter()
                .map(|&m| (m, cosine(vectors[m], &center)))
                .collect();
            members.sort_by(|a, b| {
                centrality[b]
                    .total_cmp(&centrality[a])
                    .then_with(|| nodes[*a].name.cmp(&nodes[*b].name))
            });
            members
        })
        .collect();
    clusters.sort_by(|a, b| {
        b.len()
            .cmp(&a.len())
            .then_with(|| nodes[a[0]].name.cmp(&nodes[b[0]].name))
    });
    clusters
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, vector: [f32; 3]) -> NodeVector {
        NodeVector {
            name: name.into(),
            entity_type: "t".into(),
            vector: vector.to_vec(),
        }
    }

    #[test]
    fn mutual_neighbours_above_the_threshold_form_clusters() {
        let nodes = [
            node("a1", [1.0, 0.05, 0.0]),
            node("a2", [1.0, 0.0, 0.0]),
            node("a3", [1.0, 0.0, 0.05]),
            node("b1", [0.0, 1.0, 0.0]),
            node("b2", [0.05, 1.0, 0.0]),
            node("b3", [0.0, 1.0, 0.05]),
            node("lone", [0.0, 0.0, 1.0]),
        ];
        let vectors: Vec<&[f32]> = nodes.iter().map(|n| n.vector.as_slice()).collect();
        let neighbours =
            crate::search::similarity::nearest_neighbours(&vectors, CLUSTER_NEIGHBOURS, 0.5);
        let clusters = find(&nodes, &neighbours, 0.9);
        let names: Vec<Vec<&str>> = clusters
            .iter()
            .map(|c| c.iter().map(|&i| nodes[i].name.as_str()).collect())
            .collect();
        assert_eq!(names, vec![vec!["a2", "a1", "a3"], vec!["b1", "b2", "b3"]]);
        assert!(find(&nodes, &neighbours, 0.9999).is_empty());
    }
}
