//! Node names resolved in one place (the plain parts in `aliases.rs`): every
//! tool that takes node names says which ([`Tool::node_names`]) and which names its answer reports as not found ([`Tool::missed`]);
//! [`answer`], which [`Memory::call`](crate::Memory::call) runs for them, answers a name that
//! is an alias as its node's and adds "did you mean" suggestions for what is still missing. A
//! tool's `run` knows nothing of aliases: it is its store call.
//!
//! The aliases are read only after a run missed a node (one indexed lookup), so a call that
//! finds its nodes costs nothing more; a call that misses through an alias runs once more,
//! for what it missed only ([`Tool::retry`], [`Tool::join`]).

use std::collections::HashMap;

pub(crate) mod aliases;

use crate::error::{Error, Result};
use crate::model::WorkspaceId;
use crate::naming::aliases::Aliased;
use crate::store::ResolveAliases;
use crate::suggestions::{did_you_mean, explain};
use crate::tool::{MemoryStore, Tool, ToolContext};

/// Runs `request` and answers the names it missed through aliases: a run that failed because
/// a node was not found runs again with every alias among its names replaced (one read of the
/// aliases for all of them); a run whose answer reports names not found runs again for the
/// part that missed through an alias ([`Tool::retry`]), joined into the first answer. What is
/// still missing then gets the names close to it ([`crate::suggestions`]).
///
/// # Errors
/// What the tool's runs report; a failed alias or suggestion lookup is not an error (the
/// first answer stands).
pub(crate) async fn answer<T: Tool>(
    context: ToolContext<'_>,
    workspace: WorkspaceId,
    mut request: T,
) -> Result<T::Output> {
    let store = context.store;
    let first = request.clone().run(context.clone(), workspace).await;
    let missed = match &first {
        Err(Error::NotFound { kind: "node", .. }) => (request.node_names().into_iter())
            .map(|n| n.clone())
            .collect(),
        Ok(output) => request.missed(output),
        Err(_) => return first,
    };
    let aliased = resolve(store, workspace, &missed).await.unwrap_or_default();
    // What the answer still misses: the first's, unless a run by the nodes' names changed it.
    let (answer, still_missed) = match first {
        first if aliased.is_empty() => (first, Some(missed)),
        Err(_) => {
            aliases::rename(request.node_names(), &aliased);
            (request.clone().run(context, workspace).await, None)
        }
        Ok(output) => match request.retry(&output, &aliased) {
            None => (Ok(output), Some(missed)),
            Some(again) => {
                let more = again.run(context, workspace).await?;
                (Ok(request.join(output, more, &aliased)), None)
            }
        },
    };
    match answer {
        Ok(mut output) if T::SUGGESTS => {
            let missing = still_missed.unwrap_or_else(|| request.missed(&output));
            if !missing.is_empty() {
                T::suggest(&mut output, did_you_mean(store, workspace, &missing).await);
            }
            Ok(output)
        }
        other => explain(store, workspace, other).await,
    }
}

/// The nodes the aliases among `names` stand for, by alias (names that are no alias are
/// absent): one store read, none for no names.
pub(crate) async fn resolve(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    names: &[String],
) -> Result<Aliased> {
    if names.is_empty() {
        return Ok(HashMap::new());
    }
    store
        .resolve_aliases(ResolveAliases { workspace, names })
        .await
}
