//! Embeds each line of a file with the local model and writes the vectors as little-endian
//! f32, 384 per line: `cargo run --release -p engram-embed --example embed_lines IN OUT
//! [TOKENS]`. With TOKENS, also writes each line's token signs (late interaction) there: a
//! little-endian u32 byte count, then the packed signs (48 bytes per content token; none for
//! a line without one). The model is `ENGRAM_MODEL` (default all-minilm-l6-v2); lines
//! are embedded as stored texts, or as search queries with `ENGRAM_EMBED_AS=query`. For
//! offline retrieval experiments.

use engram_domain::Embedder;
use engram_embed::local::ensure_model_files;
use engram_embed::{LocalEmbedder, LocalModel};

#[tokio::main]
async fn main() -> Result<(), engram_domain::Error> {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("input");
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let model: LocalModel = std::env::var("ENGRAM_MODEL")
        .map_or(Ok(LocalModel::default()), |name| name.parse())
        .expect("ENGRAM_MODEL names a local model");
    let queries = std::env::var("ENGRAM_EMBED_AS").is_ok_and(|role| role == "query");
    let dir = tokio::task::spawn_blocking(move || ensure_model_files(model))
        .await
        .map_err(|err| engram_domain::Error::Internal(err.to_string()))??;
    let embedder = LocalEmbedder::from_dir(model, dir);
    let mut out = Vec::with_capacity(lines.len() * 384 * 4);
    let mut tokens = Vec::new();
    for chunk in lines.chunks(64) {
        let embeddings = match queries {
            true => embedder.embed_queries_with_tokens(chunk).await?,
            false => embedder.embed_documents_with_tokens(chunk).await?,
        };
        for embedding in embeddings {
            for x in embedding.vector {
                out.extend_from_slice(&x.to_le_bytes());
            }
            let signs = embedding.token_signs.unwrap_or_default();
            let count = u32::try_from(signs.len()).expect("token signs fit a u32");
            tokens.extend_from_slice(&count.to_le_bytes());
            tokens.extend_from_slice(&signs);
        }
    }
    std::fs::write(&args[2], out).expect("output");
    if let Some(path) = args.get(3) {
        std::fs::write(path, tokens).expect("token output");
    }
    Ok(())
}
