//! engram-embed's integration tests: the local model against its real files, Ollama against
//! an Ollama-compatible server inside the test.

mod e5;
mod generate;
mod local;
mod ollama;

/// The dot product of two vectors; their cosine when both are unit vectors.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The L2 norm of a vector.
fn norm(vector: &[f32]) -> f32 {
    dot(vector, vector).sqrt()
}
