//! Property tests: generated arguments, adversarial ones above all, for every tool of
//! [`Memory`], on whichever store runs the suite.
//!
//! Values come from proptest strategies drawn with a deterministic [`TestRunner`] (no
//! `proptest!` macro, no nested runtime), so a failure reproduces on every run and names its
//! case. Each call must keep four promises:
//!
//! 1. it does not panic;
//! 2. it succeeds exactly when an oracle written from the documented limits says its
//!    arguments are valid, and otherwise fails with [`Error::InvalidArgument`] naming one of
//!    the fields the oracle blames; valid calls may also meet not found, already exists or
//!    conflict, never an internal or unavailable error;
//! 3. a call that fails leaves the store exactly as it was (every node, observation,
//!    relation, timestamp and ordinal counter, the event log, workspaces, perspectives and
//!    tokens);
//! 4. a call that succeeds did all of what it says (each tool checks its own result).
//!
//! The tests themselves are in `properties_writes.rs` and `properties_reads.rs`.

use std::fmt::Debug;

use crate::DeleteWorkspace;
use std::future::Future;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use crate::CreateEntities;
use crate::auth::TokenInfo;
use crate::perspectives::Perspective;
use crate::transfer::{GraphPage, GraphPageQuery, NodeRecord};
use crate::{Error, Memory, MemoryStore, Result, Timestamp, WorkspaceId, WorkspaceInfo};

/// Fragments that are valid in names yet mean something to SQL, `LIKE`, full-text query
/// syntax (PostgreSQL's and FTS5's), or Unicode: quotes, wildcards, escapes, operators,
/// combining marks, right-to-left scripts, emoji, astral and private-use characters.
#[rustfmt::skip]
const TRICKY: &[&str] = &[
    "Alice", "node", "'", "''", "'; DROP TABLE nodes; --", "\"", "\"quoted\"", "%", "_", "\\",
    "\\%", "%_%", "*", "NEAR(", "NEAR/2", " AND ", " OR ", "NOT", "-", ":", "^", "(", ")", "{x}",
    "[x]", "+", "~", "&|!", "<->", "$1", "?", "@p", "/* */", ";", "||", "é", "e\u{301}", "🦀",
    "مرحبا", "שלום", "日本語", "Ω≈ç", " ", "null", "0", "-1", "\u{fffd}", "\u{10ffff}", "\u{e000}",
];

/// Characters a name must not hold (controls, NUL, zero-width and bidirectional formatting);
/// all but the controls are fine in observations, and only NUL is refused everywhere.
const REFUSED_IN_NAMES: &[&str] = &[
    "\0",
    "\n",
    "\t",
    "\r",
    "\u{7f}",
    "\u{1b}[0m",
    "\u{85}",
    "\u{200b}",
    "\u{200d}",
    "\u{200e}",
    "\u{202e}",
    "\u{2066}",
    "\u{2069}",
    "\u{feff}",
    "\u{ad}",
    "\u{2060}",
];

/// Byte lengths at and around every text limit, and one megabyte (drawn rarely).
const LENGTHS: &[usize] = &[128, 129, 255, 256, 257, 4_096, 4_097, 65_536, 65_537];

/// A string of exactly `bytes` bytes made of `unit` (then `x`s).
fn sized(bytes: usize, unit: &str) -> String {
    unit.repeat(bytes / unit.len()) + &"x".repeat(bytes % unit.len())
}

/// Strings of tricky fragments, valid as names.
pub fn tricky() -> impl Strategy<Value = String> {
    vec(select(TRICKY), 1..4).prop_map(|parts| parts.concat())
}

/// Any string at all, often adversarial: tricky fragments, arbitrary Unicode, a refused
/// character inside tricky text, the empty string, or text at a length limit (1 MB rarely).
pub fn text() -> BoxedStrategy<String> {
    let refused = (tricky(), select(REFUSED_IN_NAMES), tricky()).prop_map(|(a, b, c)| a + b + &c);
    let long = (
        prop_oneof![20 => select(LENGTHS), 1 => Just(1 << 20)],
        select(&["x", "é", "🦀", "%_"][..]),
    )
        .prop_map(|(bytes, unit)| sized(bytes, unit));
    prop_oneof![
        8 => tricky(),
        2 => any::<String>(),
        2 => refused,
        1 => Just(String::new()),
        1 => long,
    ]
    .boxed()
}

