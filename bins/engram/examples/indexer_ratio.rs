//! The indexer's throughput next to the raw model's, in one run: `cargo run --release -p engram
//! --example indexer_ratio [OBSERVATIONS]` (default 1,000; `cargo xtask bench indexer` runs it).
//!
//! A fresh SQLite store gets the observations (ten to a node, the default perspective only);
//! the local model first embeds exactly the texts the indexer will render, in the indexer's
//! batch size, then the server's indexer brings the store up to date from scratch. The ratio
//! is what rendering, hashing, reading the queue and storing the vectors cost on top of the
//! model: indexer texts/s ÷ model texts/s.

use engram_domain::CreateEntities;
use std::sync::Arc;
use std::time::Instant;

use engram_domain::perspectives::render_document;
use engram_domain::{Embedder, Memory, MemoryStore, NewNode};
use engram_embed::LocalEmbedder;
use engram_sqlite::SqliteStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1_000);
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(SqliteStore::open(dir.path().join("ratio.db")).await?);
    let memory = Memory::new(store.clone());
    let workspace = memory.create_workspace("ratio").await?.id;
    let nodes: Vec<NewNode> = (0..count.div_ceil(10))
        .map(|n| NewNode {
            name: format!("component-{n}"),
            entity_type: "component".into(),
            observations: (0..10)
                .map(|i| {
                    format!(
                        "fact {i} of component {n}: the team moved its indexer to a background \
                         task and measured {} embeddings per batch",
                        (n * 10 + i) % 97
                    )
                    .into()
                })
                .take(count - (n * 10).min(count))
                .collect(),
            ..NewNode::default()
        })
        .collect();
    for batch in nodes.chunks(100) {
        memory
            .call(workspace, CreateEntities::new(batch.to_vec()))
            .await?;
    }

    let embedder = Arc::new(LocalEmbedder::default());
    embedder.embed_documents(&["warm up".to_owned()]).await?;
    let texts: Vec<String> = (store
        .pending_embeddings(engram_domain::PendingEmbeddings {
            model: embedder.model_id(),
            limit: count,
            cursor: &Default::default(),
        })
        .await?)
        .iter()
        .map(|task| render_document(&task.document_template, &task.context))
        .collect();
    let started = Instant::now();
    for batch in texts.chunks(engram::indexing::BATCH_SIZE) {
        embedder.embed_documents(batch).await?;
    }
    let model = texts.len() as f64 / started.elapsed().as_secs_f64();

    let indexer = engram::indexing::indexer(store.clone(), embedder.clone());
    let started = Instant::now();
    let indexed = indexer.run_until_idle().await?;
    let through_indexer = indexed as f64 / started.elapsed().as_secs_f64();
    println!(
        "{} texts: model {model:.1} texts/s, indexer {through_indexer:.1} texts/s, ratio {:.2}",
        texts.len(),
        through_indexer / model
    );
    anyhow::ensure!(
        indexed == texts.len(),
        "the indexer embedded {indexed} texts"
    );
    Ok(())
}
