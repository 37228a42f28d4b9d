//! LoCoMo retrieval evaluation through a running engram server over MCP (Streamable HTTP).
//! `cargo xtask eval locomo` starts the server and runs this; see
//! `../shared/data/locomo-dev/README.md` for the data and the protocol.
//!
//! Mapping `facts`: one entity per fact, asked with `search_nodes` (limit 10). Mapping
//! `speakers`: one node per speaker holding the facts as observations, asked with
//! `search_observations` (limit 10). Mapping `turns` (not in `both`): one entity per message
//! of the dialogue as it was said (raw notes rather than extracted facts), its `dia_id` its
//! evidence, asked as `facts` is. Recall@k counts a question as a hit when one of the top
//! k results came from a dialogue turn in its evidence; MRR is the mean of 1 / the rank of
//! the first such result (0 when none of the 10 is).
//!
//! `--perspective-workspaces` adds the facts mapping once per named workspace (prepared by
//! `cargo xtask eval locomo --each-perspective` with one perspective enabled in each), so
//! each perspective can be judged alone.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use engram::http::WORKSPACE_HEADER;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Every search asks for this many results; recall is reported at 1, 5 and 10.
const LIMIT: usize = 10;
/// Entities per `create_entities` call (the server's limit is 1,000).
const BATCH: usize = 1_000;
/// How long indexing may take before the run fails.
const INDEX_TIMEOUT: Duration = Duration::from_secs(3_600);
/// The question categories scored (5, adversarial, has no answer in the conversation).
const CATEGORIES: [(u64, &str); 4] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
];

type Client = RunningService<RoleClient, ()>;
/// Key of a stored fact (`name`, or `name#ordinal` for an observation) → its turns.
type TurnsOf = HashMap<String, Vec<String>>;
/// The answer to one question: the turns of each result, best first.
type Ranked = Vec<Vec<String>>;

/// Evaluate engram's retrieval on LoCoMo through its MCP tools.
#[derive(Parser)]
struct Args {
    /// The server, `http://127.0.0.1:PORT`.
    #[arg(long)]
    url: String,
    /// The directory holding `conv-*.json`.
    #[arg(long)]
    data: PathBuf,
    /// Search mode(s) to evaluate.
    #[arg(long, default_value = "all", value_parser = ["hybrid", "embedding", "text", "all"])]
    mode: String,
    /// Mapping(s) of the data onto the graph.
    #[arg(long, default_value = "both", value_parser = ["facts", "speakers", "turns", "both"])]
    mapping: String,
    /// Use only the first N conversations.
    #[arg(long)]
    limit_conversations: Option<usize>,
    /// Where to write the results as JSON.
    #[arg(long)]
    out: PathBuf,
    /// Enabled perspectives per observation in the main workspaces, for the pairs/s figure.
    #[arg(long, default_value_t = 1)]
    perspectives: usize,
    /// Perspective variants: for each NAME, the workspaces `locomo-p-NAME` (and, with
    /// `--codebase`, `codebase-p-NAME`) get the facts (and codebase) mapping, evaluated in
    /// embedding and hybrid mode (mapping `facts:NAME`, `codebase:NAME`).
    #[arg(long, value_delimiter = ',')]
    perspective_workspaces: Vec<String>,
    /// A codebase memory (`{nodes, relations, questions}` JSON, e.g.
    /// `xtask/data/codebase-memory.json`), loaded into the workspace `codebase-memory` and
    /// asked with `search_nodes`: recall over named nodes.
    #[arg(long)]
    codebase: Option<PathBuf>,
}

/// A codebase memory: nodes with meaningful names, and questions naming the nodes that
/// answer them.
#[derive(Deserialize)]
struct Codebase {
    nodes: Vec<Value>,
    relations: Vec<Value>,
    questions: Vec<CodebaseQuestion>,
}

#[derive(Deserialize)]
struct CodebaseQuestion {
    question: String,
    answers: Vec<String>,
}

/// One stored fact: who, what (`"<session date>: <fact>"`), and its turns (`conv-26:D1:3`).
struct Fact {
    speaker: String,
    text: String,
    turns: Vec<String>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    category: u64,
    #[serde(default)]
    evidence: HashSet<String>,
}

