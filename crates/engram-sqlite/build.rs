//! Rebuilds the crate when a migration file changes: `embed_migrations!` alone misses new files.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/sqlite");
}
