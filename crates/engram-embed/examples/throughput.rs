//! Fetches the local model's files (if missing), loads the model and measures its
//! throughput: `cargo run -p engram-embed --example throughput [SENTENCES]`, of the model
//! `ENGRAM_MODEL` names (default all-minilm-l6-v2).

use std::time::Instant;

use engram_domain::Embedder;
use engram_embed::local::ensure_model_files;
use engram_embed::{LocalEmbedder, LocalModel};

#[tokio::main]
async fn main() -> Result<(), engram_domain::Error> {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(512);

    let started = Instant::now();
    let model: LocalModel = std::env::var("ENGRAM_MODEL")
        .map_or(Ok(LocalModel::default()), |name| name.parse())
        .expect("ENGRAM_MODEL names a local model");
    let dir = tokio::task::spawn_blocking(move || ensure_model_files(model))
        .await
        .map_err(|err| engram_domain::Error::Internal(err.to_string()))??;
    println!("model files: {} ({:.2?})", dir.display(), started.elapsed());

    let embedder = LocalEmbedder::from_dir(model, dir);
    let started = Instant::now();
    embedder.load().await?;
    println!("model load: {:.2?}", started.elapsed());

    let texts: Vec<String> = (0..count)
        .map(|i| {
            format!(
                "Observation {i}: the team moved the indexer to a background task and \
                 measured {} embeddings per batch on the build machine",
                i % 97
            )
        })
        .collect();
    let started = Instant::now();
    let vectors = embedder.embed_documents(&texts).await?;
    let elapsed = started.elapsed();
    println!(
        "embedded {} texts in {elapsed:.2?}: {:.0} texts/s",
        vectors.len(),
        vectors.len() as f64 / elapsed.as_secs_f64()
    );

    // One short question at a time, as a search embeds it.
    let mut times: Vec<std::time::Duration> = Vec::new();
    for i in 0..60 {
        let question = format!("What did the team measure on the build machine in run {i}?");
        let started = Instant::now();
        embedder.embed_query(&question).await?;
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "one query: p50 {:.2?}, p90 {:.2?}",
        times[times.len() / 2],
        times[times.len() * 9 / 10]
    );
    Ok(())
}
