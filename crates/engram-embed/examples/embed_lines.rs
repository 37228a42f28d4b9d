//! Embeds each line of a file with the local model and writes the vectors as little-endian
//! f32, 384 per line: `cargo run --release -p engram-embed --example embed_lines IN OUT
//! [TOKENS]`. With TOKENS, also writes each line's token signs (late interaction) there: a
//! little-endian u32 byte count, then the packed signs (48 bytes per content token; none for
//! a line without one). For offline retrieval experiments.

use engram_domain::Embedder;
use engram_embed::LocalEmbedder;
use engram_embed::local::ensure_model_files;

#[tokio::main]
async fn main() -> Result<(), engram_domain::Error> {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("input");
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let dir = tokio::task::spawn_blocking(ensure_model_files)
        .await
        .map_err(|err| engram_domain::Error::Internal(err.to_string()))??;
    let embedder = LocalEmbedder::from_dir(dir);
    let mut out = Vec::with_capacity(lines.len() * 384 * 4);
    let mut tokens = Vec::new();
    for chunk in lines.chunks(64) {
        for embedding in embedder.embed_documents_with_tokens(chunk).await? {
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
