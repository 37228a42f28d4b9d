//! The whole workspace as a client reads it back (`read_graph`, every page, full detail),
//! and the invariants every fault test checks on it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::mcp::Mcp;

/// A relation: `(from, to, relation_type)`.
pub type Triple = (String, String, String);

/// A workspace's content.
#[derive(Debug, Default)]
pub struct Graph {
    /// Node name → its observations `(ordinal, content)` in ordinal order.
    pub nodes: BTreeMap<String, Vec<(i64, String)>>,
    /// Every relation.
    pub relations: Vec<Triple>,
}

impl Graph {
    /// Reads every page of `read_graph` with `detail: "full"`.
    pub async fn read(client: &Mcp) -> Self {
        let mut graph = Self::default();
        let mut cursor = serde_json::Value::Null;
        loop {
            let page = client
                .ok(
                    "read_graph",
                    json!({"detail": "full", "limit": 1000, "cursor": cursor}),
                )
                .await;
            for node in page["entities"].as_array().expect("entities") {
                let observations = (node["observations"].as_array())
                    .expect("observations in full detail")
                    .iter()
                    .map(|o| {
                        let ordinal = o["ordinal"].as_i64().expect("ordinal");
                        (ordinal, o["content"].as_str().expect("content").to_owned())
                    })
                    .collect();
                let name = node["name"].as_str().expect("name").to_owned();
                assert!(
                    graph.nodes.insert(name.clone(), observations).is_none(),
                    "{name} on two pages"
                );
            }
            for relation in page["relations"].as_array().expect("relations") {
                let text = |field: &str| relation[field].as_str().expect(field).to_owned();
                graph
                    .relations
                    .push((text("from"), text("to"), text("relation_type")));
            }
            cursor = page["next_cursor"].clone();
            if cursor.is_null() {
                return graph;
            }
        }
    }

    /// Panics unless `get_stats` (through `client`) counts what was read: nothing the pages
    /// do not show (a relation whose source is gone would not be on any page).
    pub async fn assert_matches_stats(&self, client: &Mcp) {
        let stats = client.ok("get_stats", json!({})).await;
        assert_eq!(stats["node_count"], self.nodes.len(), "{stats}");
        assert_eq!(
            stats["observation_count"],
            self.observation_count(),
            "{stats}"
        );
        assert_eq!(stats["relation_count"], self.relations.len(), "{stats}");
    }

    /// Every observation's content.
    pub fn contents(&self) -> BTreeSet<&str> {
        (self.nodes.values().flatten())
            .map(|(_, content)| content.as_str())
            .collect()
    }

    /// Observations in all.
    pub fn observation_count(&self) -> usize {
        self.nodes.values().map(Vec::len).sum()
    }

    /// Panics unless each node's ordinals are unique and every relation's endpoints exist
    /// (no relation dangles); returns how many relations were checked.
    pub fn assert_consistent(&self) -> usize {
        for (name, observations) in &self.nodes {
            let ordinals: BTreeSet<i64> = observations.iter().map(|(o, _)| *o).collect();
            assert_eq!(
                ordinals.len(),
                observations.len(),
                "{name} holds an ordinal twice: {observations:?}"
            );
        }
        let dangling: Vec<&Triple> = (self.relations.iter())
            .filter(|(from, to, _)| !self.nodes.contains_key(from) || !self.nodes.contains_key(to))
            .collect();
        assert!(dangling.is_empty(), "dangling relations: {dangling:?}");
        let unique: BTreeSet<&Triple> = self.relations.iter().collect();
        assert_eq!(
            unique.len(),
            self.relations.len(),
            "a relation listed twice"
        );
        self.relations.len()
    }
}
