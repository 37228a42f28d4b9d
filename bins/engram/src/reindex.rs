//! `engram reindex WORKSPACE`: drop a workspace's vectors for the configured model and embed
//! everything again, with a progress bar.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use engram::indexing::{BATCH_SIZE, EmbedderChoice};
use engram_domain::{Indexer, Memory, MemoryStore};
use indicatif::{ProgressBar, ProgressStyle};

pub async fn run(
    store: Arc<dyn MemoryStore>,
    workspace: &str,
    choice: &EmbedderChoice,
) -> Result<()> {
    let Some(embedder) = choice.build()? else {
        bail!("reindex needs an embedding model (--embedder local or ollama)");
    };
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let workspace = memory
        .workspace(workspace)
        .await
        .with_context(|| format!("workspace {workspace:?}"))?;
    let cleared = memory
        .clear_embeddings(workspace.id, embedder.model_id())
        .await?;
    let total = memory.embedding_pairs(workspace.id).await?;
    outln!(
        "re-embedding {total} observation × perspective pairs of {} with {} (dropped {cleared} vectors)",
        workspace.name,
        embedder.model_id()
    );
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} pairs  {per_sec}  eta {eta}")
            .expect("a valid template"),
    );
    // Other workspaces' pending pairs are indexed along the way; the bar counts ours.
    let indexer = Indexer::new(store.clone(), embedder.clone(), BATCH_SIZE);
    loop {
        let done = indexer.run_once().await?;
        let progress = memory
            .embedding_progress(workspace.id, embedder.model_id())
            .await?;
        bar.set_position(progress.embedded());
        if done == 0 {
            break;
        }
    }
    bar.finish();
    outln!("done: {} is fully embedded", workspace.name);
    Ok(())
}
