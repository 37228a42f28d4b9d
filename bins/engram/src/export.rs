//! `engram export --workspace NAME --format …`: a workspace as engram's lossless JSONL, as
//! the reference memory server's JSONL (to go back to it), or drawn as Mermaid or DOT.
//!
//! Pages are read one at a time (each page one snapshot), so memory stays bounded for the
//! JSONL formats. All nodes come before all relations, and reflections come last, so an
//! import never waits on an endpoint or a target. A workspace written to during an export may come out as a mix of before and
//! after (pages are separate snapshots); export from a quiet workspace for an exact copy.

use std::io::Write;

use anyhow::{Context, Result};
use engram_domain::transfer::{GraphPageQuery, NodeRecord, RelationRecord};
use engram_domain::{GetNeighborhood, Memory, ReflectionRecord, Relation, WorkspaceId};
use serde::Serialize;

use crate::cli::{ExportArgs, ExportFormat};

/// Nodes per page read.
const PAGE: u32 = 500;

/// A record with its `type` first, as the import reads it.
#[derive(Serialize)]
struct Tagged<'a, T> {
    r#type: &'static str,
    #[serde(flatten)]
    record: &'a T,
}

/// The reference memory server's entity line.
#[derive(Serialize)]
struct ReferenceEntity<'a> {
    r#type: &'static str,
    name: &'a str,
    #[serde(rename = "entityType")]
    entity_type: &'a str,
    observations: Vec<&'a str>,
}

/// The reference memory server's relation line.
#[derive(Serialize)]
struct ReferenceRelation<'a> {
    r#type: &'static str,
    from: &'a str,
    to: &'a str,
    #[serde(rename = "relationType")]
    relation_type: &'a str,
}

