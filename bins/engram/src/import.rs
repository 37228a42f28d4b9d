//! `engram import FILE --workspace NAME`: a JSONL graph into a workspace, streamed.
//!
//! Takes the reference memory server's file (`memory.jsonl`, or its older `memory.json` of the
//! same lines: `{"type":"entity","name","entityType","observations"}` and
//! `{"type":"relation","from","to","relationType"}`) and engram's own export (`"type":"node"`
//! lines carrying ordinals and timestamps). Lines are read one at a time and written in
//! batches, each batch one transaction, so memory stays bounded whatever the file's size.
//! Importing twice adds nothing: observations are deduplicated by text per node, relations by
//! their triple. A relation whose endpoint has not appeared yet waits for the end of the file;
//! one whose endpoint never appears is reported, never created or silently dropped.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::Path;

use anyhow::{Context, Result};
use engram_domain::transfer::{
    ImportOutcome, NodeRecord, ObservationRecord, RelationRecord, validate_node, validate_relation,
};
use engram_domain::{IMPORT_BATCH_OBSERVATIONS, Memory, WorkspaceId, limits};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;

use crate::cli::ImportArgs;

/// Nodes per batch (each batch is one transaction).
const BATCH_NODES: usize = 500;
/// Relations per batch.
const BATCH_RELATIONS: usize = limits::MAX_BATCH;
/// Problems printed in full; the rest are counted.
const SHOWN_PROBLEMS: usize = 50;
/// The longest line read: a longer one is refused (and skipped without being held in memory).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line of the file as read: its text, or why it cannot be read as text.
#[derive(Debug, PartialEq, Eq)]
pub enum RawLine {
    /// The line, without its line break.
    Text(String),
    /// Longer than [`MAX_LINE_BYTES`]: this many bytes.
    TooLong(usize),
    /// Not UTF-8: the first invalid byte's offset.
    NotUtf8(usize),
}

/// Reads the next line of `reader` (`None` at the end) and how many bytes it took, never
/// holding more than `max` bytes of it.
///
/// # Errors
/// The reader's.
pub fn read_line(
    reader: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<(RawLine, usize)>> {
    buffer.clear();
    let (mut taken, mut skipped) = (0, 0);
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            if taken == 0 {
                return Ok(None);
            }
            break;
        }
        let (chunk, ends) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let used = chunk.len();
        if skipped == 0 && buffer.len() + used <= max + 1 {
            buffer.extend_from_slice(chunk);
        } else {
            skipped += used;
        }
        reader.consume(used);
        taken += used;
        if ends {
            break;
        }
    }
    if skipped > 0 {
        return Ok(Some((RawLine::TooLong(taken), taken)));
    }
    while buffer.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buffer.pop();
    }
    let line = match std::str::from_utf8(buffer) {
        Ok(text) => RawLine::Text(text.to_owned()),
        Err(error) => RawLine::NotUtf8(error.valid_up_to()),
    };
    Ok(Some((line, taken)))
}

/// One meaningful line of an import file.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A node, from either format.
    Node(NodeRecord),
    /// A relation, from either format.
    Relation(RelationRecord),
    /// engram's export header (or another line that carries no graph data).
    Header,
}

/// The reference server's entity line.
#[derive(Deserialize)]
struct ReferenceEntity {
    name: String,
    #[serde(rename = "entityType")]
    entity_type: String,
    #[serde(default)]
    observations: Vec<String>,
}

/// A relation line of either format (`relationType` is the reference server's spelling).
#[derive(Deserialize)]
struct RelationLine {
    from: String,
    to: String,
    #[serde(alias = "relationType")]
    relation_type: String,
    #[serde(default)]
    created_at: Option<engram_domain::Timestamp>,
}

/// What a refused line was meant to be, for the report's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An entity or node, with this many observations.
    Entity(u64),
    /// A relation.
    Relation,
    /// Nothing legible.
    Unknown,
}

