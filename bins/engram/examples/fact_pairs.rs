//! How the report judges the project's fact pairs, with a model:
//! `cargo run -p engram --example fact_pairs [-- --model NAME]` over
//! `xtask/data/fact-pairs.json` (updates by value and reworded, repeats verbatim and
//! paraphrased, and pairs that both stay true, as agents write memory). Each pair becomes a
//! node of its own with the older fact then the newer, in a fresh SQLite store, embedded by the
//! local model (default all-MiniLM-L6-v2); then one `get_consolidation_report` lists what it
//! finds, by words and by meaning. Prints, per kind, how many pairs were listed as repeats and
//! as updates, then precision and recall over updates and repeats together.

use std::collections::BTreeMap;
use std::sync::Arc;

use engram_domain::{CreateEntities, GetConsolidationReport, Indexer, Memory, MemoryStore};
use engram_embed::{LocalEmbedder, LocalModel};
use engram_sqlite::SqliteStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut model = LocalModel::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" => {
                let name = args.next().unwrap_or_default();
                model = name.parse().map_err(|err: String| anyhow::anyhow!(err))?;
            }
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let set: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("xtask/data/fact-pairs.json")?)?;
    let pairs = set["pairs"].as_array().cloned().unwrap_or_default();
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(SqliteStore::open(dir.path().join("pairs.db")).await?);
    let embedder = Arc::new(LocalEmbedder::new(model));
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let workspace = memory.create_workspace("fact-pairs").await?.id;
    // One node a pair, named by its place in the set: the report pairs facts within a node.
    let nodes: Vec<serde_json::Value> = (pairs.iter().enumerate())
        .map(|(i, pair)| {
            serde_json::json!({"name": format!("pair {i}: {}", pair["node"].as_str().unwrap_or("")),
                "entity_type": "note", "observations": [pair["older"], pair["newer"]]})
        })
        .collect();
    for batch in nodes.chunks(100) {
        let create: CreateEntities =
            serde_json::from_value(serde_json::json!({ "entities": batch }))?;
        memory.call(workspace, create).await?;
    }
    Indexer::new(store.clone(), embedder, 64)
        .run_until_idle()
        .await?;
    let request = GetConsolidationReport {
        limit: 1_000,
        ..GetConsolidationReport::default()
    };
    let report = memory.call(workspace, request).await?;
    let index = |name: &str| -> Option<usize> {
        name.strip_prefix("pair ")?.split(':').next()?.parse().ok()
    };
    let repeats: Vec<usize> = (report.duplicate_observations.iter())
        .filter_map(|p| index(&p.name))
        .collect();
    let updates: Vec<usize> = (report.possibly_superseded.iter())
        .filter_map(|p| index(&p.name))
        .collect();
    // Per kind: pairs, listed as repeats, listed as updates.
    let mut kinds: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for (i, pair) in pairs.iter().enumerate() {
        let kind = pair["kind"].as_str().unwrap_or("?").to_owned();
        let counts = kinds.entry(kind).or_default();
        counts[0] += 1;
        counts[1] += usize::from(repeats.contains(&i));
        counts[2] += usize::from(updates.contains(&i));
    }
    println!("{}, {} pairs", model.name(), pairs.len());
    println!("| kind | pairs | listed as repeats | listed as updates |\n|---|---|---|---|");
    let (mut right, mut flagged, mut positives) = (0, 0, 0);
    for (kind, [total, as_repeat, as_update]) in &kinds {
        println!("| {kind} | {total} | {as_repeat} | {as_update} |");
        flagged += as_repeat + as_update;
        if kind != "both_true" {
            right += as_repeat + as_update;
            positives += total;
        }
    }
    println!(
        "updates and repeats listed: precision {right}/{flagged} = {:.2}, recall {right}/{positives} = {:.2}",
        right as f64 / flagged.max(1) as f64,
        right as f64 / positives.max(1) as f64
    );
    if !report.notices.is_empty() {
        println!("notices: {:?}", report.notices);
    }
    Ok(())
}