struct Conversation {
    id: String,
    facts: Vec<Fact>,
    /// The dialogue itself: each message as a fact of its own turn.
    turns: Vec<Fact>,
    questions: Vec<Question>,
}

#[derive(Serialize)]
struct Recall {
    questions: usize,
    #[serde(rename = "r@1")]
    r1: f64,
    #[serde(rename = "r@5")]
    r5: f64,
    #[serde(rename = "r@10")]
    r10: f64,
    mrr: f64,
}

#[derive(Serialize)]
struct Indexing {
    seconds: f64,
    pairs: f64,
    pairs_per_second: f64,
}

#[derive(Serialize)]
struct Run {
    mapping: String,
    mode: &'static str,
    #[serde(flatten)]
    overall: Recall,
    by_category: BTreeMap<String, Recall>,
    load_seconds: f64,
    /// Embedding mode only: the wait for full coverage after loading.
    indexing: Option<Indexing>,
    latency_ms_p50: f64,
    latency_ms_p95: f64,
    /// Questions the server answered in another mode than asked (a `notice`).
    fallbacks: usize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let conversations = load_data(&args.data, args.limit_conversations)?;
    let questions: Vec<&Question> = conversations.iter().flat_map(|c| &c.questions).collect();
    let facts = conversations.iter().map(|c| c.facts.len()).sum::<usize>();
    let known: HashSet<&String> = conversations
        .iter()
        .flat_map(|c| c.facts.iter().flat_map(|f| &f.turns))
        .collect();
    let answerable = questions
        .iter()
        .filter(|q| q.evidence.iter().any(|e| known.contains(e)))
        .count();
    let ceiling = answerable as f64 / questions.len().max(1) as f64;
    let ids: Vec<&str> = conversations.iter().map(|c| c.id.as_str()).collect();
    println!(
        "locomo: {} ({}), {facts} facts, {} questions of categories 1-4",
        ids.len(),
        ids.join(", "),
        questions.len()
    );
    let modes: Vec<&'static str> = ["hybrid", "embedding", "text"]
        .into_iter()
        .filter(|&one| args.mode == "all" || args.mode == one)
        .collect();
    let codebase: Option<Codebase> = match &args.codebase {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", path.display()))?,
            )
        }
        None => None,
    };
    let codebase_questions: Vec<Question> = (codebase.iter())
        .flat_map(|c| &c.questions)
        .map(|q| Question {
            question: q.question.clone(),
            category: 0,
            evidence: q.answers.iter().cloned().collect(),
        })
        .collect();
    let codebase_questions: Vec<&Question> = codebase_questions.iter().collect();
    // (mapping, workspace, label, modes)
    let mut plan: Vec<(&str, String, String, Vec<&'static str>)> = ["facts", "speakers", "turns"]
        .into_iter()
        .filter(|&one| (args.mapping == "both" && one != "turns") || args.mapping == one)
        .map(|mapping| {
            (
                mapping,
                format!("locomo-{mapping}"),
                mapping.to_owned(),
                modes.clone(),
            )
        })
        .collect();
    if codebase.is_some() {
        plan.push((
            "codebase",
            "codebase-memory".into(),
            "codebase".into(),
            modes.clone(),
        ));
    }
    for name in &args.perspective_workspaces {
        let modes: Vec<&str> = modes.iter().copied().filter(|&m| m != "text").collect();
        plan.push((
            "facts",
            format!("locomo-p-{name}"),
            format!("facts:{name}"),
            modes.clone(),
        ));
        if codebase.is_some() {
            let workspace = format!("codebase-p-{name}");
            plan.push(("codebase", workspace, format!("codebase:{name}"), modes));
        }
    }
    let mut runs = Vec::new();
    for (mapping, workspace, label, modes) in plan {
        let client = connect(&args.url, &workspace).await?;
        let started = Instant::now();
        let (turns_of, questions) = match (mapping, &codebase) {
            ("codebase", Some(codebase)) => {
                (load_codebase(&client, codebase).await?, &codebase_questions)
            }
            ("facts", _) => (
                load_facts(&client, &conversations, false).await?,
                &questions,
            ),
            ("turns", _) => (load_facts(&client, &conversations, true).await?, &questions),
            _ => (load_speakers(&client, &conversations).await?, &questions),
        };
        let load_seconds = started.elapsed().as_secs_f64();
        println!("locomo: {label}: loaded in {load_seconds:.1}s");
        // Indexing is waited for (and reported) only for embedding mode, which runs first.
        let mut indexing = None;
        if modes.iter().any(|&m| m != "text") {
            indexing = Some(wait_for_index(&client, &label, args.perspectives).await?);
        }
        if std::env::var_os("ENGRAM_EVAL_SIMULATE_USE").is_some() && mapping != "speakers" {
            simulate_use(&client, questions.iter().map(|q| q.question.as_str())).await?;
        }
        for &mode in &modes {
            let (mut ranked, mut latencies, mut fallbacks) = (Vec::new(), Vec::new(), 0);
            for (index, question) in questions.iter().enumerate() {
                let started = Instant::now();
                let query = &question.question;
                let (result, fell_back) = ask(&client, mapping, query, mode, &turns_of).await?;
                latencies.push(started.elapsed().as_secs_f64() * 1_000.0);
                fallbacks += usize::from(fell_back);
                ranked.push(result);
                if (index + 1) % 250 == 0 {
                    eprintln!("locomo: {label}/{mode}: {} questions asked", index + 1);
                }
            }
            latencies.sort_by(f64::total_cmp);
            let by_category = (CATEGORIES.iter())
                .filter(|_| mapping != "codebase")
                .map(|&(c, label)| (format!("{c} {label}"), recall(questions, &ranked, Some(c))))
                .collect();
            runs.push(Run {
                mapping: label.clone(),
                mode,
                overall: recall(questions, &ranked, None),
                by_category,
                load_seconds,
                indexing: indexing.take(),
                latency_ms_p50: percentile(&latencies, 0.50),
                latency_ms_p95: percentile(&latencies, 0.95),
                fallbacks,
            });
        }
        client.cancel().await?;
    }
    let report = json!({
        "data": args.data, "conversations": ids, "facts": facts, "questions": questions.len(),
        "evidence_ceiling": ceiling, "runs": runs,
    });
    print_tables(&runs, facts, questions.len(), ceiling);
    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&args.out, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("\nlocomo: results written to {}", args.out.display());
    Ok(())
}

