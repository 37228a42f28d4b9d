//! Lines gathered into batches, each written in one transaction, and the relations that wait
//! for their endpoints.

use engram_domain::OpenNodes;
use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};
use engram_domain::transfer::{ImportOutcome, NodeRecord, RelationRecord};
use engram_domain::{
    IMPORT_BATCH_OBSERVATIONS, ImportBatch, Memory, ReflectionRecord, WorkspaceId, limits,
};

/// Nodes per batch (each batch is one transaction).
const BATCH_NODES: usize = 500;
/// Relations per batch.
const BATCH_RELATIONS: usize = limits::MAX_BATCH;
/// The type of a node made for a relation's missing endpoint (`--create-missing-nodes`).
pub const MISSING_NODE_TYPE: &str = "unknown";

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
    /// Aliases not set because another node holds the name (their lines are among the
    /// problems; the rest of each line was imported).
    pub aliases_rejected: u64,
    /// `(line number, reason)`, in file order.
    pub problems: Vec<(usize, String)>,
    /// Reflections written and already there (same target, same text).
    pub reflections: (u64, u64),
    /// Reflection lines refused, or whose node or relation is not in the workspace.
    pub reflections_rejected: u64,
    /// Nodes of type [`MISSING_NODE_TYPE`] made for endpoints that neither the file nor the
    /// workspace held (`--create-missing-nodes`), sorted; counted among the entities too.
    pub endpoints_created: Vec<String>,
}

/// Where an import's batches go.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// A workspace that exists.
    Workspace(&'a Memory, WorkspaceId),
    /// A dry run into a workspace (or a database) that does not exist yet: every line is
    /// checked against an empty workspace and nothing is opened for writing.
    Nowhere,
}

/// How an import treats what it is given.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Only count what would be written.
    pub dry_run: bool,
    /// Make a node of type [`MISSING_NODE_TYPE`] for each endpoint no line or node provides,
    /// as the reference server keeps such relations.
    pub create_missing_nodes: bool,
}

/// The batch being gathered, and the relations waiting for an endpoint.
pub struct Importer<'a> {
    target: Target<'a>,
    options: Options,
    nodes: Vec<NodeRecord>,
    node_index: HashMap<String, usize>,
    /// The line of each node of the batch being gathered (its first, for a name given twice).
    node_lines: HashMap<String, usize>,
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
    /// Reflections, written last (when every node and relation is in).
    reflections: Vec<(usize, ReflectionRecord)>,
    /// What was done so far.
    pub report: Report,
}

impl<'a> Importer<'a> {
    /// An importer with nothing gathered.
    pub fn new(target: Target<'a>, options: Options) -> Self {
        Self {
            target,
            options,
            nodes: Vec::new(),
            node_index: HashMap::new(),
            node_lines: HashMap::new(),
            observations: 0,
            relations: Vec::new(),
            waiting: Vec::new(),
            seen: HashSet::new(),
            batches: 0,
            batch_start: None,
            reflections: Vec::new(),
            report: Report::default(),
        }
    }

    /// The first line a re-run must read again for nothing to be lost: the first line not
    /// written yet (of the gathered batch, or of a relation still waiting), or `next`.
    pub fn resume_line(&self, next: usize) -> usize {
        let waiting = self.waiting.iter().map(|(line, _)| *line);
        let reflections = self.reflections.first().map(|(line, _)| *line);
        (waiting.chain(self.batch_start).chain(reflections)).fold(next, usize::min)
    }
    /// Adds a node line; writes the gathered batch first when it is full.
    pub async fn add_node(&mut self, line: usize, mut node: NodeRecord) -> Result<()> {
        loop {
            let room = IMPORT_BATCH_OBSERVATIONS - self.observations;
            let full = self.nodes.len() >= BATCH_NODES;
            if full || (node.observations.len() > room && !self.nodes.is_empty()) {
                self.flush().await?;
                continue;
            }
            if node.observations.len() <= room {
                self.push(line, node);
                self.batch_start.get_or_insert(line);
                return Ok(());
            }
            // More observations than a batch holds: in over several batches (the aliases
            // with the first).
            let rest = node.observations.split_off(room);
            let head = NodeRecord {
                observations: std::mem::replace(&mut node.observations, rest),
                aliases: std::mem::take(&mut node.aliases),
                ..node.clone()
            };
            self.push(line, head);
            self.batch_start.get_or_insert(line);
            self.flush().await?;
        }
    }

