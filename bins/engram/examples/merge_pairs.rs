//! How alike the nodes of the project's node pairs are by content:
//! `cargo run -p engram --example merge_pairs` over `xtask/data/name-pairs.json` (one thing
//! under two names, or two things with similar names, each node with the facts two sessions
//! unaware of each other wrote). Each pair is written into a workspace of its own in a fresh
//! SQLite store and embedded by the local model (the server's default); prints each pair's
//! node-vector cosine (the general perspective's, as the report's merge candidates by content
//! read them), most alike first, then where the two kinds overlap.

use std::sync::Arc;

use engram_domain::search::similarity::cosine;
use engram_domain::{CreateEntities, Embedder, GetNodeVectors, Indexer, Memory, MemoryStore};
use engram_embed::LocalEmbedder;
use engram_sqlite::SqliteStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let set: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("xtask/data/name-pairs.json")?)?;
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(SqliteStore::open(dir.path().join("pairs.db")).await?);
    let embedder = Arc::new(LocalEmbedder::default());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder.clone(), 64);
    let mut rows: Vec<(f32, bool, String)> = Vec::new();
    for (i, pair) in set["pairs"].as_array().into_iter().flatten().enumerate() {
        let workspace = memory.create_workspace(&format!("pair-{i}")).await?.id;
        let node = |side: &str| {
            serde_json::json!({"name": pair[side][0], "entity_type": pair[side][1],
                "observations": pair[format!("{side}_facts")]})
        };
        let create: CreateEntities =
            serde_json::from_value(serde_json::json!({"entities": [node("a"), node("b")]}))?;
        memory.call(workspace, create).await?;
        indexer.run_until_idle().await?;
        let perspectives = store.perspectives(workspace).await?;
        let general = (perspectives.iter().find(|p| p.name == "general"))
            .ok_or_else(|| anyhow::anyhow!("no general perspective"))?;
        let request = GetNodeVectors {
            workspace,
            model: embedder.model_id(),
            perspective: general.id,
        };
        let vectors = store.node_vectors(request).await?;
        let [a, b] = &vectors[..] else {
            anyhow::bail!("pair {i}: {} node vectors", vectors.len());
        };
        let same = pair["same"].as_bool().unwrap_or(false);
        let names = format!("{} / {}", pair["a"][0], pair["b"][0]);
        rows.push((cosine(&a.vector, &b.vector), same, names));
    }
    rows.sort_by(|x, y| y.0.total_cmp(&x.0));
    println!("| cosine | one thing | names |\n|---|---|---|");
    for (similarity, same, names) in &rows {
        println!("| {similarity:.3} | {same} | {names} |");
    }
    let highest_different = (rows.iter().filter(|r| !r.1))
        .map(|r| r.0)
        .fold(-1.0, f32::max);
    let above = rows
        .iter()
        .filter(|r| r.1 && r.0 > highest_different)
        .count();
    let same = rows.iter().filter(|r| r.1).count();
    println!(
        "pairs of one thing above the most alike pair of two things ({highest_different:.3}): \
         {above} of {same}"
    );
    Ok(())
}
