//! What an import prints at its end: the table of what was written, present and refused, the
//! problems with their lines, and the closing line.

use std::fmt::Write;

use super::batches::{MISSING_NODE_TYPE, Report};
use crate::cli::ImportArgs;

/// Problems (and made endpoints) printed in full; the rest are counted.
const SHOWN: usize = 50;

/// The final report: a table of what was imported, already present and rejected, then each
/// problem with its line number.
pub fn render(report: &Report, args: &ImportArgs, workspace: &str, lines: usize) -> String {
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
    let mut rows = vec![
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
    // Only for a file that gives aliases (engram's own export of a node that has any).
    if o.aliases_set + o.aliases_existing + report.aliases_rejected > 0 {
        rows.push((
            "aliases",
            o.aliases_set,
            o.aliases_existing,
            report.aliases_rejected,
        ));
    }
    let (created, existing) = report.reflections;
    if created + existing + report.reflections_rejected > 0 {
        rows.push((
            "reflections",
            created,
            existing,
            report.reflections_rejected,
        ));
    }
    for (what, new, existing, rejected) in rows {
        let existing = if args.dry_run {
            String::new()
        } else {
            existing.to_string()
        };
        let _ = writeln!(out, "{what:<14}{new:>10}{existing:>17}{rejected:>10}");
    }
    for (line, reason) in report.problems.iter().take(SHOWN) {
        let _ = writeln!(out, "line {line}: {reason}");
    }
    if report.problems.len() > SHOWN {
        let _ = writeln!(out, "… and {} more", report.problems.len() - SHOWN);
    }
    if !report.endpoints_created.is_empty() {
        let names = &report.endpoints_created;
        let shown: Vec<&str> = names.iter().take(SHOWN).map(String::as_str).collect();
        let more = match names.len().saturating_sub(SHOWN) {
            0 => String::new(),
            more => format!(" … and {more} more"),
        };
        let _ = writeln!(
            out,
            "{} node(s) of type {MISSING_NODE_TYPE} {} for relations whose endpoint the file \
             did not hold: {}{more}",
            names.len(),
            if args.dry_run {
                "would be made"
            } else {
                "made"
            },
            shown.join(", ")
        );
    }
    out
}

/// The last line: exactly what was written, and what was not.
pub fn closing(report: &Report, dry_run: bool) -> String {
    let o = &report.outcome;
    let mut counts = vec![
        counted(o.nodes_created, "entity", "entities"),
        counted(o.observations_added, "observation", "observations"),
        counted(o.relations_created, "relation", "relations"),
    ];
    if o.aliases_set > 0 {
        counts.push(counted(o.aliases_set, "alias", "aliases"));
    }
    let last = counts.pop().unwrap_or_default();
    let counts = format!("{} and {last}", counts.join(", "));
    // An alias refused leaves the rest of its line imported.
    let aliases_refused = report.aliases_rejected;
    let refused = report.problems.len() - aliases_refused as usize;
    if dry_run {
        let mut line = format!("dry run: nothing was written; valid: {counts}");
        if refused > 0 {
            let _ = write!(line, "; {refused} line(s) would be refused (listed above)");
        }
        return line;
    }
    let written = o.nodes_created + o.observations_added + o.relations_created + o.aliases_set;
    let present =
        o.nodes_existing + o.observations_existing + o.relations_existing + o.aliases_existing;
    let mut parts = Vec::new();
    if refused > 0 {
        parts.push(format!(
            "{refused} line(s) were not imported (listed above)"
        ));
    }
    if aliases_refused > 0 {
        parts.push(format!(
            "{} not set (listed above)",
            counted(aliases_refused, "alias was", "aliases were")
        ));
    }
    parts.push(match (written, present) {
        (0, 0) => "nothing was written".to_owned(),
        (0, _) if refused + aliases_refused as usize > 0 => {
            "nothing was written: everything else was already there".to_owned()
        }
        (0, _) => "nothing was written: everything was already there".to_owned(),
        (_, 0) => format!("wrote {counts}"),
        _ => format!("wrote {counts}; the rest was already there"),
    });
    parts.join("; ")
}

/// `n` and the noun in its number: "1 entity", "3 entities".
fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}