/// A refused line: what it was meant to be, and what is wrong with it (not JSON, an unknown
/// `type`, a missing field, a broken limit).
#[derive(Debug, PartialEq, Eq)]
pub struct Rejected {
    /// What the line was meant to be.
    pub kind: Kind,
    /// Why it was refused.
    pub reason: String,
}

/// Parses and validates one line; `Ok(None)` for a blank one.
pub fn parse_line(text: &str) -> Result<Option<Line>, Rejected> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Rejected {
        kind: sniffed_kind(text),
        reason: format!("not JSON: {e}"),
    })?;
    let kind = kind_of(&value);
    let refuse = |reason: String| Rejected { kind, reason };
    let line = match value.get("type").and_then(|t| t.as_str()).unwrap_or("") {
        "entity" => {
            let entity: ReferenceEntity =
                serde_json::from_value(value).map_err(|e| refuse(format!("entity: {e}")))?;
            Line::Node(NodeRecord {
                name: entity.name,
                entity_type: entity.entity_type,
                observations: (entity.observations.into_iter())
                    .map(|content| ObservationRecord {
                        content,
                        ..ObservationRecord::default()
                    })
                    .collect(),
                ..NodeRecord::default()
            })
        }
        "node" => {
            Line::Node(serde_json::from_value(value).map_err(|e| refuse(format!("node: {e}")))?)
        }
        "relation" => {
            let relation: RelationLine =
                serde_json::from_value(value).map_err(|e| refuse(format!("relation: {e}")))?;
            Line::Relation(RelationRecord {
                from: relation.from,
                to: relation.to,
                relation_type: relation.relation_type,
                created_at: relation.created_at,
            })
        }
        "engram" => Line::Header,
        "" => return Err(refuse("no \"type\" (entity, relation or node)".into())),
        other => {
            return Err(refuse(format!(
                "unknown type {other:?} (expected entity, relation or node)"
            )));
        }
    };
    match line {
        Line::Node(node) => validate_node(node)
            .map(|node| Some(Line::Node(node)))
            .map_err(|e| refuse(e.to_string())),
        Line::Relation(relation) => validate_relation(&relation)
            .map(|()| Some(Line::Relation(relation)))
            .map_err(|e| refuse(e.to_string())),
        Line::Header => Ok(Some(Line::Header)),
    }
}

/// What an import did, line by line where something went wrong.
#[derive(Debug, Default)]
pub struct Report {
    /// What the batches wrote (without `relations_missing`: those are problems below).
    pub outcome: ImportOutcome,
    /// Entity lines refused.
    pub entities_rejected: u64,
    /// Observations on refused entity lines.
    pub observations_rejected: u64,
    /// Relation lines refused or left dangling.
    pub relations_rejected: u64,
    /// `(line number, reason)`, in file order.
    pub problems: Vec<(usize, String)>,
}

/// The batch being gathered, and the relations waiting for an endpoint.
struct Importer<'a> {
    memory: &'a Memory,
    workspace: WorkspaceId,
    dry_run: bool,
    nodes: Vec<NodeRecord>,
    node_index: HashMap<String, usize>,
    observations: usize,
    relations: Vec<(usize, RelationRecord)>,
    /// Relations whose endpoints were missing when their batch was written (or, in a dry
    /// run, had not appeared yet in the file).
    waiting: Vec<(usize, RelationRecord)>,
    /// In a dry run, every node name the file holds.
    seen: HashSet<String>,
    batches: usize,
    /// The first line of the batch being gathered (`None` when it is empty).
    batch_start: Option<usize>,
    report: Report,
}

