//! `engram workspace …`: create, list, rename and delete workspaces, and set perspectives.

use anyhow::Result;
use engram_domain::{DeleteWorkspace, Memory, RenameWorkspace};

use crate::cli::{PerspectiveCommand, WorkspaceCommand};

/// Runs one `engram workspace` command.
pub async fn run(memory: &Memory, command: WorkspaceCommand) -> Result<()> {
    match command {
        WorkspaceCommand::Create { name } => {
            let workspace = memory.create_workspace(&name).await?;
            outln!("created workspace {}", workspace.name);
        }
        WorkspaceCommand::List { json } => {
            let workspaces = memory.list_workspaces().await?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&workspaces)?);
            } else if workspaces.is_empty() {
                outln!("no workspaces yet: create one with `engram workspace create NAME`");
            } else {
                outln!("{:<32} {:>8}  created", "name", "nodes");
                for info in workspaces {
                    outln!(
                        "{:<32} {:>8}  {}",
                        info.workspace.name,
                        info.node_count,
                        info.workspace.created_at.format("%Y-%m-%d %H:%M UTC")
                    );
                }
            }
        }
        WorkspaceCommand::Rename { name, new_name } => {
            memory
                .rename_workspace(RenameWorkspace::new(&*name, &*new_name))
                .await?;
            outln!("renamed workspace {name} to {new_name}");
        }
        WorkspaceCommand::Perspectives(command) => perspectives(memory, command).await?,
        WorkspaceCommand::Delete { name, force } => {
            memory
                .delete_workspace(DeleteWorkspace::new(&*name, force))
                .await?;
            outln!("deleted workspace {name}");
        }
    }
    Ok(())
}

async fn perspectives(memory: &Memory, command: PerspectiveCommand) -> Result<()> {
    match command {
        PerspectiveCommand::List { workspace } => {
            let workspace = memory.workspace(workspace.name()).await?;
            for p in memory.perspectives(workspace.id).await? {
                let state = if p.enabled { "enabled" } else { "disabled" };
                outln!("{} ({state})", p.name);
                outln!("  document: {}", p.document_template);
                outln!("  query:    {}", p.query_template);
            }
        }
        PerspectiveCommand::Set {
            names,
            workspace,
            document,
            query,
            disable,
            enable,
        } => {
            let (workspace, name) = crate::cli::workspace_and_name(&names, workspace.as_deref())
                .map_err(anyhow::Error::msg)?;
            let workspace = memory.workspace(&workspace).await?;
            let existing = memory
                .perspectives(workspace.id)
                .await?
                .into_iter()
                .find(|p| p.name == name);
            let perspective = engram_domain::perspectives::Perspective {
                id: engram_domain::PerspectiveId(0),
                document_template: document
                    .or_else(|| existing.as_ref().map(|p| p.document_template.clone()))
                    .unwrap_or_else(|| "{name}: {observation}".into()),
                query_template: query
                    .or_else(|| existing.as_ref().map(|p| p.query_template.clone()))
                    .unwrap_or_else(|| "{query}".into()),
                enabled: if disable {
                    false
                } else {
                    enable || existing.as_ref().is_none_or(|p| p.enabled)
                },
                name,
            };
            let stored = memory.set_perspective(workspace.id, &perspective).await?;
            let state = if stored.enabled {
                "enabled"
            } else {
                "disabled"
            };
            outln!(
                "perspective {} of {} is set ({state})",
                stored.name,
                workspace.name
            );
        }
    }
    Ok(())
}
