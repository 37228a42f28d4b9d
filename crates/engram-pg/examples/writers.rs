//! engram on PostgreSQL as a library, without MCP: connect, migrate, and let several writers
//! append to one node at once. Each observation gets the node's next ordinal from a per-node
//! counter in the same transaction, so concurrent writers never collide and none waits for a
//! lock on the whole workspace. (The first steps, writing nodes and relations and reading them
//! back, are the same on every store: engram-sqlite's `sqlite_quickstart` example.)
//!
//! ```text
//! ENGRAM_DATABASE_URL=postgres://postgres@127.0.0.1:5433/engram \
//!     cargo run -p engram-pg --example writers
//! ```

use engram_domain::{CreateEntities, OpenNodes};
use std::sync::Arc;

use engram_domain::{AddObservations, Memory, NewNode, ObservationAdditions};
use engram_pg::PgStore;

/// How many writers append at once, and how many observations each appends.
const WRITERS: usize = 8;
const EACH: usize = 5;

/// Runs the example against `database_url` in a workspace called `workspace` (created; it
/// must not exist yet) and returns the ordinals the node's observations got, in order.
pub async fn run(database_url: &str, workspace: &str) -> engram_domain::Result<Vec<i64>> {
    let store = PgStore::connect(database_url).await?;
    store.migrate().await?;
    let memory = Memory::new(Arc::new(store));
    let workspace = memory.create_workspace(workspace).await?.id;
    let log = NewNode {
        name: "release log".into(),
        entity_type: "log".into(),
        ..NewNode::default()
    };
    memory
        .call(workspace, CreateEntities::new(vec![log]))
        .await?;

    let writers = (0..WRITERS).map(|writer| {
        let memory = memory.clone();
        tokio::spawn(async move {
            let additions = [ObservationAdditions {
                entity_name: "release log".into(),
                contents: (0..EACH)
                    .map(|i| format!("writer {writer}, entry {i}").into())
                    .collect(),
            }];
            memory
                .call(workspace, AddObservations::new(&additions))
                .await
        })
    });
    for written in futures::future::join_all(writers).await {
        written.expect("a writer panicked")?;
    }

    let opened = memory
        .call(workspace, OpenNodes::new(&["release log".into()]))
        .await?;
    let node = &opened.entities[0];
    Ok(node.observations.iter().map(|o| o.ordinal.0).collect())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("ENGRAM_DATABASE_URL")
        .map_err(|_| "set ENGRAM_DATABASE_URL to a postgres:// URL")?;
    println!("ordinals: {:?}", run(&url, "writers").await?);
    Ok(())
}
