//! Workspaces and their perspectives: creating, finding, renaming, deleting them, and whether
//! the store can serve.

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits::{self};
use crate::model::*;
use crate::store::*;

/// The semantics of [`Memory::health`](crate::Memory::health).
pub(crate) async fn health(store: &dyn MemoryStore) -> Result<()> {
    if store.schema_current().await? {
        Ok(())
    } else {
        Err(Error::schema_not_current())
    }
}

/// The semantics of [`Memory::create_workspace`](crate::Memory::create_workspace).
pub(crate) async fn create_workspace(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    name: &str,
) -> Result<Workspace> {
    limits::workspace_name("workspace", name)?;
    secrets.screen_name("workspace", name)?;
    store.create_workspace(name).await
}

/// The semantics of [`Memory::workspace`](crate::Memory::workspace).
pub(crate) async fn workspace(store: &dyn MemoryStore, name: &str) -> Result<Workspace> {
    limits::workspace_name("workspace", name)?;
    store.workspace(name).await
}

/// The semantics of [`Memory::rename_workspace`](crate::Memory::rename_workspace).
pub(crate) async fn rename_workspace(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    name: &str,
    new_name: &str,
) -> Result<Workspace> {
    limits::workspace_name("workspace", name)?;
    limits::workspace_name("new_name", new_name)?;
    secrets.screen_name("new_name", new_name)?;
    let new_name = Checked::new(new_name);
    store
        .rename_workspace(RenameWorkspace { name, new_name })
        .await
}

/// The semantics of [`Memory::delete_workspace`](crate::Memory::delete_workspace).
pub(crate) async fn delete_workspace(
    store: &dyn MemoryStore,
    name: &str,
    force: bool,
) -> Result<()> {
    limits::workspace_name("workspace", name)?;
    store
        .delete_workspace(DeleteWorkspace { name, force })
        .await
}
