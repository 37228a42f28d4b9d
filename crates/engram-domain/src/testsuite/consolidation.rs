use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;

use super::*;
use crate::{
    ConsolidationReport, GenerationBudget, GetConsolidationReport, Indexer, MemoryStore, Result,
    TextGenerator, TextSource,
};

/// Two clusters (astronomy, fully related; a kitchen whose two chefs are near-duplicates and
/// unrelated to each other), one stale summary (Andromeda), one orphan (Quartz). Every node
/// has its vectors from [`TermEmbedder`].
async fn consolidation_graph(store: Arc<dyn MemoryStore>) -> (Memory, WorkspaceId) {
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    let memory = memory.with_embedder(Arc::new(TermEmbedder));
    // The similarities below are those of name and observation (types would add words).
    let general = memory.perspectives(ws).await.unwrap().remove(0);
    assert_eq!(general.name, "general");
    let general = crate::perspectives::Perspective {
        document_template: "{name}: {observation}".into(),
        ..general
    };
    memory.set_perspective(ws, &general).await.unwrap();
    let m = &memory;
    m.call(
        ws,
        CreateEntities::new(vec![
            entity(
                "Hubble",
                "telescope",
                &[
                    "space telescope observing distant galaxies, stars and nebulae",
                    "astronomers study its images of distant galaxies, stars and nebulae",
                ],
            ),
            entity(
                "Andromeda",
                "galaxy",
                &[
                    "spiral galaxy of distant stars and nebulae",
                    "astronomers observe its stars, galaxies and nebulae through telescopes",
                ],
            ),
            entity(
                "Orion Nebula",
                "nebula",
                &[
                    "nebula where stars form among distant galaxies",
                    "astronomers image its stars, galaxies and nebulae through telescopes",
                ],
            ),
            entity(
                "Marco Rossi",
                "person",
                &[
                    "chef cooking fresh pasta with tomato sauce and basil",
                    "runs an Italian kitchen in Naples",
                ],
            ),
            entity(
                "Marko Rossi",
                "person",
                &[
                    "chef cooking fresh pasta with tomato sauce and basil",
                    "runs an Italian kitchen in Naples by the harbour",
                ],
            ),
            entity(
                "Trattoria Rossi",
                "restaurant",
                &[
                    "Italian kitchen in Naples serving fresh pasta with tomato sauce",
                    "restaurant where the chef Rossi cooks pasta with basil",
                ],
            ),
            entity(
                "Quartz",
                "mineral",
                &["crystal of silicon dioxide found in granite"],
            ),
        ]),
    )
    .await
    .unwrap();
    create_relations(
        m,
        ws,
        &[
            ("Hubble", "observes", "Andromeda"),
            ("Hubble", "observes", "Orion Nebula"),
            ("Orion Nebula", "lies_beyond", "Andromeda"),
            ("Marco Rossi", "works_at", "Trattoria Rossi"),
            ("Marko Rossi", "works_at", "Trattoria Rossi"),
        ],
    )
    .await;
    for name in [
        "Hubble",
        "Andromeda",
        "Orion Nebula",
        "Marco Rossi",
        "Marko Rossi",
    ] {
        m.call(ws, SetSummary::new(name, "summarised"))
            .await
            .unwrap();
    }
    m.call(ws, SetSummary::new("Trattoria Rossi", "summarised"))
        .await
        .unwrap();
    m.call(ws, SetSummary::new("Quartz", "summarised"))
        .await
        .unwrap();
    tick().await;
    m.call(
        ws,
        AddObservations::new(&[additions(
            "Andromeda",
            &["its stars and nebulae will merge with distant galaxies"],
        )]),
    )
    .await
    .unwrap();
    Indexer::new(store, Arc::new(TermEmbedder), 64)
        .run_until_idle()
        .await
        .unwrap();
    (memory, ws)
}

/// The default options, with clusters from 0.45: the term vectors of one topic here are about
/// 0.5 to 0.7 apart.
fn options() -> GetConsolidationReport {
    GetConsolidationReport {
        cluster_min_score: 0.45,
        ..GetConsolidationReport::default()
    }
}

