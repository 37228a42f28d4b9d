//! Workspaces and their perspectives: creating, finding, renaming, deleting them, and whether
//! the store can serve.

use async_trait::async_trait;

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits::{self};
use crate::model::*;
use crate::perspectives::Perspective;
use crate::store::*;
use crate::vectors::IndexStore;

/// The semantics of [`Memory::health`](crate::Memory::health).
pub(crate) async fn health(store: &dyn WorkspaceStore) -> Result<()> {
    if store.schema_current().await? {
        Ok(())
    } else {
        Err(Error::schema_not_current())
    }
}

/// The semantics of [`Memory::create_workspace`](crate::Memory::create_workspace).
pub(crate) async fn create_workspace(
    store: &dyn WorkspaceStore,
    secrets: crate::SecretPolicy,
    name: &str,
) -> Result<Workspace> {
    limits::workspace_name("workspace", name)?;
    secrets.screen_name("workspace", name)?;
    store.create_workspace(name).await
}

/// The semantics of [`Memory::workspace`](crate::Memory::workspace).
pub(crate) async fn workspace(store: &dyn WorkspaceStore, name: &str) -> Result<Workspace> {
    limits::workspace_name("workspace", name)?;
    store.workspace(name).await
}

/// The semantics of [`Memory::rename_workspace`](crate::Memory::rename_workspace).
pub(crate) async fn rename_workspace(
    store: &dyn WorkspaceStore,
    secrets: crate::SecretPolicy,
    request: RenameWorkspace,
) -> Result<Workspace> {
    store.rename_workspace(&request.check(secrets)?).await
}

/// The semantics of [`Memory::delete_workspace`](crate::Memory::delete_workspace).
pub(crate) async fn delete_workspace(
    store: &dyn WorkspaceStore,
    request: DeleteWorkspace,
) -> Result<()> {
    store.delete_workspace(&request.check()?).await
}

/// The semantics of [`Memory::set_perspective`](crate::Memory::set_perspective):
/// `perspective` validated ([`crate::perspectives::validate`]), its templates screened for
/// secrets, stored, and this process's searches told to read the workspace's perspectives
/// again (other processes' see the change in their search's snapshot).
pub(crate) async fn set_perspective(
    store: &dyn IndexStore,
    secrets: crate::SecretPolicy,
    search: &crate::search::tools::Searcher,
    workspace: WorkspaceId,
    perspective: &Perspective,
) -> Result<Perspective> {
    crate::perspectives::validate(perspective)?;
    secrets.screen_name("document_template", &perspective.document_template)?;
    secrets.screen_name("query_template", &perspective.query_template)?;
    let request = SetPerspective {
        workspace,
        perspective,
    };
    let stored = store.set_perspective(request).await?;
    search.forget_perspectives(workspace);
    Ok(stored)
}

/// `engram workspace rename`: a workspace's new name ([`Memory::rename_workspace`]).
///
/// [`Memory::rename_workspace`]: crate::Memory::rename_workspace
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenameWorkspace {
    /// The workspace's name now.
    pub name: String,
    /// Its new name: a workspace name's limits, screened for secrets.
    pub new_name: String,
}

impl RenameWorkspace {
    /// Renaming `name` to `new_name`.
    pub fn new(name: impl Into<String>, new_name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            new_name: new_name.into(),
        }
    }

    /// Both names within a workspace name's limits, the new one holding no secret.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `workspace` or `new_name`.
    pub(crate) fn check(self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        limits::workspace_name("workspace", &self.name)?;
        limits::workspace_name("new_name", &self.new_name)?;
        secrets.screen_name("new_name", &self.new_name)?;
        Ok(Checked::new(self))
    }
}

/// `engram workspace delete`: a workspace to delete with everything in it
/// ([`Memory::delete_workspace`]).
///
/// [`Memory::delete_workspace`]: crate::Memory::delete_workspace
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteWorkspace {
    /// The workspace's name.
    pub name: String,
    /// Whether a workspace that holds nodes is deleted too.
    pub force: bool,
}

impl DeleteWorkspace {
    /// Deleting `name`, refused when it holds nodes unless `force`.
    pub fn new(name: impl Into<String>, force: bool) -> Self {
        Self {
            name: name.into(),
            force,
        }
    }

    /// The name within a workspace name's limits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `workspace`.
    pub(crate) fn check(self) -> Result<Checked<Self>> {
        limits::workspace_name("workspace", &self.name)?;
        Ok(Checked::new(self))
    }
}

/// Workspaces: creating, finding, listing, renaming and deleting them, and whether the store
/// can serve.
#[async_trait]
pub trait WorkspaceStore: Send + Sync + 'static {
    /// Whether every migration this build holds is applied; [`crate::Error::Unavailable`]
    /// when the store cannot be reached ([`crate::Memory::health`] turns `false` into an error).
    async fn schema_current(&self) -> Result<bool>;
    /// Creates a workspace. [`crate::Error::AlreadyExists`] when the name is taken.
    async fn create_workspace(&self, name: &str) -> Result<Workspace>;
    /// Looks a workspace up by name. [`crate::Error::NotFound`] when there is none.
    async fn workspace(&self, name: &str) -> Result<Workspace>;
    /// Every workspace with its node count, by name.
    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>>;
    /// Renames a workspace; [`crate::Error::AlreadyExists`] when `new_name` is taken.
    async fn rename_workspace(&self, request: &Checked<RenameWorkspace>) -> Result<Workspace>;
    /// Deletes a workspace and everything in it. Without `force`, a workspace that holds
    /// nodes is refused with [`crate::Error::Conflict`].
    async fn delete_workspace(&self, request: &Checked<DeleteWorkspace>) -> Result<()>;
}
