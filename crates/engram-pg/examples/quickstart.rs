//! engram as a library, without MCP: open the PostgreSQL store, create a workspace, write a
//! node with observations and a relation, and read them back.
//!
//! ```text
//! ENGRAM_DATABASE_URL=postgres://postgres@127.0.0.1:5433/engram \
//!     cargo run -p engram-pg --example quickstart
//! ```

use std::sync::Arc;

use engram_domain::{Memory, NewNode, RelationSpec};
use engram_pg::PgStore;

/// Runs the walkthrough against `database_url` in a workspace called `workspace` (created;
/// it must not exist yet) and returns what `open_nodes` reads back, as JSON.
pub async fn run(database_url: &str, workspace: &str) -> engram_domain::Result<String> {
    let store = PgStore::connect(database_url).await?;
    store.migrate().await?;
    let memory = Memory::new(Arc::new(store));
    let workspace = memory.create_workspace(workspace).await?.id;

    let alice = NewNode {
        name: "Alice".into(),
        entity_type: "person".into(),
        observations: vec!["moved to Lisbon in March".into(), "works on engram".into()],
        tags: vec!["team".into()],
        ..NewNode::default()
    };
    let engram = NewNode {
        name: "engram".into(),
        entity_type: "project".into(),
        ..NewNode::default()
    };
    memory
        .create_entities(workspace, vec![alice, engram])
        .await?;
    let works_on = RelationSpec {
        from_entity: "Alice".into(),
        to_entity: "engram".into(),
        relation_type: "works_on".into(),
    };
    memory.create_relations(workspace, &[works_on]).await?;

    let opened = memory.open_nodes(workspace, &["Alice".into()]).await?;
    Ok(serde_json::to_string_pretty(&opened).expect("results serialise"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("ENGRAM_DATABASE_URL")
        .map_err(|_| "set ENGRAM_DATABASE_URL to a postgres:// URL")?;
    println!("{}", run(&url, "quickstart").await?);
    Ok(())
}
