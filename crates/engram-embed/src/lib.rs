//! engram's embedders: implementations of [`engram_domain::Embedder`].
//!
//! - [`LocalEmbedder`]: a [`LocalModel`] (all-MiniLM-L6-v2, the default, or
//!   multilingual-e5-small; 384 dimensions) in-process with candle; its files are fetched on first
//!   use (see [`local::ensure_model_files`]).
//! - [`OllamaEmbedder`]: any embedding model served by Ollama (`/api/embed`).
//!
//! Both return L2-normalised vectors, so cosine similarity is a dot product.
//!
//! And [`OllamaGenerator`]: a text model served by Ollama (`/api/generate`), the
//! [`engram_domain::TextGenerator`] behind the consolidation report's drafts.

mod generate;
pub mod local;
pub mod ollama;
#[cfg(feature = "testing")]
pub mod testing;

pub use generate::OllamaGenerator;
pub use local::{LocalEmbedder, LocalModel};
pub use ollama::OllamaEmbedder;

/// Scales `vector` to unit length (a zero vector is left as it is).
fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}