/// Runs `engram export`, writing to `out`.
pub async fn run(memory: &Memory, args: &ExportArgs, out: &mut dyn Write) -> Result<()> {
    let workspace = memory
        .workspace(&args.workspace)
        .await
        .with_context(|| format!("workspace {:?}", args.workspace))?;
    let drawing = matches!(args.format, ExportFormat::Mermaid | ExportFormat::Dot);
    anyhow::ensure!(
        drawing || args.around.is_none(),
        "--around draws part of the graph: use it with --format mermaid or dot"
    );
    match args.format {
        ExportFormat::Jsonl => {
            let header = serde_json::json!({
                "type": "engram",
                "version": 1,
                "workspace": workspace.name,
                "exported_at": chrono::Utc::now().to_rfc3339(),
            });
            writeln!(out, "{header}")?;
            // Over time: ended facts and relations with their periods, authors, aliases.
            write_lines(
                memory,
                workspace.id,
                true,
                out,
                |node| {
                    serde_json::to_string(&Tagged {
                        r#type: "node",
                        record: node,
                    })
                },
                |relation| {
                    serde_json::to_string(&Tagged {
                        r#type: "relation",
                        record: relation,
                    })
                },
            )
            .await?;
            write_reflections(memory, workspace.id, out).await?;
        }
        ExportFormat::Anthropic => {
            // What the reference server's format has no field for, counted to be said.
            let (summaries, tagged) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
            let entity = |node: &NodeRecord| {
                summaries.set(summaries.get() + usize::from(node.summary.is_some()));
                tagged.set(tagged.get() + usize::from(!node.tags.is_empty()));
                serde_json::to_string(&ReferenceEntity {
                    r#type: "entity",
                    name: &node.name,
                    entity_type: &node.entity_type,
                    observations: node
                        .observations
                        .iter()
                        .map(|o| o.content.as_str())
                        .collect(),
                })
            };
            let relation = |relation: &RelationRecord| {
                serde_json::to_string(&ReferenceRelation {
                    r#type: "relation",
                    from: &relation.from,
                    to: &relation.to,
                    relation_type: &relation.relation_type,
                })
            };
            // The graph now: the reference server knows no ended facts.
            write_lines(memory, workspace.id, false, out, entity, relation).await?;
            let (summaries, tagged) = (summaries.get(), tagged.get());
            if summaries + tagged > 0 {
                eprintln!(
                    "the reference server's format has no summaries, tags, ordinals, \
                     timestamps or ended facts: {summaries} summaries and the tags of {tagged} \
                     nodes were left out (`--format jsonl` keeps everything)"
                );
            }
        }
        ExportFormat::Mermaid | ExportFormat::Dot => {
            let (nodes, relations) = match &args.around {
                Some(name) => {
                    let around = memory
                        .call(workspace.id, GetNeighborhood::new(name, args.depth))
                        .await
                        .with_context(|| format!("--around {name:?}"))?;
                    let mut nodes: Vec<(String, String)> = (around.nodes.into_iter())
                        .map(|n| (n.name, n.entity_type))
                        .collect();
                    nodes.sort();
                    (nodes, around.relations)
                }
                None => {
                    let (mut nodes, mut relations) = (Vec::new(), Vec::new());
                    each_page(memory, workspace.id, false, false, |page, edges| {
                        nodes.extend(page.iter().map(|n| (n.name.clone(), n.entity_type.clone())));
                        relations.extend(
                            (edges.iter()).map(|r| Relation::new(&r.from, &r.to, &r.relation_type)),
                        );
                        Ok(())
                    })
                    .await?;
                    (nodes, relations)
                }
            };
            let drawing = match args.format {
                ExportFormat::Mermaid => mermaid(&nodes, &relations),
                _ => dot(&nodes, &relations),
            };
            out.write_all(drawing.as_bytes())?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Writes a line for every node (with its observations), then one for every relation; over
/// time ([`GraphPageQuery::over_time`]) or the graph now.
async fn write_lines(
    memory: &Memory,
    workspace: WorkspaceId,
    over_time: bool,
    out: &mut dyn Write,
    node_line: impl Fn(&NodeRecord) -> serde_json::Result<String>,
    relation_line: impl Fn(&RelationRecord) -> serde_json::Result<String>,
) -> Result<()> {
    each_page(memory, workspace, true, over_time, |nodes, _| {
        for node in nodes {
            writeln!(out, "{}", node_line(node)?)?;
        }
        Ok(())
    })
    .await?;
    each_page(memory, workspace, false, over_time, |_, relations| {
        for relation in relations {
            writeln!(out, "{}", relation_line(relation)?)?;
        }
        Ok(())
    })
    .await
}

/// Writes the workspace's reflections, oldest first, after its nodes and relations (so an
/// import finds their targets).
async fn write_reflections(
    memory: &Memory,
    workspace: WorkspaceId,
    out: &mut dyn Write,
) -> Result<()> {
    let mut after = 0;
    loop {
        let page = memory.reflections_page(workspace, after, PAGE).await?;
        for reflection in &page {
            let record = ReflectionRecord::from(reflection.clone());
            let line = serde_json::to_string(&Tagged {
                r#type: "reflection",
                record: &record,
            })?;
            writeln!(out, "{line}")?;
        }
        match page.last() {
            Some(last) if page.len() == PAGE as usize => after = last.id,
            _ => return Ok(()),
        }
    }
}

/// Calls `each` with every page of the workspace's nodes (with their observations when
/// `observations`) and the relations leaving them, in name order; `over_time` as
/// [`GraphPageQuery::over_time`].
async fn each_page(
    memory: &Memory,
    workspace: WorkspaceId,
    observations: bool,
    over_time: bool,
    mut each: impl FnMut(&[NodeRecord], &[RelationRecord]) -> Result<()>,
) -> Result<()> {
    let mut after = None;
    loop {
        let query = GraphPageQuery {
            after: after.take(),
            limit: PAGE,
            entity_type: None,
            observations,
            over_time,
            totals: false,
        };
        let page = memory.graph_page(workspace, &query).await?;
        let nodes: Vec<NodeRecord> = page.nodes.into_iter().map(|(node, _)| node).collect();
        each(&nodes, &page.relations)?;
        if nodes.len() < PAGE as usize {
            return Ok(());
        }
        after = nodes.last().map(|n| n.name.clone());
    }
}

/// A Mermaid flowchart: one box per `(name, type)`, one labelled arrow per relation.
pub fn mermaid(nodes: &[(String, String)], relations: &[Relation]) -> String {
    use std::fmt::Write;
    // Mermaid ids must be plain words: number the nodes and label them with their names.
    let ids: std::collections::HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.as_str(), i))
        .collect();
    let escape = |text: &str| {
        text.replace('#', "#35;")
            .replace('"', "#quot;")
            .replace('<', "#lt;")
            .replace('>', "#gt;")
    };
    let mut out = String::from("flowchart LR\n");
    for (i, (name, entity_type)) in nodes.iter().enumerate() {
        let _ = writeln!(
            out,
            "    n{i}[\"{}<br/><i>{}</i>\"]",
            escape(name),
            escape(entity_type)
        );
    }
    for relation in relations {
        if let (Some(from), Some(to)) = (
            ids.get(relation.from.as_str()),
            ids.get(relation.to.as_str()),
        ) {
            let _ = writeln!(
                out,
                "    n{from} -->|\"{}\"| n{to}",
                escape(&relation.relation_type)
            );
        }
    }
    out
}

/// A Graphviz digraph: one box per `(name, type)`, one labelled edge per relation.
pub fn dot(nodes: &[(String, String)], relations: &[Relation]) -> String {
    use std::fmt::Write;
    let quote = |text: &str| {
        let escaped = text
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        format!("\"{escaped}\"")
    };
    let mut out =
        String::from("digraph engram {\n    rankdir=LR;\n    node [shape=box, style=rounded];\n");
    for (name, entity_type) in nodes {
        let label = quote(&format!("{name}\n{entity_type}"));
        let _ = writeln!(out, "    {} [label={label}];", quote(name));
    }
    for relation in relations {
        let _ = writeln!(
            out,
            "    {} -> {} [label={}];",
            quote(&relation.from),
            quote(&relation.to),
            quote(&relation.relation_type)
        );
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn graph() -> (Vec<(String, String)>, Vec<Relation>) {
        let nodes = [
            ("Alice", "person"),
            ("Bob \"B\" <b>", "person"),
            ("engram#1", "project"),
        ]
        .iter()
        .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
        .collect();
        let relations = [
            ("Alice", "knows", "Bob \"B\" <b>"),
            ("Alice", "works_on", "engram#1"),
        ]
        .iter()
        .map(|(f, r, t)| Relation::new(*f, *t, *r))
        .collect();
        (nodes, relations)
    }

    #[test]
    fn mermaid_numbers_nodes_and_escapes_labels() {
        let (nodes, relations) = graph();
        expect![[r#"
            flowchart LR
                n0["Alice<br/><i>person</i>"]
                n1["Bob #quot;B#quot; #lt;b#gt;<br/><i>person</i>"]
                n2["engram#35;1<br/><i>project</i>"]
                n0 -->|"knows"| n1
                n0 -->|"works_on"| n2
        "#]]
        .assert_eq(&mermaid(&nodes, &relations));
    }

    #[test]
    fn dot_quotes_names_and_labels() {
        let (nodes, relations) = graph();
        expect![[r#"
            digraph engram {
                rankdir=LR;
                node [shape=box, style=rounded];
                "Alice" [label="Alice\nperson"];
                "Bob \"B\" <b>" [label="Bob \"B\" <b>\nperson"];
                "engram#1" [label="engram#1\nproject"];
                "Alice" -> "Bob \"B\" <b>" [label="knows"];
                "Alice" -> "engram#1" [label="works_on"];
            }
        "#]]
        .assert_eq(&dot(&nodes, &relations));
    }
}
