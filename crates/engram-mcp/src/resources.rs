//! MCP resources, which clients offer as context to attach: the workspace brief
//! (`engram://brief`) and every node (`engram://node/{name}`, the name percent-encoded), read
//! as markdown. `resources/list` pages through the nodes by name.

use engram_domain::transfer::GraphPageQuery;
use engram_domain::{OpenNodes, WorkspaceId};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData;
use rmcp::model::{
    ListResourcesResult, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};

use crate::EngramServer;
use crate::error::protocol_error;
use crate::markdown;

/// The brief's URI.
pub const BRIEF_URI: &str = "engram://brief";

/// What precedes a percent-encoded node name in its URI.
pub const NODE_URI_PREFIX: &str = "engram://node/";

/// Nodes listed on one page of `resources/list`.
pub const RESOURCES_PAGE: u32 = 100;

/// Characters left as they are in a node's URI: RFC 3986's unreserved ones.
const KEPT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The URI of the node `name`.
pub fn node_uri(name: &str) -> String {
    format!("{NODE_URI_PREFIX}{}", utf8_percent_encode(name, KEPT))
}

/// What a resource link to the node `name` carries: its URI and name, nothing more (a
/// search sends ten of them; the template says the type).
pub fn node_link(name: &str) -> Resource {
    Resource::new(node_uri(name), name)
}

/// The largest bound a brief may be asked for, in characters.
pub const BRIEF_MAX_CHARS: usize = 20_000;

/// The bound a brief's URI asks for: `` (the default) or `?max_chars=N`.
fn brief_bound(uri: &str, query: &str) -> Result<usize, ErrorData> {
    if query.is_empty() {
        return Ok(markdown::BRIEF_CHARS);
    }
    let wrong = || {
        ErrorData::invalid_params(
            format!("{uri}: the brief takes `?max_chars=N`, N from 200 to {BRIEF_MAX_CHARS}"),
            None,
        )
    };
    let chars: usize = (query.strip_prefix("?max_chars="))
        .and_then(|n| n.parse().ok())
        .ok_or_else(wrong)?;
    if (200..=BRIEF_MAX_CHARS).contains(&chars) {
        Ok(chars)
    } else {
        Err(wrong())
    }
}

/// The resource templates: a node by name.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{NODE_URI_PREFIX}{{name}}"), "node")
            .with_title("A node of the memory")
            .with_description(
                "One node as markdown: type, tags, summary, observations by ordinal, relations.",
            )
            .with_mime_type("text/markdown"),
    ]
}

impl EngramServer {
    /// `resources/list`: the brief first, then the workspace's nodes by name,
    /// [`RESOURCES_PAGE`] a page; `cursor` is the previous page's `nextCursor`.
    pub(crate) async fn list_resource_page(
        &self,
        workspace: WorkspaceId,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources = Vec::new();
        if cursor.is_none() {
            resources.push(
                Resource::new(BRIEF_URI, "brief")
                    .with_title("Memory brief")
                    .with_description(
                        "The workspace at a glance: counts, most connected and recently \
                         changed nodes with their summaries, in 2,000 characters \
                         (engram://brief?max_chars=N for another bound).",
                    )
                    .with_mime_type("text/markdown"),
            );
        }
        let query = GraphPageQuery {
            after: cursor,
            limit: RESOURCES_PAGE + 1,
            entity_type: None,
            observations: false,
            over_time: false,
            totals: false,
        };
        let page = (self.memory.graph_page(workspace, &query).await).map_err(protocol_error)?;
        let more = page.nodes.len() > RESOURCES_PAGE as usize;
        let mut last = None;
        for (node, _) in page.nodes.into_iter().take(RESOURCES_PAGE as usize) {
            let link = node_link(&node.name).with_mime_type("text/markdown");
            resources.push(link.with_description(node.entity_type));
            last = Some(node.name);
        }
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = last.filter(|_| more);
        Ok(result)
    }

    /// `resources/read`: the brief (`engram://brief`, or `engram://brief?max_chars=N` for
    /// another bound than [`markdown::BRIEF_CHARS`], 200–[`BRIEF_MAX_CHARS`]) or one node, as
    /// markdown.
    pub(crate) async fn read_resource_uri(
        &self,
        workspace: WorkspaceId,
        uri: &str,
    ) -> Result<ReadResourceResult, ErrorData> {
        let text = if let Some(query) = uri.strip_prefix(BRIEF_URI) {
            let max_chars = brief_bound(uri, query)?;
            let brief = (self
                .memory
                .brief(workspace, engram_domain::BRIEF_NODES)
                .await)
                .map_err(protocol_error)?;
            markdown::brief(&brief, max_chars)
        } else if let Some(encoded) = uri.strip_prefix(NODE_URI_PREFIX) {
            let name = percent_decode_str(encoded).decode_utf8().map_err(|_| {
                ErrorData::invalid_params(format!("{uri}: the node name is not UTF-8"), None)
            })?;
            let opened = (self
                .memory
                .call(workspace, OpenNodes::new(&[name.into_owned()]))
                .await)
                .map_err(protocol_error)?;
            let Some(node) = opened.entities.first() else {
                return Err(ErrorData::resource_not_found(
                    format!("no node at {uri} in this workspace"),
                    None,
                ));
            };
            markdown::node(node, &opened.relations)
        } else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "unknown resource {uri}: engram serves {BRIEF_URI} and {NODE_URI_PREFIX}{{name}}"
                ),
                None,
            ));
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/markdown"),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_uris_encode_every_reserved_character_and_decode_back() {
        let name = "Ana María / team: infra?#1 50%";
        let uri = node_uri(name);
        assert_eq!(
            uri,
            "engram://node/Ana%20Mar%C3%ADa%20%2F%20team%3A%20infra%3F%231%2050%25"
        );
        let encoded = uri.strip_prefix(NODE_URI_PREFIX).unwrap();
        assert_eq!(percent_decode_str(encoded).decode_utf8().unwrap(), name);
    }
}