/// Ordinals: the integer limits, zero and negatives, JavaScript's largest safe integer,
/// small ones that may exist, and any.
pub fn ordinal() -> BoxedStrategy<i64> {
    #[rustfmt::skip]
    let edges = [
        i64::MIN, i64::MIN + 1, -1, 0, i64::from(i32::MAX) + 1, 1 << 53, (1 << 53) + 1,
        i64::MAX - 1, i64::MAX,
    ];
    prop_oneof![3 => select(edges.to_vec()), 4 => 1..8_i64, 1 => any::<i64>()].boxed()
}

/// `limit`, `depth` and `days`: every bound and its neighbours, the integer limits, and any.
pub fn count() -> BoxedStrategy<u32> {
    #[rustfmt::skip]
    let edges = [
        0, 1, 2, 6, 7, 12, 13, 50, 1_000, 1_001, 36_500, 36_501, u32::MAX / 2, u32::MAX - 1,
        u32::MAX,
    ];
    prop_oneof![4 => select(edges.to_vec()), 1 => any::<u32>()].boxed()
}

/// Scores: the bounds, just beyond them, NaN, infinities, and any in −2–2.
pub fn score() -> BoxedStrategy<f64> {
    #[rustfmt::skip]
    let edges = [
        -1.0, 1.0, 0.0, -0.0, 1.000_000_1, -1.000_000_1, f64::NAN, f64::INFINITY,
        f64::NEG_INFINITY, f64::MAX, f64::MIN_POSITIVE,
    ];
    prop_oneof![select(edges.to_vec()), -2.0..2.0_f64].boxed()
}

/// Instants: chrono's whole range (its first and last, years before 1 and after 9999), the
/// epoch, and any second of years 1–9999.
pub fn timestamp() -> BoxedStrategy<Timestamp> {
    let at = |secs: i64| Timestamp::from_timestamp(secs, 0).unwrap();
    let edges = [
        Timestamp::MIN_UTC,
        Timestamp::MAX_UTC,
        Timestamp::UNIX_EPOCH,
        at(FIRST_SECOND),
        at(LAST_SECOND),
        at(FIRST_SECOND - 1),
        at(LAST_SECOND + 1),
    ];
    prop_oneof![
        select(edges.to_vec()),
        (FIRST_SECOND..=LAST_SECOND).prop_map(at)
    ]
    .boxed()
}

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since the epoch.
const FIRST_SECOND: i64 = -62_135_596_800;
const LAST_SECOND: i64 = 253_402_300_799;

/// Whether `value` is a valid node name, entity or relation type: 1–256 bytes without
/// control characters or invisible and bidirectional formatting (the documented limit,
/// written again here so the test does not ask the code under test).
pub fn name_ok(value: &str) -> bool {
    let invisible = |c: char| {
        matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    (1..=256).contains(&value.len()) && !value.chars().any(|c| c.is_control() || invisible(c))
}

/// Whether `value` is a valid observation or summary: 1–65,536 bytes without NUL.
pub fn content_ok(value: &str) -> bool {
    (1..=65_536).contains(&value.len()) && !value.contains('\0')
}

/// Whether `value` is a valid tag: 1–128 bytes without control characters.
pub fn tag_ok(value: &str) -> bool {
    (1..=128).contains(&value.len()) && !value.chars().any(char::is_control)
}

/// Whether `value` is a valid search query: 1–4,096 bytes, not blank, without NUL.
pub fn query_ok(value: &str) -> bool {
    value.len() <= 4_096 && !value.trim().is_empty() && !value.contains('\0')
}

/// Whether `value` is a valid workspace name: 1–64 of `A–Z a–z 0–9 . _ -`.
pub fn workspace_name_ok(value: &str) -> bool {
    (1..=64).contains(&value.len())
        && (value.bytes()).all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Whether `value` is an instant a caller may give: within the years 1–9999.
pub fn timestamp_ok(value: &Timestamp) -> bool {
    (FIRST_SECOND..=LAST_SECOND).contains(&value.timestamp())
}

/// The fields a call's arguments break, by the oracle; empty when the call is valid.
#[derive(Debug, Default)]
pub struct Blame(pub Vec<String>);

impl Blame {
    /// Blames `field` unless `ok`.
    pub fn unless(&mut self, ok: bool, field: impl Into<String>) {
        if !ok {
            self.0.push(field.into());
        }
    }

    /// Blames `field` unless it holds 1–1,000 items.
    pub fn batch(&mut self, len: usize, field: impl Into<String>) {
        self.unless((1..=1_000).contains(&len), field);
    }

    /// Blames the second of two equal names, `{prefix}[j]{suffix}`.
    pub fn duplicates<'a>(
        &mut self,
        names: impl Iterator<Item = &'a String>,
        prefix: &str,
        suffix: &str,
    ) {
        let names: Vec<&String> = names.collect();
        for (j, name) in names.iter().enumerate() {
            if names[..j].contains(name) {
                self.0.push(format!("{prefix}[{j}]{suffix}"));
            }
        }
    }
}

/// Everything a rejected call must leave alone: the harness workspace's whole graph (times
/// and ordinal counters included) and event counts, every workspace, the harness
/// workspace's perspectives, and every token.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    /// Every page of the graph, observations included.
    pub graph: Vec<GraphPage>,
    /// Every page of the graph over time: ended facts and relations, authors and aliases.
    pub over_time: Vec<GraphPage>,
    /// `(creates, updates, deletes)` of all time.
    pub events: (i64, i64, i64),
    /// Every workspace.
    pub workspaces: Vec<WorkspaceInfo>,
    /// The workspace's perspectives.
    pub perspectives: Vec<Perspective>,
    /// Every token.
    pub tokens: Vec<TokenInfo>,
    /// The workspace's first 1,000 reflections.
    pub reflections: Vec<crate::Reflection>,
}