    fn push(&mut self, line: usize, node: NodeRecord) {
        self.observations += node.observations.len();
        if self.options.dry_run {
            self.seen.insert(node.name.clone());
        }
        match self.node_index.get(&node.name) {
            // The same name twice in one batch: one record, observations and aliases in file
            // order.
            Some(&i) => {
                let record = &mut self.nodes[i];
                record.observations.extend(node.observations);
                for alias in node.aliases {
                    if !record.aliases.contains(&alias) {
                        record.aliases.push(alias);
                    }
                }
            }
            None => {
                self.node_index.insert(node.name.clone(), self.nodes.len());
                self.node_lines.insert(node.name.clone(), line);
                self.nodes.push(node);
            }
        }
    }

    /// Adds a relation line; writes the gathered batch first when it is full.
    pub async fn add_relation(&mut self, line: usize, relation: RelationRecord) -> Result<()> {
        if self.relations.len() >= BATCH_RELATIONS {
            self.flush().await?;
        }
        self.relations.push((line, relation));
        self.batch_start.get_or_insert(line);
        Ok(())
    }

    /// Adds a reflection line. Reflections come last in engram's export: once a thousand are
    /// gathered and no relation waits for an endpoint, what was read before them is written,
    /// then they are (else they wait for the end, where every target has come).
    pub async fn add_reflection(
        &mut self,
        line: usize,
        reflection: ReflectionRecord,
    ) -> Result<()> {
        self.reflections.push((line, reflection));
        if self.reflections.len() >= BATCH_RELATIONS && self.waiting.is_empty() {
            self.flush().await?;
            if self.waiting.is_empty() {
                self.write_reflections().await?;
            }
        }
        Ok(())
    }

    /// Writes the reflections, a thousand to a transaction, after everything else (in a dry
    /// run, counts them); one whose node or relation is not in the workspace is reported.
    async fn write_reflections(&mut self) -> Result<()> {
        let reflections = std::mem::take(&mut self.reflections);
        for chunk in reflections.chunks(BATCH_RELATIONS) {
            let Target::Workspace(memory, workspace) = self.target else {
                self.report.reflections.0 += chunk.len() as u64;
                continue;
            };
            if self.options.dry_run {
                // Counted as written: a dry run checks no target.
                self.report.reflections.0 += chunk.len() as u64;
                continue;
            }
            let records: Vec<ReflectionRecord> = chunk.iter().map(|(_, r)| r.clone()).collect();
            let outcome = (memory.import_reflections(workspace, records).await)
                .context("writing reflections")?;
            self.report.reflections.0 += outcome.created as u64;
            self.report.reflections.1 += outcome.existing as u64;
            for index in outcome.missing {
                let (line, record) = &chunk[index];
                self.report.reflections_rejected += 1;
                let target = engram_domain::reflections::target_text(&record.target);
                let why = format!("reflection on {target}: not in the workspace");
                self.report.problems.push((*line, why));
            }
        }
        Ok(())
    }

