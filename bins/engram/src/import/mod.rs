//! `engram import FILE --workspace NAME`: a JSONL graph into a workspace, streamed.
//!
//! Takes the reference memory server's file (`memory.jsonl`, or its older `memory.json` of the
//! same lines: `{"type":"entity","name","entityType","observations"}` and
//! `{"type":"relation","from","to","relationType"}`) and engram's own export (`"type":"node"`
//! lines carrying ordinals, timestamps, aliases and every fact with its period, and relations
//! with theirs). Lines are read one at a time and written in batches, each batch one
//! transaction, so memory stays bounded whatever the file's size. Importing twice adds
//! nothing: observations are deduplicated by text per node (an ended one by text and end),
//! relations by their triple (an ended one by its end too), aliases by name; an alias another
//! node holds is refused with its line. A relation whose endpoint has not appeared yet waits for the end of the file;
//! one whose endpoint never appears is reported, never created or silently dropped — unless
//! `--create-missing-nodes` asks for a node of type `unknown` in its place, as the reference
//! server keeps such relations. SIGINT or SIGTERM stop it after the batch being written: the
//! table so far and the line to resume from are printed, and it exits with status 130.

use std::io::{BufReader, IsTerminal, Read};
use std::path::Path;

use anyhow::{Context, Result};
use engram_domain::Memory;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::cli::ImportArgs;

mod batches;
mod lines;
mod table;

use batches::{Importer, Options, Target};
use lines::{Kind, Line, MAX_LINE_BYTES, RawLine, Rejected, parse_line, read_line};

/// The exit status of an import stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report
/// a command ended by Ctrl-C).
pub const INTERRUPTED_STATUS: u8 = 130;

/// The error of an import stopped by a signal after its batch in flight was written; `main`
/// exits with [`INTERRUPTED_STATUS`].
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted at line {stopped_at}: every line before {resume} is written. Run the same \
     command again to go on (what is there already is skipped)"
)]
pub struct Interrupted {
    /// The last line read.
    pub stopped_at: usize,
    /// The first line not written.
    pub resume: usize,
}

/// How far [`read_all`] got.
enum Reached {
    /// To the end of the file.
    Whole,
    /// A signal asked it to stop.
    Stopped,
}

/// Runs `engram import`. `memory` is `None` for a dry run whose database does not exist yet
/// (nothing is created: every line is checked against an empty workspace).
///
/// # Errors
/// The workspace does not exist (without `--create-workspace` or `--dry-run`), the file
/// cannot be read, a batch cannot be written, a line was refused (after everything else was
/// imported), or [`Interrupted`].
pub async fn run(
    memory: Option<&Memory>,
    args: ImportArgs,
    secrets: engram_domain::SecretPolicy,
) -> Result<()> {
    let target = match memory {
        Some(memory) => match memory.workspace(&args.workspace).await {
            Ok(workspace) => Target::Workspace(memory, workspace.id),
            Err(engram_domain::Error::NotFound { .. }) if args.dry_run => Target::Nowhere,
            Err(engram_domain::Error::NotFound { .. }) if args.create_workspace => {
                Target::Workspace(memory, memory.create_workspace(&args.workspace).await?.id)
            }
            Err(error @ engram_domain::Error::NotFound { .. }) => {
                anyhow::bail!(
                    "{error}: add --create-workspace, or run `engram workspace create {}`",
                    args.workspace
                );
            }
            Err(error) => return Err(error.into()),
        },
        None => Target::Nowhere,
    };
    let (reader, length) = open(&args.file)?;
    let progress = progress_bar(length);
    let options = Options {
        dry_run: args.dry_run,
        create_missing_nodes: args.create_missing_nodes,
    };
    let mut importer = Importer::new(target, options);
    let stop = CancellationToken::new();
    let listener = tokio::spawn(stop_on_signal(stop.clone()));
    let mut number = 0;
    let read = read_all(
        &mut importer,
        reader,
        &progress,
        &mut number,
        &stop,
        secrets,
    )
    .await;
    progress.set_message("writing relations that waited for their nodes");
    let finished = match read {
        Ok(Reached::Whole) => importer.finish().await.map(|()| Reached::Whole),
        // The batch gathered so far is written; relations still waiting for an endpoint
        // are not (their nodes may come later in the file).
        Ok(Reached::Stopped) => importer.flush().await.map(|()| Reached::Stopped),
        Err(error) => Err(error),
    };
    listener.abort();
    progress.finish_and_clear();
    let mut workspace = args.workspace.clone();
    if matches!(target, Target::Nowhere) {
        workspace.push_str(" (new)");
    }
    // The table is printed whatever happened, so a stopped import says how far it got.
    out!(
        "{}",
        table::render(&importer.report, &args, &workspace, number)
    );
    match finished {
        Ok(Reached::Whole) => {}
        Ok(Reached::Stopped) => {
            return Err(Interrupted {
                stopped_at: number,
                resume: importer.resume_line(number + 1),
            }
            .into());
        }
        Err(error) => {
            let resume = importer.resume_line(number);
            return Err(error.context(format!(
                "the import stopped at line {number}; every line before {resume} is written. \
                 Run the same command again to go on: what is there already is skipped"
            )));
        }
    }
    let mut closing = table::closing(&importer.report, args.dry_run);
    if matches!(target, Target::Nowhere) && !args.create_workspace {
        closing.push_str(&format!(
            "; workspace {:?} does not exist yet: the import needs --create-workspace",
            args.workspace
        ));
    }
    anyhow::ensure!(importer.report.problems.is_empty(), "{closing}");
    outln!("{closing}");
    Ok(())
}

/// Cancels `stop` at the first SIGINT or SIGTERM, so the import ends after its batch in
/// flight; a second one ends the process at once.
async fn stop_on_signal(stop: CancellationToken) {
    crate::stop_signal().await;
    eprintln!("stopping after the batch being written (again to stop at once)");
    stop.cancel();
    crate::stop_signal().await;
    std::process::exit(INTERRUPTED_STATUS.into());
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
    stop: &CancellationToken,
    secrets: engram_domain::SecretPolicy,
) -> Result<Reached> {
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    while let Some((line, read)) =
        read_line(&mut reader, &mut buffer, MAX_LINE_BYTES).context("reading the file")?
    {
        if stop.is_cancelled() {
            return Ok(Reached::Stopped);
        }
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
        match parsed.and_then(|line| lines::screen(line, secrets)) {
            Ok(None | Some(Line::Header)) => {}
            Ok(Some(Line::Node(node))) => importer.add_node(*number, node).await?,
            Ok(Some(Line::Relation(relation))) => importer.add_relation(*number, relation).await?,
            Ok(Some(Line::Reflection(reflection))) => {
                importer.add_reflection(*number, reflection).await?
            }
            Err(Rejected { kind, reason }) => {
                let report = &mut importer.report;
                match kind {
                    Kind::Entity(observations) => {
                        report.entities_rejected += 1;
                        report.observations_rejected += observations;
                    }
                    Kind::Relation => report.relations_rejected += 1,
                    Kind::Reflection => report.reflections_rejected += 1,
                    Kind::Unknown => {}
                }
                report.problems.push((*number, reason));
            }
        }
    }
    Ok(Reached::Whole)
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