impl Snapshot {
    /// Every node of the graph.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeRecord> {
        (self.graph.iter()).flat_map(|page| page.nodes.iter().map(|(node, _)| node))
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&NodeRecord> {
        self.nodes().find(|node| node.name == name)
    }

    /// Every relation as `(from, type, to)`.
    pub fn relations(&self) -> Vec<(String, String, String)> {
        (self.graph.iter().flat_map(|page| &page.relations))
            .map(|r| (r.from.clone(), r.relation_type.clone(), r.to.clone()))
            .collect()
    }

    /// The aliases of the node named `name`.
    pub fn aliases_of(&self, name: &str) -> Vec<String> {
        (self.over_time.iter().flat_map(|page| &page.nodes))
            .find(|(node, _)| node.name == name)
            .map(|(node, _)| node.aliases.clone())
            .unwrap_or_default()
    }

    /// The node `name` stands for: itself, or the node it is an alias of; `None` when it
    /// names nothing.
    pub fn resolve(&self, name: &str) -> Option<String> {
        if self.node(name).is_some() {
            return Some(name.to_owned());
        }
        (self.over_time.iter().flat_map(|page| &page.nodes))
            .find(|(node, _)| node.aliases.iter().any(|alias| alias == name))
            .map(|(node, _)| node.name.clone())
    }

    /// Which part differs from `other`, if any.
    fn difference(&self, other: &Snapshot) -> Option<&'static str> {
        [
            (self.graph != other.graph, "the graph"),
            (self.over_time != other.over_time, "the graph over time"),
            (self.events != other.events, "the event log"),
            (self.workspaces != other.workspaces, "the workspaces"),
            (self.perspectives != other.perspectives, "the perspectives"),
            (self.tokens != other.tokens, "the tokens"),
            (self.reflections != other.reflections, "the reflections"),
        ]
        .into_iter()
        .find_map(|(differs, what)| differs.then_some(what))
    }
}

/// `value`'s `Debug` text, cut to about 200 characters.
pub fn short(value: &dyn Debug) -> String {
    let text = format!("{value:?}");
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
        None => text,
    }
}

/// A [`Memory`] on one workspace, a deterministic generator, and the tally of cases.
pub struct Harness {
    /// The memory under test.
    pub memory: Memory,
    /// The workspace the graph tools write to.
    pub ws: WorkspaceId,
    /// Its name.
    pub ws_name: String,
    runner: TestRunner,
    /// The state before the current case ([`Harness::case`]).
    pub before: Snapshot,
    cases: u32,
    ok: u32,
    refused: u32,
    /// The tools that got arguments the oracle found valid at least once so far (answered,
    /// or met a node not found or no model), by the names [`Harness::run`] was given.
    valid: std::collections::BTreeSet<String>,
}