impl Importer<'_> {
    async fn add_node(&mut self, line: usize, mut node: NodeRecord) -> Result<()> {
        loop {
            let room = IMPORT_BATCH_OBSERVATIONS - self.observations;
            let full = self.nodes.len() >= BATCH_NODES;
            if full || (node.observations.len() > room && !self.nodes.is_empty()) {
                self.flush().await?;
                continue;
            }
            if node.observations.len() <= room {
                self.push(node);
                self.batch_start.get_or_insert(line);
                return Ok(());
            }
            // More observations than a batch holds: in over several batches.
            let rest = node.observations.split_off(room);
            let head = NodeRecord {
                observations: std::mem::replace(&mut node.observations, rest),
                ..node.clone()
            };
            self.push(head);
            self.batch_start.get_or_insert(line);
            self.flush().await?;
        }
    }

    fn push(&mut self, node: NodeRecord) {
        self.observations += node.observations.len();
        if self.dry_run {
            self.seen.insert(node.name.clone());
        }
        match self.node_index.get(&node.name) {
            // The same name twice in one batch: one record, observations in file order.
            Some(&i) => self.nodes[i].observations.extend(node.observations),
            None => {
                self.node_index.insert(node.name.clone(), self.nodes.len());
                self.nodes.push(node);
            }
        }
    }

    async fn add_relation(&mut self, line: usize, relation: RelationRecord) -> Result<()> {
        if self.relations.len() >= BATCH_RELATIONS {
            self.flush().await?;
        }
        self.relations.push((line, relation));
        self.batch_start.get_or_insert(line);
        Ok(())
    }

    /// Writes the gathered batch in one transaction (in a dry run, only counts it).
    async fn flush(&mut self) -> Result<()> {
        let nodes = std::mem::take(&mut self.nodes);
        let relations = std::mem::take(&mut self.relations);
        self.node_index.clear();
        self.observations = 0;
        if nodes.is_empty() && relations.is_empty() {
            return Ok(());
        }
        // Until it is written, the batch's first line is where a re-run must start.
        let batch_start = self.batch_start.take();
        self.batches += 1;
        if self.dry_run {
            let outcome = &mut self.report.outcome;
            outcome.nodes_created += nodes.len() as u64;
            outcome.observations_added += nodes
                .iter()
                .map(|n| n.observations.len() as u64)
                .sum::<u64>();
            for (line, relation) in relations {
                if self.seen.contains(&relation.from) && self.seen.contains(&relation.to) {
                    self.report.outcome.relations_created += 1;
                } else {
                    self.waiting.push((line, relation));
                }
            }
            return Ok(());
        }
        let records: Vec<RelationRecord> = relations.iter().map(|(_, r)| r.clone()).collect();
        let mut outcome = match self.memory.import(self.workspace, nodes, &records).await {
            Ok(outcome) => outcome,
            Err(error) => {
                self.batch_start = batch_start;
                return Err(error).with_context(|| format!("writing batch {}", self.batches));
            }
        };
        // Missing relations come back in input order: find their lines in the same order.
        let mut lines = relations.into_iter();
        for missing in std::mem::take(&mut outcome.relations_missing) {
            if let Some(found) = lines.by_ref().find(|(_, r)| *r == missing) {
                self.waiting.push(found);
            }
        }
        self.report.outcome.absorb(outcome);
        Ok(())
    }

    /// Writes what is left, then the relations that waited for their endpoints, and reports
    /// the ones whose endpoints never appeared.
    async fn finish(&mut self) -> Result<()> {
        self.flush().await?;
        let waiting = std::mem::take(&mut self.waiting);
        let mut dangling = Vec::new();
        for chunk in waiting.chunks(BATCH_RELATIONS) {
            if self.dry_run {
                let names = chunk.iter().flat_map(|(_, r)| [&r.from, &r.to]);
                let missing = self.missing_nodes(names).await?;
                for (line, relation) in chunk {
                    if missing.contains(&relation.from) || missing.contains(&relation.to) {
                        dangling.push((*line, relation.clone()));
                    } else {
                        self.report.outcome.relations_created += 1;
                    }
                }
                continue;
            }
            let records: Vec<RelationRecord> = chunk.iter().map(|(_, r)| r.clone()).collect();
            let mut outcome = self
                .memory
                .import(self.workspace, Vec::new(), &records)
                .await?;
            let mut lines = chunk.iter();
            for missing in std::mem::take(&mut outcome.relations_missing) {
                if let Some(found) = lines.by_ref().find(|(_, r)| *r == missing) {
                    dangling.push(found.clone());
                }
            }
            self.report.outcome.absorb(outcome);
        }
        let names = dangling.iter().flat_map(|(_, r)| [&r.from, &r.to]);
        let missing = self.missing_nodes(names).await?;
        for (line, relation) in dangling {
            let absent: Vec<String> = [&relation.from, &relation.to]
                .into_iter()
                .filter(|name| missing.contains(*name))
                .map(|name| format!("{name:?}"))
                .collect();
            self.report.relations_rejected += 1;
            self.report.problems.push((
                line,
                format!(
                    "relation {} -{}-> {}: no node {} in the file or the workspace",
                    relation.from,
                    relation.relation_type,
                    relation.to,
                    absent.join(" or ")
                ),
            ));
        }
        self.report.problems.sort_by_key(|(line, _)| *line);
        Ok(())
    }

    /// Which of `names` neither the file (in a dry run) nor the workspace holds.
    async fn missing_nodes<'n>(
        &self,
        names: impl Iterator<Item = &'n String>,
    ) -> Result<HashSet<String>> {
        let mut unknown: Vec<String> = names
            .filter(|name| !self.seen.contains(*name))
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        unknown.sort();
        let mut missing = HashSet::new();
        for chunk in unknown.chunks(limits::MAX_BATCH) {
            let opened = self.memory.open_nodes(self.workspace, chunk).await?;
            missing.extend(opened.not_found);
        }
        Ok(missing)
    }
}

