//! Memory as compact markdown for a model's context: the workspace brief, recalled nodes and
//! one node in full. What MCP prompts and resources return, and what `engram recall` and
//! `engram brief` print for a client's hooks.

use std::fmt::Write as _;

use engram_domain::{Brief, NodeDetail, Relation, SearchResults};

/// The default bound of [`brief`], in characters: about 500 tokens.
pub const BRIEF_CHARS: usize = 2_000;

/// Characters of a summary or an observation quoted in a list before it is cut (at a word
/// boundary, with `…`).
const QUOTE_CHARS: usize = 240;

/// `text` cut to at most `max` characters at a word boundary, with `…` when cut; line breaks
/// become spaces so that a quote stays one list item.
pub fn quote(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let chars: Vec<char> = flat.chars().collect();
    let mut end = max.saturating_sub(1);
    // Mid-word: back to the word's start, unless that loses more than half.
    if chars[end] != ' '
        && let Some(space) = chars[..end].iter().rposition(|c| *c == ' ')
        && space > end / 2
    {
        end = space;
    }
    let cut: String = chars[..end].iter().collect();
    format!("{}…", cut.trim_end_matches([',', ';', ':', '.', ' ']))
}

/// The workspace brief ([`engram_domain::Memory::brief`]) in at most `max_chars` characters:
/// a heading with the counts, then the most connected and the most recently changed nodes
/// with their summaries, as many as fit; a closing line says how many did not.
pub fn brief(brief: &Brief, max_chars: usize) -> String {
    let mut out = format!("# Memory: workspace {}\n", brief.workspace);
    if brief.node_count == 0 {
        out.push_str(
            "Empty so far. Store lasting facts (decisions, preferences, people, projects) with \
             create_entities and add_observations.\n",
        );
        return cut_to(out, max_chars);
    }
    let _ = writeln!(
        out,
        "{}, {}, {}. Search it (search_nodes) before answering from memory; store lasting \
         facts with add_observations.",
        counted(brief.node_count, "node"),
        counted(brief.observation_count, "observation"),
        counted(brief.relation_count, "relation")
    );
    let connected = (brief.connected.iter()).map(|node| {
        let mut line = format!(
            "- {} [{}], {} related",
            node.name, node.entity_type, node.related_nodes
        );
        if let Some(summary) = &node.summary {
            let _ = write!(line, ": {}", quote(summary, QUOTE_CHARS));
        }
        line
    });
    let recent = (brief.recent.iter()).map(|node| {
        let mut line = format!(
            "- {} [{}], {}",
            node.name,
            node.entity_type,
            node.updated_at.format("%Y-%m-%d")
        );
        if let Some(summary) = &node.summary {
            let _ = write!(line, ": {}", quote(summary, QUOTE_CHARS));
        }
        line
    });
    let sections: [(&str, Vec<String>); 2] = [
        ("Most connected", connected.collect()),
        ("Recently changed", recent.collect()),
    ];
    let mut left_out = 0;
    for (heading, lines) in sections {
        if lines.is_empty() {
            continue;
        }
        let heading = format!("## {heading}\n");
        let mut wrote_heading = false;
        for line in lines {
            let room = max_chars.saturating_sub(out.chars().count() + 60);
            let needed = line.chars().count() + 1 + if wrote_heading { 0 } else { heading.len() };
            if needed > room {
                left_out += 1;
                continue;
            }
            if !wrote_heading {
                out.push_str(&heading);
                wrote_heading = true;
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    if left_out > 0 {
        let _ = writeln!(out, "({left_out} more: get_recently_modified, read_graph)");
    }
    cut_to(out, max_chars)
}

/// `1 node`, `2 nodes`.
fn counted(count: i64, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// `text` cut to at most `max` characters: whole lines, each ending in a line break (the
/// first cut short when even it is too long).
pub fn cut_to(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max).collect();
    match cut.rfind('\n') {
        Some(end) => cut[..=end].to_owned(),
        None => cut
            .chars()
            .take(max.saturating_sub(1))
            .chain(['\n'])
            .collect(),
    }
}

/// What a search found, as a list a model reads before it answers: each node with its type,
/// the observation that matched and its summary, in ranking order; `None` when the search
/// found nothing (so that a hook prints nothing). No score: the list holds only what passed
/// the search's `min_score` (or the one match by meaning kept below it), and a small figure
/// beside a fact that answers the question reads as "ignore this" (the calibrated scores run
/// low for some models and memories; `--format json` has them).
pub fn recall(results: &SearchResults, topic: &str) -> Option<String> {
    if results.results.is_empty() {
        return None;
    }
    let mut out = format!(
        "Memory on \"{}\" (engram, most relevant first; open_nodes for more):\n",
        quote(topic, 80)
    );
    for hit in &results.results {
        let _ = write!(
            out,
            "- {} [{}]: {}",
            hit.name,
            hit.entity_type,
            quote(&hit.matched_observation, QUOTE_CHARS)
        );
        if let Some(summary) = &hit.summary {
            let _ = write!(out, " (summary: {})", quote(summary, QUOTE_CHARS / 2));
        }
        out.push('\n');
    }
    Some(out)
}

/// One node in full: type, tags, summary, every observation with its ordinal, and the
/// relations given that touch it.
pub fn node(node: &NodeDetail, relations: &[Relation]) -> String {
    let mut out = format!("# {} [{}]\n", node.name, node.entity_type);
    if !node.tags.is_empty() {
        let _ = writeln!(out, "Tags: {}", node.tags.join(", "));
    }
    if let Some(summary) = &node.summary {
        let _ = writeln!(out, "Summary: {summary}");
    }
    let _ = writeln!(
        out,
        "Changed {}",
        node.updated_at.format("%Y-%m-%d %H:%M UTC")
    );
    if !node.observations.is_empty() {
        out.push_str("## Observations\n");
        for observation in &node.observations {
            let _ = writeln!(out, "{}. {}", observation.ordinal.0, observation.content);
        }
    }
    let touching: Vec<&Relation> = (relations.iter())
        .filter(|r| r.from == node.name || r.to == node.name)
        .collect();
    if !touching.is_empty() {
        out.push_str("## Relations\n");
        for relation in touching {
            let _ = writeln!(
                out,
                "- {} -{}-> {}",
                relation.from, relation.relation_type, relation.to
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut_at_a_word_with_an_ellipsis_and_kept_on_one_line() {
        assert_eq!(quote("short\ntext", 20), "short text");
        let cut = quote("the quick brown fox jumps over the lazy dog", 20);
        assert!(cut.chars().count() <= 20, "{cut}");
        assert_eq!(cut, "the quick brown fox…");
    }

    #[test]
    fn a_brief_stays_within_its_bound_and_says_what_it_left_out() {
        let timestamp = engram_domain::Timestamp::UNIX_EPOCH;
        let recent = (0..100)
            .map(|i| engram_domain::NodeBrief {
                name: format!("node {i}"),
                entity_type: "topic".into(),
                summary: Some("a summary of some length ".repeat(20)),
                updated_at: timestamp,
            })
            .collect();
        let brief_data = Brief {
            workspace: "demo".into(),
            node_count: 100,
            observation_count: 500,
            relation_count: 0,
            connected: Vec::new(),
            recent,
        };
        let text = brief(&brief_data, 1_000);
        assert!(text.chars().count() <= 1_000, "{}", text.chars().count());
        assert!(text.contains("## Recently changed\n- node 0 [topic], 1970-01-01: "));
        assert!(text.contains(" more: get_recently_modified"), "{text}");
        assert!(!text.contains("Most connected"));
    }
}