fn cluster_names(report: &ConsolidationReport) -> Vec<Vec<String>> {
    report
        .cluster_summary
        .iter()
        .map(|c| {
            let mut names = c.node_names.clone();
            names.sort();
            names
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

pub async fn consolidation_report_finds_exactly_what_needs_attention(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = consolidation_graph(store).await;
    let report = memory.call(ws, options()).await.unwrap();

    // Near but not the same: none of these reads as one node written twice.
    assert!(
        report.merge_candidates.is_empty(),
        "{:?}",
        report.merge_candidates
    );
    let stale: Vec<&str> = report
        .stale_summaries
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(stale, ["Andromeda"]);
    let andromeda = &report.stale_summaries[0];
    assert_eq!(
        (andromeda.entity_type.as_str(), andromeda.observation_count),
        ("galaxy", 3)
    );
    assert!(andromeda.summary_updated_at.unwrap() < andromeda.last_modified);
    assert_eq!(andromeda.draft_source, Some(TextSource::Extractive));
    let draft = andromeda.draft_summary.as_deref().unwrap();
    assert!(
        draft.contains("galaxy") || draft.contains("stars"),
        "{draft}"
    );

    let pairs: Vec<(&str, &str)> = report
        .relation_candidates
        .iter()
        .map(|p| (p.node_a.as_str(), p.node_b.as_str()))
        .collect();
    assert_eq!(pairs, [("Marco Rossi", "Marko Rossi")]);
    let pair = &report.relation_candidates[0];
    assert!(pair.similarity_score >= 0.75, "{pair:?}");
    assert_eq!(
        (pair.node_a_type.as_str(), pair.node_b_type.as_str()),
        ("person", "person")
    );
    assert_eq!(pair.rationale_source, Some(TextSource::Extractive));
    let rationale = pair.rationale.as_deref().unwrap();
    assert!(
        rationale.contains("chef") && rationale.contains("cooking"),
        "{rationale}"
    );

    let orphans: Vec<&str> = report
        .orphaned_nodes
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(orphans, ["Quartz"]);

    assert_eq!(
        cluster_names(&report),
        [
            strings(&["Andromeda", "Hubble", "Orion Nebula"]),
            strings(&["Marco Rossi", "Marko Rossi", "Trattoria Rossi"]),
        ]
    );
    for (cluster, id) in report.cluster_summary.iter().zip(1..) {
        assert_eq!((cluster.cluster_id, cluster.size), (id, 3));
        assert_eq!(cluster.label_source, Some(TextSource::Extractive));
        let label = cluster.centroid_label.as_deref().unwrap();
        assert!(label.starts_with(&cluster.node_names[0]), "{label}");
    }
    assert!(report.notices.is_empty(), "{:?}", report.notices);
    // 7 nodes, 14 observations, 5 relations created; 7 summaries set.
    let events = &report.event_summary;
    assert_eq!((events.creates, events.updates, events.deletes), (26, 7, 0));
}

pub async fn consolidation_report_counts_events_since_and_cuts_lists(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = consolidation_graph(store).await;
    let m = &memory;
    tick().await;
    let since = Utc::now();
    tick().await;
    m.call(
        ws,
        CreateEntities::new(vec![entity("Pluto", "planet", &["dwarf planet"])]),
    )
    .await
    .unwrap();
    m.call(ws, SetSummary::new("Quartz", "a mineral"))
        .await
        .unwrap();
    m.call(ws, DeleteEntities::new(&strings(&["Hubble"])))
        .await
        .unwrap();
    let options = GetConsolidationReport {
        since: Some(since),
        limit: 1,
        ..GetConsolidationReport::default()
    };
    let report = m.call(ws, options).await.unwrap();
    let events = &report.event_summary;
    assert_eq!(events.since, since);
    assert_eq!((events.creates, events.updates, events.deletes), (2, 1, 1));
    // Stale: Andromeda and Pluto (never summarised). Orphans: Pluto and Quartz (Hubble's
    // former neighbours are still linked to each other).
    assert_eq!(report.stale_summaries.len(), 1);
    assert_eq!(report.orphaned_nodes.len(), 1);
    assert!(
        report
            .notices
            .iter()
            .any(|n| n.starts_with("stale_summaries: showing 1 of 2")),
        "{:?}",
        report.notices
    );
    assert!(
        report
            .notices
            .iter()
            .any(|n| n.starts_with("orphaned_nodes: showing 1 of 2")),
        "{:?}",
        report.notices
    );

    let bad = GetConsolidationReport {
        min_score: 1.5,
        ..GetConsolidationReport::default()
    };
    let error = m.call(ws, bad).await.unwrap_err();
    assert!(error.to_string().contains("min_score"), "{error}");
}

pub async fn consolidation_report_without_an_embedder_says_so(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = consolidation_graph(store.clone()).await;
    let plain = Memory::new(store);
    let report = plain
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();
    assert!(report.relation_candidates.is_empty() && report.cluster_summary.is_empty());
    assert!(
        report.notices[0].contains("no embedding model"),
        "{:?}",
        report.notices
    );
    // Without vectors the draft quotes the first and the newest observations.
    assert_eq!(
        report.stale_summaries[0].draft_summary.as_deref(),
        Some(
            "spiral galaxy of distant stars and nebulae; astronomers observe its stars, galaxies \
             and nebulae through telescopes; its stars and nebulae will merge with distant galaxies."
        )
    );
    drop(memory);
}

/// Answers every prompt with a fixed text after `delay`.
struct FixedGenerator {
    delay: Duration,
}

#[async_trait]
impl TextGenerator for FixedGenerator {
    fn model_id(&self) -> &str {
        "test/fixed"
    }

    async fn generate(&self, prompt: &str) -> Result<String> {
        tokio::time::sleep(self.delay).await;
        let kind = if prompt.contains("Summary:") {
            "summary"
        } else if prompt.contains("Connection:") {
            "connection"
        } else {
            "label"
        };
        Ok(format!("  \"generated {kind}\"\n"))
    }
}

pub async fn consolidation_report_uses_the_generator_within_its_budget(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = consolidation_graph(store).await;
    let budget = GenerationBudget {
        total: Duration::from_secs(30),
        concurrency: 2,
    };
    let fast = memory.clone().with_generator(
        Arc::new(FixedGenerator {
            delay: Duration::ZERO,
        }),
        budget,
    );
    let report = fast.call(ws, options()).await.unwrap();
    let stale = &report.stale_summaries[0];
    assert_eq!(
        (stale.draft_summary.as_deref(), stale.draft_source),
        (Some("generated summary"), Some(TextSource::Llm))
    );
    let pair = &report.relation_candidates[0];
    assert_eq!(
        (pair.rationale.as_deref(), pair.rationale_source),
        (Some("generated connection"), Some(TextSource::Llm))
    );
    for cluster in &report.cluster_summary {
        assert_eq!(cluster.centroid_label.as_deref(), Some("generated label"));
        assert_eq!(cluster.label_source, Some(TextSource::Llm));
    }
    assert!(report.notices.is_empty(), "{:?}", report.notices);

    // A model slower than the budget: the report comes back on time, extractive.
    let budget = GenerationBudget {
        total: Duration::from_millis(300),
        concurrency: 4,
    };
    let slow = memory.with_generator(
        Arc::new(FixedGenerator {
            delay: Duration::from_secs(60),
        }),
        budget,
    );
    let started = Instant::now();
    let report = slow.call(ws, options()).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        report.stale_summaries[0].draft_source,
        Some(TextSource::Extractive)
    );
    assert_eq!(
        report.relation_candidates[0].rationale_source,
        Some(TextSource::Extractive)
    );
    assert!(
        report
            .notices
            .iter()
            .any(|n| n.contains("test/fixed wrote 0 of 4 texts")),
        "{:?}",
        report.notices
    );
}

/// With a model, the report finds what words cannot (issue 58): a fact said again in other
/// words is listed as a repeat, a newer fact that says the older changed as an update (words
/// alone find that one too); two facts one word apart that may both stay true stay unlisted,
/// however alike their vectors.
pub async fn consolidation_report_finds_repeats_and_updates_by_meaning(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    let memory = memory.with_embedder(Arc::new(TermEmbedder));
    let facts = [
        "The payments team owns billing and Priya is the contact",
        "Maria maintains the Helm charts for ingress",
        "Maria maintains the Helm charts for logging",
        "Invoices are rendered by the pdf renderer every night",
        "Every night the pdf renderer renders invoices",
        "Billing moved to the platform team, Marcus is the contact now",
    ];
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("billing", "service", &facts)]),
        )
        .await
        .unwrap();
    Indexer::new(store.clone(), Arc::new(TermEmbedder), 64)
        .run_until_idle()
        .await
        .unwrap();
    let report = memory
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();
    let ordinals = |list: &[crate::FactPair]| -> Vec<[i64; 2]> {
        (list.iter())
            .map(|p| [p.ordinals[0].0, p.ordinals[1].0])
            .collect()
    };
    assert_eq!(
        ordinals(&report.duplicate_observations),
        [[4, 5]],
        "{report:?}"
    );
    assert_eq!(
        ordinals(&report.possibly_superseded),
        [[1, 6]],
        "{report:?}"
    );
    // Without a model, words alone: the update that says it changed and shares two topic words
    // ("team", "contact") beyond the node's name, but not the repeat in other words.
    let (words_only, ws) = memory_with_workspace(store, "words").await;
    words_only
        .call(
            ws,
            CreateEntities::new(vec![entity("billing", "service", &facts)]),
        )
        .await
        .unwrap();
    let report = words_only
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();
    assert!(report.duplicate_observations.is_empty(), "{report:?}");
    assert_eq!(
        ordinals(&report.possibly_superseded),
        [[1, 6]],
        "{report:?}"
    );
}

