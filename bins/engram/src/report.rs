//! `engram report`: a workspace's consolidation report as JSON on stdout.

use std::sync::Arc;

use anyhow::{Context, Result};
use engram_domain::{GetConsolidationReport, Memory, MemoryStore};

use crate::cli::ReportArgs;

/// Prints the report of `args.workspace`'s workspace, with the embedder and generator `args` select.
pub async fn run(store: Arc<dyn MemoryStore>, args: ReportArgs) -> Result<()> {
    let mut memory = Memory::new(store);
    if let Some(embedder) = args.embed.choice().build()? {
        memory = memory.with_embedder(embedder);
    }
    if let Some((generator, budget)) = args.generate.build(&args.embed.ollama_host)? {
        memory = memory.with_generator(generator, budget);
    }
    let name = args.workspace.name();
    let workspace = memory
        .workspace(name)
        .await
        .with_context(|| format!("workspace {name:?}: `engram workspace list` shows them"))?;
    let options = GetConsolidationReport {
        since: args.since,
        limit: args.limit,
        min_score: args.min_score,
        cluster_min_score: args.cluster_min_score,
        stale_days: args.stale_days,
    };
    let report = memory.call(workspace.id, options).await?;
    outln!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