/// Nodes every harness workspace starts with: names as tricky as valid names get.
const SEED_NAMES: &[&str] = &[
    "Alice",
    "'; DROP TABLE nodes; --",
    "100%_done\\",
    "NEAR(x) AND \"y\"*",
    "مرحبا",
    "e\u{301}",
    "🦀 crab",
    "a:b^c-d",
];

impl Harness {
    /// A harness on a new workspace `ws_name` of `store`, seeded ([`Harness::reseed`]).
    pub async fn new(store: std::sync::Arc<dyn MemoryStore>, ws_name: &str) -> Self {
        let (memory, ws) = super::memory_with_workspace(store, ws_name).await;
        let mut harness = Self {
            memory,
            ws,
            ws_name: ws_name.to_owned(),
            runner: TestRunner::deterministic(),
            before: Snapshot {
                graph: Vec::new(),
                over_time: Vec::new(),
                events: (0, 0, 0),
                workspaces: Vec::new(),
                perspectives: Vec::new(),
                tokens: Vec::new(),
                reflections: Vec::new(),
            },
            cases: 0,
            ok: 0,
            refused: 0,
            valid: std::collections::BTreeSet::new(),
        };
        harness.reseed().await;
        harness
    }

    /// Empties the workspace and puts the seed graph back: [`SEED_NAMES`] with two
    /// observations each, in a ring of relations, plus one chord.
    pub async fn reseed(&mut self) {
        let m = &self.memory;
        m.delete_workspace(DeleteWorkspace::new(&*self.ws_name, true))
            .await
            .unwrap();
        self.ws = m.create_workspace(&self.ws_name).await.unwrap().id;
        let entities = (SEED_NAMES.iter().enumerate())
            .map(|(i, name)| {
                let facts = [format!("{name} fact 1 %_'\""), format!("NEAR({i}) OR *")];
                let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
                super::entity(name, if i % 2 == 0 { "even" } else { "odd" }, &facts)
            })
            .collect();
        m.call(self.ws, CreateEntities::new(entities))
            .await
            .unwrap();
        let mut ring: Vec<(&str, &str, &str)> =
            (SEED_NAMES.iter().zip(SEED_NAMES.iter().cycle().skip(1)))
                .map(|(a, b)| (*a, "next", *b))
                .collect();
        ring.push((SEED_NAMES[0], "'%_", SEED_NAMES[4]));
        super::create_relations(m, self.ws, &ring).await;
    }

    /// Draws one value of `strategy`.
    pub fn draw<T: Debug>(&mut self, strategy: impl Strategy<Value = T>) -> T {
        strategy.new_tree(&mut self.runner).unwrap().current()
    }

    /// A name: an existing node's half of the time, else [`text`].
    pub fn name(&mut self) -> String {
        let names: Vec<String> = self.before.nodes().map(|n| n.name.clone()).collect();
        if !names.is_empty() && self.draw(any::<bool>()) {
            self.draw(select(names))
        } else {
            self.draw(text())
        }
    }

    /// A type: an existing node's half of the time, else [`text`].
    pub fn entity_type(&mut self) -> String {
        let types: Vec<String> = self.before.nodes().map(|n| n.entity_type.clone()).collect();
        if !types.is_empty() && self.draw(any::<bool>()) {
            self.draw(select(types))
        } else {
            self.draw(text())
        }
    }

    /// Starts a case: takes the snapshot that the call is checked against.
    pub async fn case(&mut self) {
        self.before = self.snapshot().await;
    }

    /// The current [`Snapshot`].
    pub async fn snapshot(&self) -> Snapshot {
        let (m, ws) = (&self.memory, self.ws);
        Snapshot {
            graph: self.pages(false).await,
            over_time: self.pages(true).await,
            events: super::events(m, ws).await,
            workspaces: m.list_workspaces().await.unwrap(),
            perspectives: m.perspectives(ws).await.unwrap(),
            tokens: m.tokens(None).await.unwrap(),
            reflections: m.reflections_page(ws, 0, 1_000).await.unwrap(),
        }
    }