pub async fn consolidation_report_names_nodes_that_may_be_one(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    let memory = memory.with_embedder(Arc::new(TermEmbedder));
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity(
                    "Deploy Pipeline",
                    "system",
                    &["ships the server on every merge"],
                ),
                entity(
                    "deploy-pipelines",
                    "system",
                    &["ships the server on each merge"],
                ),
                entity(
                    "Deploy Pipeline Owner",
                    "person",
                    &["keeps the pipeline green"],
                ),
                entity("Postgres", "database", &["stores the graph"]),
                entity("PostgreSQL", "database", &["stores every workspace"]),
                entity("Post", "database", &["an unrelated store"]),
            ]),
        )
        .await
        .unwrap();
    Indexer::new(store, Arc::new(TermEmbedder), 64)
        .run_until_idle()
        .await
        .unwrap();
    let report = memory
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();
    let merges: Vec<(&str, &str, &str)> = (report.merge_candidates.iter())
        .map(|m| (m.node_a.as_str(), m.node_b.as_str(), m.reason.as_str()))
        .collect();
    assert!(
        merges.contains(&("Deploy Pipeline", "deploy-pipelines", "name")),
        "{merges:?}"
    );
    assert!(
        merges.contains(&("PostgreSQL", "Postgres", "name")),
        "{merges:?}"
    );
    assert!(
        (report.merge_candidates.iter()).all(|m| m.node_a != "Post" && m.node_b != "Post"),
        "{merges:?}"
    );
    assert!(
        (report.merge_candidates.iter())
            .all(|m| !m.node_b.contains("Owner") && !m.node_a.contains("Owner")),
        "{merges:?}"
    );
}