/// Runs `engram import`.
pub async fn run(memory: &Memory, args: ImportArgs) -> Result<()> {
    let workspace = match memory.workspace(&args.workspace).await {
        Ok(workspace) => workspace,
        Err(engram_domain::Error::NotFound { .. }) if args.create_workspace && !args.dry_run => {
            memory.create_workspace(&args.workspace).await?
        }
        Err(engram_domain::Error::NotFound { .. }) if args.create_workspace => {
            // A dry run writes nothing, a workspace included: check against an empty one.
            return Err(anyhow::anyhow!(
                "workspace {:?} does not exist yet; a dry run creates nothing, so run it without \
                 --dry-run to create it",
                args.workspace
            ));
        }
        Err(error @ engram_domain::Error::NotFound { .. }) => {
            return Err(error).with_context(|| {
                format!(
                    "add --create-workspace, or run `engram workspace create {}`",
                    args.workspace
                )
            });
        }
        Err(error) => return Err(error.into()),
    };
    let (reader, length) = open(&args.file)?;
    let progress = progress_bar(length);
    let mut importer = Importer {
        memory,
        workspace: workspace.id,
        dry_run: args.dry_run,
        nodes: Vec::new(),
        node_index: HashMap::new(),
        observations: 0,
        relations: Vec::new(),
        waiting: Vec::new(),
        seen: HashSet::new(),
        batches: 0,
        batch_start: None,
        report: Report::default(),
    };
    let mut number = 0;
    let read = read_all(&mut importer, reader, &progress, &mut number).await;
    progress.set_message("writing relations that waited for their nodes");
    let finished = match read {
        Ok(()) => importer.finish().await,
        Err(error) => Err(error),
    };
    progress.finish_and_clear();
    // The table is printed whatever happened, so a stopped import says how far it got.
    print!(
        "{}",
        render(&importer.report, &args, &workspace.name, number)
    );
    if let Err(error) = finished {
        let resume = importer.batch_start.unwrap_or(number);
        return Err(error.context(format!(
            "the import stopped at line {number}; every batch before line {resume} is written. \
             Run the same command again to go on: what is there already is skipped"
        )));
    }
    anyhow::ensure!(
        importer.report.problems.is_empty(),
        "{} line(s) were not imported (listed above); everything else was",
        importer.report.problems.len()
    );
    Ok(())
}

