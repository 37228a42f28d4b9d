//! engram as a library, without MCP: open the SQLite store (a file, created when missing),
//! create a workspace, write a node with observations and a relation, and read them back.
//!
//! ```text
//! cargo run -p engram-sqlite --example sqlite_quickstart -- /tmp/engram-quickstart.db
//! ```

use engram_domain::{CreateEntities, OpenNodes};
use std::sync::Arc;

use engram_domain::{CreateRelations, Memory, NewNode, RelationSpec};
use engram_sqlite::SqliteStore;

/// Runs the walkthrough on the database file `path` in a workspace called `workspace`
/// (created; it must not exist yet) and returns what `open_nodes` reads back, as JSON.
pub async fn run(path: &std::path::Path, workspace: &str) -> engram_domain::Result<String> {
    let store = SqliteStore::open(path).await?;
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
        .call(workspace, CreateEntities::new(vec![alice, engram]))
        .await?;
    let works_on = RelationSpec::new("Alice", "engram", "works_on");
    memory
        .call(workspace, CreateRelations::new(&[works_on]))
        .await?;

    let opened = memory
        .call(workspace, OpenNodes::new(&["Alice".into()]))
        .await?;
    Ok(serde_json::to_string_pretty(&opened).expect("results serialise"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("give the path of a database file (created when missing)")?;
    println!("{}", run(path.as_ref(), "quickstart").await?);
    Ok(())
}