/// Twelve more facts of `split`'s three topics: 24 in all, eight each, so that a node
/// holding them all is large enough to be a split candidate and falls apart into three.
const MORE_OF_THREE_TOPICS: [&str; 12] = [
    "storage vacuums old PostgreSQL rows nightly",
    "search caches query vectors in memory",
    "releases publish binaries for Linux from main",
    "storage writes SQLite pages through a WAL",
    "search boosts exact names in scores",
    "release candidates wait a Tuesday on staging",
    "storage indexes tables with HNSW for vectors",
    "search answers in milliseconds with ranked scores",
    "releases follow semantic versioning on main",
    "storage replicas stream PostgreSQL changes",
    "search explains each of its scores",
    "releases list their changes every Tuesday",
];

/// Facts of one topic in many words: a node of them stays whole.
const ONE_TOPIC: [&str; 20] = [
    "the deploy pipeline builds the server image",
    "the deploy pipeline runs unit tests first",
    "the deploy pipeline pushes images to the registry",
    "the deploy pipeline waits for a green build",
    "the deploy pipeline rolls out to staging",
    "the deploy pipeline asks for approval before production",
    "the deploy pipeline posts its status to chat",
    "the deploy pipeline retries flaky steps once",
    "the deploy pipeline caches dependencies between runs",
    "the deploy pipeline signs every artifact",
    "the deploy pipeline scans images for vulnerabilities",
    "the deploy pipeline tags releases in git",
    "the deploy pipeline keeps logs for thirty days",
    "the deploy pipeline runs migrations before rollout",
    "the deploy pipeline rolls back on failed health checks",
    "the deploy pipeline notifies the on-call engineer",
    "the deploy pipeline measures rollout duration",
    "the deploy pipeline blocks merges when red",
    "the deploy pipeline uses short-lived credentials",
    "the deploy pipeline archives test reports",
];

