//! How `propose_split` groups nodes that grew to hold several topics:
//! `cargo run --release -p engram --example split_topics [-- SET.json]` (default
//! `xtask/data/topic-nodes.json`). Each node of the set is written with its topics' facts
//! interleaved, as memory accumulates them, into a fresh SQLite store, embedded by the local
//! model (the server's default), and proposed for a split with the default `max_parts`. Prints,
//! per node: its topics, the groups proposed, and the groups' purity (the share of facts in a
//! group whose topic is the group's most common one); in all: the nodes of several topics
//! proposed as one group per topic and their purity, and the nodes of one topic kept whole.

use std::sync::Arc;

use engram_domain::{CreateEntities, Indexer, Memory, MemoryStore, ProposeSplit};
use engram_embed::LocalEmbedder;
use engram_sqlite::SqliteStore;
use serde::Deserialize;

#[derive(Deserialize)]
struct Set {
    nodes: Vec<TopicNode>,
}

#[derive(Deserialize)]
struct TopicNode {
    name: String,
    entity_type: String,
    /// Each topic's facts, by its label (in label order: the order only decides how the
    /// facts interleave).
    topics: std::collections::BTreeMap<String, Vec<String>>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let path = (std::env::args().nth(1)).unwrap_or_else(|| "xtask/data/topic-nodes.json".into());
    let set: Set = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(SqliteStore::open(dir.path().join("split.db")).await?);
    let embedder = Arc::new(LocalEmbedder::default());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    let workspace = memory.create_workspace("split-topics").await?.id;
    println!("| node | topics (facts) | groups proposed (sizes) | purity |");
    println!("|---|---|---|---|");
    let (mut right_count, mut pure_facts, mut facts_total) = (0, 0, 0);
    let (mut whole, mut single) = (0, 0);
    for node in &set.nodes {
        // Round-robin over the topics: the n-th fact of each topic, then the next.
        let longest = node.topics.values().map(Vec::len).max().unwrap_or(0);
        let mut facts: Vec<(&str, &str)> = Vec::new();
        for i in 0..longest {
            for (topic, texts) in &node.topics {
                if let Some(text) = texts.get(i) {
                    facts.push((topic, text));
                }
            }
        }
        let texts: Vec<&str> = facts.iter().map(|(_, text)| *text).collect();
        let create: CreateEntities = serde_json::from_value(serde_json::json!({"entities": [
            {"name": node.name, "entity_type": node.entity_type, "observations": texts}
        ]}))?;
        memory.call(workspace, create).await?;
        indexer.run_until_idle().await?;
        let proposal = memory
            .call(workspace, ProposeSplit::new(&node.name))
            .await?;
        let mut sizes = Vec::new();
        let mut pure = 0;
        for group in &proposal.groups {
            let mut counts = std::collections::BTreeMap::<&str, usize>::new();
            for ordinal in &group.ordinals {
                // Ordinals count the node's facts from 1, in the order written.
                let topic = facts[(ordinal.0 - 1) as usize].0;
                *counts.entry(topic).or_default() += 1;
            }
            pure += counts.values().max().copied().unwrap_or(0);
            sizes.push(group.ordinals.len().to_string());
        }
        let right = proposal.groups.len() == node.topics.len();
        if node.topics.len() == 1 {
            single += 1;
            whole += usize::from(right);
        } else {
            right_count += usize::from(right);
            pure_facts += pure;
            facts_total += facts.len();
        }
        let topics: Vec<String> = (node.topics.iter())
            .map(|(topic, texts)| format!("{topic} ({})", texts.len()))
            .collect();
        println!(
            "| {}{} | {} | {} ({}) | {:.2} |",
            node.name,
            if right { "" } else { " ✗" },
            topics.join(", "),
            proposal.groups.len(),
            sizes.join("/"),
            pure as f64 / facts.len() as f64
        );
    }
    println!(
        "nodes of several topics: as many groups as topics {right_count} of {}, purity {:.3}; \
         nodes of one topic kept whole: {whole} of {single}",
        set.nodes.len() - single,
        pure_facts as f64 / facts_total.max(1) as f64
    );
    Ok(())
}