/// Reads the first `limit` of `dir`'s `conv-*.json` (by name).
fn load_data(dir: &Path, limit: Option<usize>) -> Result<Vec<Conversation>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("no LoCoMo data at {} (pass --data DIR)", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("conv-") && name.ends_with(".json")
        })
        .collect();
    paths.sort();
    ensure!(!paths.is_empty(), "no conv-*.json in {}", dir.display());
    paths.truncate(limit.unwrap_or(usize::MAX));
    paths.iter().map(|path| parse_conversation(path)).collect()
}

/// One conversation: its facts with their session dates, and its questions of categories
/// 1-4 with normalised evidence (`D8:6; D9:17` is two turns, `D:11:26` is `D11:26`). Turn
/// ids are prefixed with the conversation, as all conversations share one workspace.
fn parse_conversation(path: &Path) -> Result<Conversation> {
    let id = path.file_stem().unwrap_or_default().to_string_lossy();
    let id = id.into_owned();
    let text = std::fs::read_to_string(path)?;
    let data: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let mut facts = Vec::new();
    for session in 1.. {
        let Some(observed) = data.get(format!("session_{session}_observation")) else {
            break;
        };
        let date = data[format!("session_{session}_date_time")].as_str();
        let date = date.with_context(|| format!("{id}: session {session} has no date"))?;
        // {speaker: [[fact, dia_id or [dia_id, …]], …]}
        let observed: BTreeMap<String, Vec<(String, Value)>> =
            serde_json::from_value(observed.clone())?;
        for (speaker, items) in observed {
            for (fact, turns) in items {
                let turns: Vec<String> = match turns {
                    Value::String(turn) => vec![turn],
                    turns => serde_json::from_value(turns)?,
                };
                ensure!(!turns.is_empty(), "{id}: no dia_id for {fact:?}");
                let turns = turns.iter().map(|turn| format!("{id}:{turn}")).collect();
                let text = format!("{date}: {fact}");
                facts.push(Fact {
                    speaker: speaker.clone(),
                    text,
                    turns,
                });
            }
        }
    }
    let mut turns = Vec::new();
    for session in 1.. {
        let Some(Value::Array(messages)) = data.get(format!("session_{session}")) else {
            break;
        };
        let date = data[format!("session_{session}_date_time")].as_str();
        let date = date.with_context(|| format!("{id}: session {session} has no date"))?;
        for message in messages {
            let (Some(speaker), Some(turn), Some(said)) = (
                message["speaker"].as_str(),
                message["dia_id"].as_str(),
                message["text"].as_str(),
            ) else {
                bail!("{id}: a message of session {session} lacks speaker, dia_id or text");
            };
            turns.push(Fact {
                speaker: speaker.to_owned(),
                text: format!("{date}: {said}"),
                turns: vec![format!("{id}:{turn}")],
            });
        }
    }
    let all: Vec<Question> = serde_json::from_value(data["qa"].clone())
        .with_context(|| format!("{id}: reading the questions"))?;
    let mut questions: Vec<Question> = all.into_iter().filter(|q| q.category <= 4).collect();
    for question in &mut questions {
        question.evidence = (question.evidence.iter())
            .flat_map(|e| e.split([';', ',', ' ']).filter(|e| !e.is_empty()))
            .map(|e| format!("{id}:{}", e.replacen("D:", "D", 1)))
            .collect();
    }
    Ok(Conversation {
        id,
        facts,
        turns,
        questions,
    })
}