/// Reads every line of `reader` into `importer`, counting lines in `number`. A line that
/// cannot be read as text (not UTF-8, longer than [`MAX_LINE_BYTES`]) or parsed is refused
/// with its number and the import goes on; a byte-order mark before the first line is
/// skipped.
async fn read_all(
    importer: &mut Importer<'_>,
    reader: Box<dyn Read>,
    progress: &ProgressBar,
    number: &mut usize,
) -> Result<()> {
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    while let Some((line, read)) =
        read_line(&mut reader, &mut buffer, MAX_LINE_BYTES).context("reading the file")?
    {
        *number += 1;
        progress.inc(read as u64);
        let parsed = match &line {
            RawLine::Text(text) if *number == 1 => {
                parse_line(text.strip_prefix('\u{feff}').unwrap_or(text))
            }
            RawLine::Text(text) => parse_line(text),
            RawLine::TooLong(bytes) => Err(Rejected {
                kind: Kind::Unknown,
                reason: format!(
                    "a line of {bytes} bytes, longer than the {} MiB a line may have",
                    MAX_LINE_BYTES / (1024 * 1024)
                ),
            }),
            RawLine::NotUtf8(at) => Err(Rejected {
                kind: Kind::Unknown,
                reason: format!("not UTF-8 text (an invalid byte at offset {at})"),
            }),
        };
        match parsed {
            Ok(None | Some(Line::Header)) => {}
            Ok(Some(Line::Node(node))) => importer.add_node(*number, node).await?,
            Ok(Some(Line::Relation(relation))) => importer.add_relation(*number, relation).await?,
            Err(Rejected { kind, reason }) => {
                let report = &mut importer.report;
                match kind {
                    Kind::Entity(observations) => {
                        report.entities_rejected += 1;
                        report.observations_rejected += observations;
                    }
                    Kind::Relation => report.relations_rejected += 1,
                    Kind::Unknown => {}
                }
                report.problems.push((*number, reason));
            }
        }
    }
    Ok(())
}

/// The kind of a line that is not JSON (a truncated one, say), if its type is legible.
fn sniffed_kind(text: &str) -> Kind {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains(r#""type":"entity""#) || squeezed.contains(r#""type":"node""#) {
        Kind::Entity(0)
    } else if squeezed.contains(r#""type":"relation""#) {
        Kind::Relation
    } else {
        Kind::Unknown
    }
}

/// The kind of a parsed line, by its `type`.
fn kind_of(value: &serde_json::Value) -> Kind {
    match value.get("type").and_then(|t| t.as_str()) {
        Some("entity" | "node") => Kind::Entity(
            (value.get("observations"))
                .and_then(|o| o.as_array())
                .map_or(0, |o| o.len() as u64),
        ),
        Some("relation") => Kind::Relation,
        _ => Kind::Unknown,
    }
}

/// The file (or standard input for `-`) and its length when known.
fn open(path: &Path) -> Result<(Box<dyn Read>, Option<u64>)> {
    if path == Path::new("-") {
        return Ok((Box::new(std::io::stdin()), None));
    }
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let length = file.metadata().ok().map(|m| m.len());
    Ok((Box::new(file), length))
}

/// A bar by bytes read on a terminal (a spinner for standard input); nothing elsewhere.
fn progress_bar(length: Option<u64>) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    match length {
        Some(length) => ProgressBar::new(length).with_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes}  {bytes_per_sec}  {msg}")
                .expect("a valid template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {bytes} read  {msg}")
                .expect("a valid template"),
        ),
    }
}

