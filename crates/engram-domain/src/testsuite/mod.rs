//! The conformance suite: every [`MemoryStore`] backend must pass all of it.
//!
//! Each test is a plain `async fn(Arc<dyn MemoryStore>)` here; a backend instantiates them all
//! with [`memory_store_test_suite!`](crate::memory_store_test_suite), giving a fixture that
//! returns a store on a fresh, empty database:
//!
//! ```ignore
//! engram_domain::memory_store_test_suite!(crate::fixture::fresh_store);
//! ```
//!
//! The caller's crate needs `tokio` (macros, multi-thread runtime) among its dependencies.

#![allow(missing_docs, clippy::missing_panics_doc)]

mod workspaces;

pub use workspaces::*;

use std::sync::Arc;

use crate::{Memory, MemoryStore, NewEntity, ObservationAdditions, RelationSpec, WorkspaceId};

/// Instantiates every conformance test as a `#[tokio::test]` calling `$fixture().await` for a
/// store on a fresh database.
#[macro_export]
macro_rules! memory_store_test_suite {
    ($fixture:path) => {
        $crate::memory_store_test_suite!(@tests $fixture;
            // workspaces
            workspaces_are_created_listed_renamed_and_deleted,
            workspace_names_are_validated,
            workspaces_are_isolated,
        );
    };
    (@tests $fixture:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let store = $fixture().await;
                $crate::testsuite::$name(store).await;
            }
        )*
    };
}

/// A [`Memory`] over `store` and a new workspace in it.
pub async fn memory_with_workspace(
    store: Arc<dyn MemoryStore>,
    name: &str,
) -> (Memory, WorkspaceId) {
    let memory = Memory::new(store);
    let workspace = memory.create_workspace(name).await.unwrap();
    (memory, workspace.id)
}

/// A node to create with a type and observations.
pub fn entity(name: &str, entity_type: &str, observations: &[&str]) -> NewEntity {
    NewEntity {
        name: name.into(),
        entity_type: entity_type.into(),
        observations: strings(observations),
        ..NewEntity::default()
    }
}

/// Observations to add to one node.
pub fn additions(entity_name: &str, contents: &[&str]) -> ObservationAdditions {
    ObservationAdditions {
        entity_name: entity_name.into(),
        contents: strings(contents),
    }
}

/// A relation `from -[relation_type]-> to`.
pub fn relation(from: &str, relation_type: &str, to: &str) -> RelationSpec {
    RelationSpec {
        from_entity: from.into(),
        to_entity: to.into(),
        relation_type: relation_type.into(),
    }
}

/// Owned strings.
pub fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

/// Creates nodes of type `thing` with no observations.
pub async fn create_nodes(memory: &Memory, workspace: WorkspaceId, names: &[&str]) {
    let entities = names.iter().map(|n| entity(n, "thing", &[])).collect();
    memory.create_entities(workspace, entities).await.unwrap();
}

/// Creates relations given as `(from, type, to)`.
pub async fn create_relations(
    memory: &Memory,
    workspace: WorkspaceId,
    relations: &[(&str, &str, &str)],
) {
    let specs: Vec<RelationSpec> = relations
        .iter()
        .map(|(from, kind, to)| relation(from, kind, to))
        .collect();
    let created = memory.create_relations(workspace, &specs).await.unwrap();
    assert_eq!(created.created.len(), specs.len(), "{created:?}");
}

/// Waits long enough that the next transaction's `now()` is strictly later.
pub async fn tick() {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
}