pub async fn consolidation_report_finds_facts_to_fold_end_or_split(store: Arc<dyn MemoryStore>) {
    // No embedding model: every section below works from names and words.
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let three_topics: Vec<&str> = (FACTS.iter())
        .chain(&MORE_OF_THREE_TOPICS)
        .copied()
        .collect();
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("engram", "project", &three_topics),
                entity("pipeline", "system", &ONE_TOPIC),
                entity(
                    "staging",
                    "environment",
                    &[
                        "The staging freeze ends on 12 May",
                        "Alice prefers dark mode in the staging console",
                        "The deploy target is staging",
                        "Alice prefers the dark mode in the staging console",
                        "The staging freeze ends on 19 May",
                        "Bob reports outages to Alice",
                    ],
                ),
                entity("AWS", "vendor", &["hosts staging"]),
                entity("Amazon Web Services", "vendor", &["bills monthly"]),
                entity("k8s", "platform", &["runs staging"]),
                entity("Kubernetes", "platform", &["schedules pods"]),
            ]),
        )
        .await
        .unwrap();
    let report = memory
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();

    let merges: Vec<(&str, &str, Option<f64>)> = (report.merge_candidates.iter())
        .map(|m| (m.node_a.as_str(), m.node_b.as_str(), m.similarity_score))
        .collect();
    assert_eq!(
        merges,
        [
            ("AWS", "Amazon Web Services", None),
            ("Kubernetes", "k8s", None)
        ]
    );

    let pairs = |list: &[crate::FactPair]| -> Vec<(String, [i64; 2])> {
        (list.iter())
            .map(|p| (p.name.clone(), [p.ordinals[0].0, p.ordinals[1].0]))
            .collect()
    };
    assert_eq!(
        pairs(&report.duplicate_observations),
        [("staging".to_owned(), [2, 4])]
    );
    assert_eq!(
        pairs(&report.possibly_superseded),
        [("staging".to_owned(), [1, 5])]
    );
    assert_eq!(
        report.possibly_superseded[0].contents,
        [
            "The staging freeze ends on 12 May".to_owned(),
            "The staging freeze ends on 19 May".to_owned()
        ]
    );

    let splits: Vec<(&str, i64, Vec<i64>)> = (report.split_candidates.iter())
        .map(|c| {
            let sizes = c.groups.iter().map(|g| g.size).collect();
            (c.name.as_str(), c.observation_count, sizes)
        })
        .collect();
    assert_eq!(
        splits,
        [("engram", 24, vec![8, 8, 8])],
        "{:?}",
        report.split_candidates
    );
    let labels: Vec<&str> = (report.split_candidates[0].groups.iter())
        .map(|g| g.label.as_str())
        .collect();
    for topic in ["storage", "search", "releases"] {
        assert!(
            labels.iter().any(|l| l.contains(topic)),
            "{topic} in {labels:?}"
        );
    }

    // Once folded, ended and split, the report has nothing more to say of them.
    memory
        .call(
            ws,
            crate::EndObservations::new(&[crate::ObservationEndings {
                entity_name: "staging".into(),
                ordinals: vec![crate::Ordinal(1)],
            }]),
        )
        .await
        .unwrap();
    memory
        .call(ws, DeleteObservations::new(&[deletions("staging", &[4])]))
        .await
        .unwrap();
    let again = memory
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();
    assert!(again.duplicate_observations.is_empty(), "{again:?}");
    assert!(again.possibly_superseded.is_empty(), "{again:?}");
}

/// Names of one thing the report proposes to merge without an embedding model (issue 58): a
/// nickname and the full name, a first name and the one full name it begins, a name with a
/// word added, an expansion across types; never two languages told apart by a symbol, two
/// people who share a first name, or a name inside a longer one of something else.
pub async fn merge_candidates_know_nicknames_added_words_and_expansions(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let nodes = [
        ("Bob", "person"),
        ("Robert Miller", "person"),
        ("Dana", "person"),
        ("Dana Lee", "person"),
        ("Alice Chen", "person"),
        ("Alice Wong", "person"),
        ("Stripe integration", "service"),
        ("Stripe payments integration", "service"),
        ("VS Code", "tool"),
        ("Visual Studio Code", "editor"),
        ("C", "language"),
        ("C++", "language"),
        ("Java", "language"),
        ("JavaScript", "language"),
    ];
    let entities = (nodes.iter())
        .map(|(name, kind)| entity(name, kind, &["a fact"]))
        .collect();
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    let report = memory
        .call(ws, GetConsolidationReport::default())
        .await
        .unwrap();
    let mut merges: Vec<(&str, &str)> = (report.merge_candidates.iter())
        .map(|m| (m.node_a.as_str(), m.node_b.as_str()))
        .collect();
    merges.sort_unstable();
    assert_eq!(
        merges,
        [
            ("Bob", "Robert Miller"),
            ("Dana", "Dana Lee"),
            ("Stripe integration", "Stripe payments integration"),
            ("VS Code", "Visual Studio Code"),
        ]
    );
}