    /// Every page of the workspace's graph, now or `over_time`.
    async fn pages(&self, over_time: bool) -> Vec<GraphPage> {
        let mut pages = Vec::new();
        let mut after = None;
        loop {
            let query = GraphPageQuery {
                after: after.take(),
                limit: 1_000,
                entity_type: None,
                observations: true,
                over_time,
                totals: false,
            };
            let page = self.memory.graph_page(self.ws, &query).await.unwrap();
            let full = page.nodes.len() == 1_000;
            after = page.nodes.last().map(|(node, _)| node.name.clone());
            pages.push(page);
            if !full {
                return pages;
            }
        }
    }

    /// Awaits one generated call of `tool` with `input` and checks promises 2 and 3 (see the
    /// module's documentation); returns the result when it succeeded. `blame` is the oracle's.
    pub async fn run<T: Debug>(
        &mut self,
        tool: &str,
        input: &dyn Debug,
        blame: &Blame,
        call: impl Future<Output = Result<T>>,
    ) -> Option<T> {
        let result = call.await;
        self.cases += 1;
        if blame.0.is_empty() {
            self.valid.insert(tool.to_owned());
        }
        let error = match result {
            Ok(value) => {
                assert!(
                    blame.0.is_empty(),
                    "{tool}: accepted arguments the oracle blames ({:?}): {}",
                    blame.0,
                    short(input)
                );
                self.ok += 1;
                return Some(value);
            }
            Err(error) => error,
        };
        let clear = match &error {
            Error::InvalidArgument { field, .. } => {
                blame.0.contains(field) && error.to_string().contains(field.as_str())
            }
            // No embedding model is configured here: said plainly, and only of valid input.
            Error::Unavailable(reason) => {
                blame.0.is_empty() && reason == "no embedding model is configured"
            }
            other => blame.0.is_empty() && other.is_caller_error(),
        };
        assert!(
            clear,
            "{tool}: {} (the oracle blames {:?}) for {}",
            short(&error.to_string()),
            blame.0,
            short(input)
        );
        let after = self.snapshot().await;
        if let Some(what) = self.before.difference(&after) {
            panic!(
                "{tool}: refused ({error}) yet changed {what}: {}",
                short(input)
            );
        }
        self.refused += 1;
        None
    }

    /// Prints the tally, `properties (label): N cases, M ok, K refused`, and checks that
    /// both outcomes occurred (a generator that only ever made valid, or only invalid,
    /// arguments would test half the promises).
    pub fn finish(&self, label: &str) {
        println!(
            "properties ({label}): {} cases, {} ok, {} refused",
            self.cases, self.ok, self.refused
        );
        assert!(self.ok > self.cases / 10, "too few valid cases");
        assert!(self.refused > self.cases / 10, "too few refused cases");
    }

    /// [`Harness::finish`], and checks that every one of `tools` got valid arguments at
    /// least once.
    pub fn finish_covering(&self, label: &str, tools: &[&str]) {
        self.finish(label);
        for tool in tools {
            assert!(
                self.valid.contains(*tool),
                "{label}: {tool} never got valid arguments"
            );
        }
    }
}

/// Tools [`crate::each_tool`] lists that no property test generates yet, each with the reason.
pub const NOT_GENERATED: &[(&str, &str)] = &[];

/// Every tool [`crate::each_tool`] lists is generated by one of the property tests (their
/// `*_TOOLS`), or named in [`NOT_GENERATED`] with a reason; and no tool is named there that is
/// generated.
pub async fn every_tool_has_generated_properties(_store: std::sync::Arc<dyn MemoryStore>) {
    #[derive(Default)]
    struct Names(Vec<&'static str>);
    impl crate::tool::ToolVisitor for Names {
        fn visit<T: crate::tool::Tool>(&mut self) {
            self.0.push(T::NAME);
        }
    }
    let mut names = Names::default();
    crate::each_tool(&mut names);
    let generated: Vec<&str> = [
        super::properties_writes::WRITE_TOOLS,
        super::properties_reads::READ_TOOLS,
        super::properties_curation::CURATION_TOOLS,
    ]
    .concat();
    let missing: Vec<&str> = (names.0.iter().copied())
        .filter(|tool| !generated.contains(tool))
        .collect();
    let excused: Vec<&str> = NOT_GENERATED.iter().map(|(tool, _)| *tool).collect();
    assert_eq!(missing, excused, "tools without generated arguments");
}