/// The final report: a table of what was imported, already present and rejected, then each
/// problem with its line number.
pub fn render(report: &Report, args: &ImportArgs, workspace: &str, lines: usize) -> String {
    use std::fmt::Write;
    let o = &report.outcome;
    let mut out = String::new();
    let (verb, imported, present) = if args.dry_run {
        ("checked (dry run: nothing written)", "valid", "")
    } else {
        ("imported", "imported", "already present")
    };
    let _ = writeln!(
        out,
        "{verb}: {} ({lines} lines) into workspace {workspace}",
        args.file.display()
    );
    let _ = writeln!(
        out,
        "{:<14}{imported:>10}{present:>17}{:>10}",
        "", "rejected"
    );
    let rows = [
        (
            "entities",
            o.nodes_created,
            o.nodes_existing,
            report.entities_rejected,
        ),
        (
            "observations",
            o.observations_added,
            o.observations_existing,
            report.observations_rejected,
        ),
        (
            "relations",
            o.relations_created,
            o.relations_existing,
            report.relations_rejected,
        ),
    ];
    for (what, new, existing, rejected) in rows {
        let existing = if args.dry_run {
            String::new()
        } else {
            existing.to_string()
        };
        let _ = writeln!(out, "{what:<14}{new:>10}{existing:>17}{rejected:>10}");
    }
    for (line, reason) in report.problems.iter().take(SHOWN_PROBLEMS) {
        let _ = writeln!(out, "line {line}: {reason}");
    }
    if report.problems.len() > SHOWN_PROBLEMS {
        let _ = writeln!(out, "… and {} more", report.problems.len() - SHOWN_PROBLEMS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_within_their_limit_and_bad_bytes_are_named() {
        let mut bytes = b"first\nsecond\r\n".to_vec();
        bytes.extend_from_slice(&[b'o', b'k', 0xff, b'\n']);
        bytes.extend_from_slice(&[b'x'; 40]);
        bytes.extend_from_slice(b"\nlast");
        let mut reader = BufReader::with_capacity(8, bytes.as_slice());
        let mut buffer = Vec::new();
        let mut lines = Vec::new();
        while let Some(line) = read_line(&mut reader, &mut buffer, 16).unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                (RawLine::Text("first".into()), 6),
                (RawLine::Text("second".into()), 8),
                (RawLine::NotUtf8(2), 4),
                (RawLine::TooLong(41), 41),
                (RawLine::Text("last".into()), 4),
            ]
        );
        // Only what fits the limit was ever held.
        assert!(buffer.capacity() < 64, "{}", buffer.capacity());
    }

    #[test]
    fn both_formats_parse_and_bad_lines_say_why() {
        let entity = parse_line(
            r#"{"type":"entity","name":"Alice","entityType":"person","observations":["a","b"]}"#,
        )
        .unwrap()
        .unwrap();
        let Line::Node(node) = entity else {
            panic!("{entity:?}")
        };
        assert_eq!((node.name.as_str(), node.observations.len()), ("Alice", 2));
        assert_eq!(node.observations[0].ordinal, None);

        let relation = r#"{"type":"relation","from":"A","to":"B","relationType":"knows"}"#;
        assert!(
            matches!(parse_line(relation), Ok(Some(Line::Relation(r))) if r.relation_type == "knows")
        );
        let node = r#"{"type":"node","name":"A","entity_type":"t","next_ordinal":4,
                       "observations":[{"ordinal":3,"content":"c"}]}"#;
        assert!(matches!(parse_line(node), Ok(Some(Line::Node(n))) if n.next_ordinal == Some(4)));
        assert_eq!(parse_line("  \n"), Ok(None));
        assert_eq!(
            parse_line(r#"{"type":"engram","version":1}"#),
            Ok(Some(Line::Header))
        );

        for (line, expected) in [
            ("{not json", "not JSON"),
            (r#"{"name":"A"}"#, "no \"type\""),
            (r#"{"type":"edge"}"#, "unknown type \"edge\""),
            (
                r#"{"type":"entity","name":"A"}"#,
                "missing field `entityType`",
            ),
            (r#"{"type":"entity","name":"","entityType":"t"}"#, "`name`"),
            (
                r#"{"type":"relation","from":"A","to":"B","relationType":""}"#,
                "`relation_type`",
            ),
        ] {
            let error = parse_line(line).unwrap_err().reason;
            assert!(error.contains(expected), "{line}: {error}");
        }
    }
}