/// An MCP client bound to `workspace`.
async fn connect(url: &str, workspace: &str) -> Result<Client> {
    let headers = HashMap::from([(WORKSPACE_HEADER.parse()?, workspace.parse()?)]);
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"));
    let config = config.custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    Ok(().serve(transport).await?)
}

/// Calls `tool` and returns its structured result; tool errors become errors.
async fn call(client: &Client, tool: &'static str, arguments: Value) -> Result<Value> {
    let Value::Object(arguments) = arguments else {
        bail!("{tool}: arguments must be an object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .with_context(|| format!("calling {tool}"))?;
    if result.is_error == Some(true) {
        bail!("{tool} failed: {}", serde_json::to_string(&result.content)?);
    }
    (result.structured_content).with_context(|| format!("{tool}: no structured content"))
}

/// Mapping `facts`: one entity per fact, named `<conv>:<dia_id>:<index>`; with `raw`
/// (mapping `turns`), one per message of the dialogue, as said, its turn its evidence.
async fn load_facts(client: &Client, conversations: &[Conversation], raw: bool) -> Result<TurnsOf> {
    let mut turns_of = TurnsOf::new();
    let mut entities = Vec::new();
    for conversation in conversations {
        let facts = if raw {
            &conversation.turns
        } else {
            &conversation.facts
        };
        for (index, fact) in facts.iter().enumerate() {
            let name = format!("{}:{index}", fact.turns[0]);
            let (entity_type, observations) = (&fact.speaker, [&fact.text]);
            entities.push(
                json!({"name": name, "entity_type": entity_type, "observations": observations}),
            );
            turns_of.insert(name, fact.turns.clone());
        }
    }
    for batch in entities.chunks(BATCH) {
        call(client, "create_entities", json!({ "entities": batch })).await?;
    }
    Ok(turns_of)
}

/// Mapping `codebase`: its nodes and relations as they are; each node's key is its name.
async fn load_codebase(client: &Client, codebase: &Codebase) -> Result<TurnsOf> {
    call(
        client,
        "create_entities",
        json!({ "entities": codebase.nodes }),
    )
    .await?;
    call(
        client,
        "create_relations",
        json!({ "relations": codebase.relations }),
    )
    .await?;
    let names = codebase.nodes.iter().filter_map(|n| n["name"].as_str());
    Ok(names
        .map(|name| (name.to_owned(), vec![name.to_owned()]))
        .collect())
}

/// Mapping `speakers`: one node `<conv>:<speaker>` per speaker, the facts as observations
/// in order; keys `<node>#<ordinal>`, the ordinals as the server assigned them.
async fn load_speakers(client: &Client, conversations: &[Conversation]) -> Result<TurnsOf> {
    let mut turns_of = TurnsOf::new();
    for conversation in conversations {
        let mut speakers: BTreeMap<&str, Vec<&Fact>> = BTreeMap::new();
        for fact in &conversation.facts {
            speakers.entry(&fact.speaker).or_default().push(fact);
        }
        for (speaker, facts) in speakers {
            let name = format!("{}:{speaker}", conversation.id);
            let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
            let entity = json!({"name": name, "entity_type": "person", "observations": texts});
            call(client, "create_entities", json!({ "entities": [entity] })).await?;
            let opened = call(client, "open_nodes", json!({ "names": [name] })).await?;
            let stored = opened["entities"][0]["observations"].as_array();
            let stored = stored.context("open_nodes: no observations")?;
            ensure!(
                stored.len() == facts.len(),
                "{name}: {} stored",
                stored.len()
            );
            for (observation, fact) in stored.iter().zip(&facts) {
                ensure!(observation["content"] == fact.text, "{name}: out of order");
                let key = format!("{name}#{}", observation["ordinal"]);
                turns_of.insert(key, fact.turns.clone());
            }
        }
    }
    Ok(turns_of)
}

/// Polls `get_stats` every 0.5 s until every observation × perspective pair is embedded.
async fn wait_for_index(client: &Client, mapping: &str, perspectives: usize) -> Result<Indexing> {
    let (started, mut printed) = (Instant::now(), Instant::now());
    loop {
        let stats = call(client, "get_stats", json!({})).await?;
        let coverage = stats["embedding_coverage"].as_f64().context("coverage")?;
        let seconds = started.elapsed().as_secs_f64();
        if coverage >= 1.0 {
            let observations = stats["observation_count"].as_f64().context("count")?;
            let pairs = observations * perspectives as f64;
            eprintln!("locomo: {mapping}: indexed {pairs} pairs in {seconds:.1}s");
            let pairs_per_second = pairs / seconds.max(1e-9);
            return Ok(Indexing {
                seconds,
                pairs,
                pairs_per_second,
            });
        }
        ensure!(
            started.elapsed() < INDEX_TIMEOUT,
            "indexing did not finish: coverage {coverage:.3} after {seconds:.0}s"
        );
        if printed.elapsed() >= Duration::from_secs(10) {
            let percent = coverage * 100.0;
            eprintln!("locomo: {mapping}: indexing, {percent:.1}% after {seconds:.0}s");
            printed = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Uses the memory as an agent that asked every question before would have
/// (`ENGRAM_EVAL_SIMULATE_USE`): each question once (hybrid, the default `min_score`), then
/// `open_nodes` on its first five results; then waits for the server's access log to be written
/// ([`engram::indexing::ACCESS_EVERY`] and a second), so that a server that ranks by use
/// (`-- --access-ranking`) is measured after that use.
async fn simulate_use<'q>(client: &Client, questions: impl Iterator<Item = &'q str>) -> Result<()> {
    let mut asked = 0;
    for question in questions {
        let found = call(
            client,
            "search_nodes",
            json!({"query": question, "limit": 5}),
        )
        .await?;
        let names: Vec<&str> = (found["results"].as_array().context("results")?.iter())
            .filter_map(|r| r["name"].as_str())
            .collect();
        if !names.is_empty() {
            call(client, "open_nodes", json!({"names": names})).await?;
        }
        asked += 1;
    }
    eprintln!("locomo: simulated use: {asked} questions asked and their first results opened");
    tokio::time::sleep(engram::indexing::ACCESS_EVERY + Duration::from_secs(1)).await;
    Ok(())
}

/// Asks `query`: `search_nodes` (limit 10) for `facts`, `search_observations` (limit 10) for
/// `speakers`, at the server's default `min_score` unless `ENGRAM_EVAL_MIN_SCORE` sets one
/// (0: keep everything). Returns the turns of each result, best first, and whether the server
/// answered in another mode than asked.
async fn ask(
    client: &Client,
    mapping: &str,
    query: &str,
    mode: &str,
    turns_of: &TurnsOf,
) -> Result<(Ranked, bool)> {
    let mut arguments = json!({"query": query, "limit": LIMIT, "mode": mode});
    if let Some(least) = std::env::var("ENGRAM_EVAL_MIN_SCORE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        arguments["min_score"] = json!(least);
    }
    let turns = |key: &str| turns_of.get(key).cloned().unwrap_or_default();
    if mapping != "speakers" {
        let found = call(client, "search_nodes", arguments).await?;
        let results = found["results"].as_array().context("results")?;
        let names = results.iter().filter_map(|r| r["name"].as_str());
        return Ok((names.map(turns).collect(), found["mode"] != mode));
    }
    let found = call(client, "search_observations", arguments).await?;
    let observations = found["observations"].as_array().context("observations")?;
    let ranked = observations.iter().map(|o| {
        let name = o["name"].as_str().unwrap_or_default();
        turns(&format!("{name}#{}", o["ordinal"]))
    });
    Ok((ranked.collect(), found["mode"] != mode))
}

/// Recall@1/5/10 over the questions of `category` (all if `None`).
fn recall(questions: &[&Question], ranked: &[Ranked], category: Option<u64>) -> Recall {
    let (mut asked, mut hits, mut reciprocal) = (0, [0; 3], 0.0);
    for (question, result) in questions.iter().zip(ranked) {
        if category.is_some_and(|c| c != question.category) {
            continue;
        }
        asked += 1;
        let relevant = |turns: &Vec<String>| turns.iter().any(|t| question.evidence.contains(t));
        for (hit, k) in hits.iter_mut().zip([1, 5, 10]) {
            *hit += usize::from(result.iter().take(k).any(relevant));
        }
        if let Some(rank) = result.iter().take(LIMIT).position(relevant) {
            reciprocal += 1.0 / (rank + 1) as f64;
        }
    }
    let at = |i: usize| hits[i] as f64 / f64::from(asked.max(1));
    Recall {
        questions: asked as usize,
        r1: at(0),
        r5: at(1),
        r10: at(2),
        mrr: reciprocal / f64::from(asked.max(1)),
    }
}

impl Recall {
    /// `| questions | R@1 | R@5 | R@10 | MRR |` as table cells.
    fn cells(&self) -> String {
        let Self {
            questions,
            r1,
            r5,
            r10,
            mrr,
        } = self;
        format!("| {questions} | {r1:.3} | {r5:.3} | {r10:.3} | {mrr:.3} |")
    }
}

/// The nearest-rank percentile of sorted `values`.
fn percentile(values: &[f64], p: f64) -> f64 {
    let rank = (p * values.len() as f64).ceil() as usize;
    values
        .get(rank.clamp(1, values.len().max(1)) - 1)
        .copied()
        .unwrap_or(0.0)
}

/// The results as markdown tables.
fn print_tables(runs: &[Run], facts: usize, questions: usize, ceiling: f64) {
    let opt = |x: Option<f64>| x.map_or("—".to_owned(), |x| format!("{x:.1}"));
    println!(
        "\n## LoCoMo retrieval: {questions} questions, {facts} facts, evidence ceiling {ceiling:.3}\n"
    );
    println!(
        "| mapping | mode | questions | R@1 | R@5 | R@10 | MRR | load s | indexing s | pairs/s | p50 ms | p95 ms | fallbacks |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for run in runs {
        let indexing = run.indexing.as_ref();
        println!(
            "| {} | {} {} {:.1} | {} | {} | {:.1} | {:.1} | {} |",
            run.mapping,
            run.mode,
            run.overall.cells(),
            run.load_seconds,
            opt(indexing.map(|i| i.seconds)),
            opt(indexing.map(|i| i.pairs_per_second)),
            run.latency_ms_p50,
            run.latency_ms_p95,
            run.fallbacks,
        );
    }
    println!("\n| mapping | mode | category | questions | R@1 | R@5 | R@10 | MRR |");
    println!("|---|---|---|---|---|---|---|---|");
    for run in runs {
        for (category, recall) in &run.by_category {
            println!(
                "| {} | {} | {category} {}",
                run.mapping,
                run.mode,
                recall.cells()
            );
        }
    }
}
