//! MCP prompts, which clients offer as slash commands: `recall` (what memory holds on a
//! topic) and `consolidate` (the consolidation report, walked through with the model). Both
//! are rendered from the workspace's live data when a client gets them.

use engram_domain::{GetConsolidationReport, SearchNodes, WorkspaceId};
use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

use crate::EngramServer;
use crate::error::protocol_error;
use crate::markdown;

/// Nodes the `recall` prompt lists at most.
const RECALL_LIMIT: u32 = 10;

/// The prompts engram offers, as `prompts/list` returns them.
pub fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "recall",
            Some(
                "What memory holds on a topic: the nodes a hybrid search finds, each with \
                 the fact that matched and its summary, or word that nothing relevant is stored.",
            ),
            Some(vec![
                PromptArgument::new("topic")
                    .with_description("What to recall, in your own words.")
                    .with_required(true),
            ]),
        )
        .with_title("Recall from memory"),
        Prompt::new(
            "consolidate",
            Some(
                "Tidy the memory: the consolidation report (stale summaries, nodes to relate, \
                 orphans, clusters) with the steps to work through it using engram's tools.",
            ),
            Some(vec![
                PromptArgument::new("limit")
                    .with_description("Entries per list of the report, 1–1000 (default 20).")
                    .with_required(false),
            ]),
        )
        .with_title("Consolidate memory"),
    ]
}

/// The argument `name` of a prompt request, as a string.
fn argument<'a>(arguments: Option<&'a JsonObject>, name: &str) -> Option<&'a str> {
    arguments?
        .get(name)?
        .as_str()
        .map(str::trim)
        .filter(|value| !value.is_empty())
}

impl EngramServer {
    /// `prompts/get`: the prompt `name` rendered from `workspace`'s data.
    pub(crate) async fn render_prompt(
        &self,
        workspace: WorkspaceId,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<GetPromptResult, ErrorData> {
        match name {
            "recall" => {
                let topic = argument(arguments, "topic").ok_or_else(|| {
                    ErrorData::invalid_params("prompt recall needs the argument `topic`", None)
                })?;
                let results = (self.memory)
                    .call(workspace, SearchNodes::new(topic).limit(RECALL_LIMIT))
                    .await
                    .map_err(protocol_error)?;
                let text = markdown::recall(&results, topic).unwrap_or_else(|| {
                    format!(
                        "Memory holds nothing relevant on \"{}\".",
                        markdown::quote(topic, 80)
                    )
                });
                Ok(
                    GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                        .with_description(format!(
                            "What memory holds on \"{}\"",
                            markdown::quote(topic, 80)
                        )),
                )
            }
            "consolidate" => {
                let mut options = GetConsolidationReport::default();
                if let Some(limit) = argument(arguments, "limit") {
                    options.limit = limit.parse().map_err(|_| {
                        ErrorData::invalid_params(
                            format!("prompt consolidate: `limit` must be a whole number 1–1000, got {limit:?}"),
                            None,
                        )
                    })?;
                }
                let report = (self.memory)
                    .call(workspace, options)
                    .await
                    .map_err(protocol_error)?;
                let report = serde_json::to_string(&report)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("{CONSOLIDATE_STEPS}\n\nThe report:\n```json\n{report}\n```"),
                )])
                .with_description("Consolidate memory from its consolidation report"))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown prompt {other:?}: engram has recall and consolidate"),
                None,
            )),
        }
    }
}

/// What the `consolidate` prompt asks of the model, before the report.
const CONSOLIDATE_STEPS: &str = "\
Consolidate this memory, working through the consolidation report below with engram's tools. \
Go list by list and say briefly what you changed:
1. stale_summaries: for each node, read it (open_nodes) and write a summary of what it holds \
now with set_summary (the draft is a starting point; keep it to a few sentences).
2. relation_candidates: for each pair that is truly related, create_relations with a type in \
active voice (works_on, depends_on, part_of); leave pairs that only look alike.
3. orphaned_nodes: link each to what it belongs to, or leave it if it stands alone.
4. cluster_summary: where a cluster is one subject, relate its members to a node for it \
(create it with create_entities if missing).
Never delete a fact unless it is wrong or repeated; correct one with replace_observation.";