    /// Writes the gathered batch in one transaction (in a dry run, only counts it).
    pub async fn flush(&mut self) -> Result<()> {
        let nodes = std::mem::take(&mut self.nodes);
        let relations = std::mem::take(&mut self.relations);
        let node_lines = std::mem::take(&mut self.node_lines);
        self.node_index.clear();
        self.observations = 0;
        if nodes.is_empty() && relations.is_empty() {
            return Ok(());
        }
        // Until it is written, the batch's first line is where a re-run must start.
        let batch_start = self.batch_start.take();
        self.batches += 1;
        if self.options.dry_run {
            let outcome = &mut self.report.outcome;
            outcome.nodes_created += nodes.len() as u64;
            outcome.observations_added += nodes
                .iter()
                .map(|n| n.observations.len() as u64)
                .sum::<u64>();
            outcome.aliases_set += nodes.iter().map(|n| n.aliases.len() as u64).sum::<u64>();
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
        let mut outcome = match self.write(nodes, records).await {
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
        // An alias another node holds is refused with its node's line; the rest of the line
        // was imported.
        for refused in std::mem::take(&mut outcome.aliases_refused) {
            let line = node_lines.get(&refused.node).copied().unwrap_or_default();
            self.report.aliases_rejected += 1;
            self.report.problems.push((line, refused.to_string()));
        }
        self.report.outcome.absorb(outcome);
        Ok(())
    }

    /// Writes what is left, then the relations that waited for their endpoints; the ones whose
    /// endpoints never appeared get nodes of their own (`--create-missing-nodes`) or are
    /// reported.
    pub async fn finish(&mut self) -> Result<()> {
        self.flush().await?;
        let waiting = std::mem::take(&mut self.waiting);
        let mut dangling = Vec::new();
        // A dry run learns which names are missing chunk by chunk; a real run from the
        // relations the store could not create, below.
        let mut missing = HashSet::new();
        for chunk in waiting.chunks(BATCH_RELATIONS) {
            if self.options.dry_run {
                let names = chunk.iter().flat_map(|(_, r)| [&r.from, &r.to]);
                let absent = self.missing_nodes(names).await?;
                for (line, relation) in chunk {
                    if absent.contains(&relation.from) || absent.contains(&relation.to) {
                        dangling.push((*line, relation.clone()));
                    } else {
                        self.report.outcome.relations_created += 1;
                    }
                }
                missing.extend(absent);
                continue;
            }
            let records: Vec<RelationRecord> = chunk.iter().map(|(_, r)| r.clone()).collect();
            let mut outcome = self.write(Vec::new(), records).await?;
            let mut lines = chunk.iter();
            for missing in std::mem::take(&mut outcome.relations_missing) {
                if let Some(found) = lines.by_ref().find(|(_, r)| *r == missing) {
                    dangling.push(found.clone());
                }
            }
            self.report.outcome.absorb(outcome);
        }
        if !self.options.dry_run {
            let names = dangling.iter().flat_map(|(_, r)| [&r.from, &r.to]);
            missing = self.missing_nodes(names).await?;
        }
        if self.options.create_missing_nodes {
            self.create_endpoints(missing, dangling).await?;
        } else {
            self.dangling(&missing, dangling);
        }
        self.write_reflections().await?;
        // Aliases refused as batches were written come in among the lines refused as read.
        self.report.problems.sort_by_key(|(line, _)| *line);
        Ok(())
    }

    /// Reports each relation of `dangling` with the endpoints of it that are `missing`.
    fn dangling(&mut self, missing: &HashSet<String>, dangling: Vec<(usize, RelationRecord)>) {
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
                    "relation {} -{}-> {}: no node {} in the file or the workspace \
                     (--create-missing-nodes keeps it)",
                    relation.from,
                    relation.relation_type,
                    relation.to,
                    absent.join(" or ")
                ),
            ));
        }
    }

    /// Makes a node of type [`MISSING_NODE_TYPE`] for each of `missing`, then the relations
    /// that needed them (in a dry run, counts both).
    async fn create_endpoints(
        &mut self,
        missing: HashSet<String>,
        dangling: Vec<(usize, RelationRecord)>,
    ) -> Result<()> {
        let mut names: Vec<String> = missing.into_iter().collect();
        names.sort();
        if self.options.dry_run {
            self.report.outcome.nodes_created += names.len() as u64;
            self.report.outcome.relations_created += dangling.len() as u64;
        } else {
            for chunk in names.chunks(BATCH_NODES) {
                let nodes = (chunk.iter())
                    .map(|name| NodeRecord {
                        name: name.clone(),
                        entity_type: MISSING_NODE_TYPE.to_owned(),
                        ..NodeRecord::default()
                    })
                    .collect();
                let outcome = self.write(nodes, Vec::new()).await?;
                self.report.outcome.absorb(outcome);
            }
            let relations: Vec<RelationRecord> = dangling.into_iter().map(|(_, r)| r).collect();
            for chunk in relations.chunks(BATCH_RELATIONS) {
                let outcome = self.write(Vec::new(), chunk.to_vec()).await?;
                anyhow::ensure!(
                    outcome.relations_missing.is_empty(),
                    "a node made for a missing endpoint disappeared while the import ran"
                );
                self.report.outcome.absorb(outcome);
            }
        }
        self.report.endpoints_created = names;
        Ok(())
    }

    /// One transaction into the target workspace.
    async fn write(
        &self,
        nodes: Vec<NodeRecord>,
        relations: Vec<RelationRecord>,
    ) -> Result<ImportOutcome> {
        match self.target {
            Target::Workspace(memory, workspace) => {
                let batch = ImportBatch { nodes, relations };
                Ok(memory.import(workspace, batch).await?)
            }
            Target::Nowhere => anyhow::bail!("a dry run writes nothing"),
        }
    }

    /// Which of `names` neither the file (in a dry run) nor the workspace holds.
    async fn missing_nodes<'n>(
        &self,
        names: impl Iterator<Item = &'n String>,
    ) -> Result<HashSet<String>> {
        let unknown: HashSet<String> = names
            .filter(|name| !self.seen.contains(*name))
            .cloned()
            .collect();
        let Target::Workspace(memory, workspace) = self.target else {
            return Ok(unknown);
        };
        let mut unknown: Vec<String> = unknown.into_iter().collect();
        unknown.sort();
        let mut missing = HashSet::new();
        for chunk in unknown.chunks(limits::MAX_BATCH) {
            let opened = memory.call(workspace, OpenNodes::new(chunk)).await?;
            missing.extend(opened.not_found);
        }
        Ok(missing)
    }
}
