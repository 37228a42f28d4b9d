//! `engram recall` and `engram brief`: memory as markdown on standard output, for people and
//! for a client's hooks (Claude Code adds what a hook prints to the model's context). Both
//! ask a running server (`--url`) or read the database directly, within a time limit.
//!
//! Under `--hook` they read the hook's JSON input on standard input (the prompt, for recall)
//! and never fail the client: any error or a time limit passed prints nothing on standard
//! output, says why on standard error and exits 0 (Claude Code blocks the prompt on exit
//! status 2 and shows other failures to the user).

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use engram_domain::{Memory, MemoryStore, SearchNodes, SearchResults};
use engram_mcp::markdown;

use crate::cli::{BriefArgs, RecallArgs, RecallFormat, ServerArgs};

/// Bytes of a prompt used as the query: the longest query a search takes is larger, but the
/// start of a long prompt says what it is about.
const QUERY_BYTES: usize = 2_000;

/// Where recall and brief read memory from.
pub enum Source {
    /// A running server over Streamable HTTP.
    Server(ServerArgs),
    /// The database, with the embedder the arguments select.
    Store(Arc<dyn MemoryStore>),
}

/// Runs `engram recall`: prints what memory holds on the query, or nothing.
///
/// # Errors
/// A missing query, an unknown workspace, an unreachable server or store. `main` bounds the
/// call by `--timeout` and, under `--hook`, reports a failure with exit status 0.
pub async fn recall(source: Source, args: RecallArgs) -> Result<()> {
    let hook = args.run.hook;
    let run = async move {
        let query = match (&args.query, hook) {
            (Some(query), _) => query.clone(),
            (None, true) => match hook_prompt(&read_stdin().await?)? {
                Some(prompt) => prompt,
                None => return Ok(None),
            },
            (None, false) => bail!("give the query: engram recall \"QUERY\" --workspace NAME"),
        };
        let query = cut_query(&query);
        if query.trim().is_empty() {
            return Ok(None);
        }
        let results = search(source, &args, &query).await?;
        Ok(match args.format {
            RecallFormat::Markdown => markdown::recall(&results, &query),
            RecallFormat::Json => Some(serde_json::to_string_pretty(&results)? + "\n"),
        })
    };
    print_answer(run.await?);
    Ok(())
}

/// Runs `engram brief`: prints the workspace brief.
///
/// # Errors
/// As [`recall`].
pub async fn brief(source: Source, args: BriefArgs) -> Result<()> {
    let hook = args.run.hook;
    let run = async move {
        if hook {
            // Claude Code's input (session id, source) says nothing the brief needs.
            let _ = read_stdin().await?;
        }
        let text = match source {
            Source::Server(server) => {
                let client = connect(&server, &args.workspace).await?;
                let max_chars = (args.max_chars).clamp(200, engram_mcp::resources::BRIEF_MAX_CHARS);
                let uri = format!("{}?max_chars={max_chars}", engram_mcp::resources::BRIEF_URI);
                let read = client
                    .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
                    .await;
                // The session is closed whatever the answer, not left to time out.
                let _ = client.cancel().await;
                let read = read.context("reading engram://brief")?;
                let text = (read.contents.into_iter())
                    .find_map(|contents| match contents {
                        rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
                            Some(text)
                        }
                        _ => None,
                    })
                    .context("the server's brief has no text")?;
                markdown::cut_to(text, args.max_chars)
            }
            Source::Store(store) => {
                let memory = Memory::new(store);
                let workspace = find_workspace(&memory, &args.workspace).await?;
                let brief = memory.brief(workspace, engram_domain::BRIEF_NODES).await?;
                markdown::brief(&brief, args.max_chars)
            }
        };
        Ok::<_, anyhow::Error>(Some(text))
    };
    print_answer(run.await?);
    Ok(())
}

/// Prints `answer` (nothing for `None`), ending in a line break.
fn print_answer(answer: Option<String>) {
    if let Some(text) = answer {
        out!("{text}");
        if !text.ends_with('\n') {
            outln!();
        }
    }
}

/// The search behind `recall`: `search_nodes` on the server, or on the store with the
/// selected embedder (waiting for it at most half the time limit, then answering from full
/// text).
async fn search(source: Source, args: &RecallArgs, query: &str) -> Result<SearchResults> {
    match source {
        Source::Server(server) => {
            let client = connect(&server, &args.workspace).await?;
            let mut arguments = serde_json::Map::new();
            arguments.insert("query".into(), query.into());
            arguments.insert("limit".into(), args.limit.into());
            if let Some(min_score) = args.min_score {
                arguments.insert("min_score".into(), min_score.into());
            }
            let result = client
                .call_tool(
                    rmcp::model::CallToolRequestParams::new("search_nodes")
                        .with_arguments(arguments),
                )
                .await;
            // The session is closed whatever the answer, not left to time out.
            let _ = client.cancel().await;
            let result = result.context("calling search_nodes")?;
            if result.is_error == Some(true) {
                let message: Vec<String> = (result.content.iter())
                    .filter_map(|block| Some(block.as_text()?.text.clone()))
                    .collect();
                bail!("search_nodes: {}", message.join(" "));
            }
            let structured = result
                .structured_content
                .context("search_nodes answered without structured content")?;
            Ok(serde_json::from_value(structured).context("reading search_nodes' answer")?)
        }
        Source::Store(store) => {
            let mut memory =
                Memory::new(store).with_query_embedding_budget(args.run.timeout.mul_f64(0.5));
            if let Some(embedder) = embedder(&args.embed, args.run.hook)? {
                memory = memory.with_embedder(embedder);
            }
            let workspace = find_workspace(&memory, &args.workspace).await?;
            Ok(memory
                .call(
                    workspace,
                    SearchNodes::new(query)
                        .limit(args.limit)
                        .min_score(args.min_score),
                )
                .await?)
        }
    }
}

/// The embedder `embed` selects; under `--hook`, a local model that is not on this machine yet
/// is not fetched (a prompt would wait for a download it is then killed in): the search
/// answers from full text, and `engram fetch-model` is named.
fn embedder(
    embed: &crate::cli::EmbedArgs,
    hook: bool,
) -> Result<Option<Arc<dyn engram_domain::Embedder>>> {
    let choice = embed.choice();
    if let engram::indexing::EmbedderChoice::Local(model) = choice
        && hook
        && !matches!(engram_embed::local::local_model_dir(model), Ok(Some(_)))
    {
        eprintln!(
            "engram: {} is not on this machine yet; recalling by full text (`engram fetch-model \
             --model {}` fetches it)",
            model.display_name(),
            model
        );
        return Ok(None);
    }
    choice.build()
}

/// The id of the workspace `name`, or an error naming the command that lists them.
async fn find_workspace(memory: &Memory, name: &str) -> Result<engram_domain::WorkspaceId> {
    Ok(memory
        .workspace(name)
        .await
        .with_context(|| format!("workspace {name:?}: `engram workspace list` shows them"))?
        .id)
}

/// An MCP client session with the server, bound to `workspace`.
async fn connect(
    server: &ServerArgs,
    workspace: &str,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>> {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let url = server.url.as_deref().context("no --url")?;
    if !url.contains("://") {
        bail!("--url {url}: give the scheme too, as in --url http://{url}");
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("--url {url}: engram's client speaks http:// and https://");
    }
    // HTTPS verifies the server against the platform's trust store (`SSL_CERT_FILE` and
    // `SSL_CERT_DIR` are honoured), with ring's cryptography (installed by `main`).
    let endpoint = match url.trim_end_matches('/') {
        base if base.ends_with("/mcp") => base.to_owned(),
        base => format!("{base}/mcp"),
    };
    let mut headers = HashMap::from([(
        reqwest::header::HeaderName::from_static(engram::http::WORKSPACE_HEADER),
        reqwest::header::HeaderValue::from_str(workspace).context("--workspace")?,
    )]);
    if let Some(token) = &server.token {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
                .context("--token")?,
        );
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(endpoint.clone()).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    match ().serve(transport).await {
        Ok(client) => Ok(client),
        // Nothing listens there: the MCP client's error would name its own internals, while
        // a person needs the address and what to run.
        Err(error) if !listens(&endpoint).await => {
            tracing::debug!(%error, "connecting to the server failed");
            bail!("no engram server answers at {endpoint}; is `engram serve` running there?")
        }
        Err(error) => Err(error).with_context(|| format!("connecting to {endpoint}")),
    }
}

/// Whether anything accepts a TCP connection at `url`'s host and port (within a second).
async fn listens(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let connect = tokio::net::TcpStream::connect((host, port));
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(1), connect).await,
        Ok(Ok(_))
    )
}

/// The most a hook reads of its input: Claude Code's JSON with the user's prompt, which
/// [`cut_query`] cuts far below this anyway.
pub const MAX_HOOK_INPUT: u64 = 1024 * 1024;

/// Standard input, whole, read without blocking the runtime, so that `--timeout` bounds it
/// too (a client that keeps the pipe open cannot hold the hook), and at most
/// [`MAX_HOOK_INPUT`] bytes of it. A terminal is refused rather than waited on: `--hook` is
/// for a client that writes its JSON and closes the pipe.
async fn read_stdin() -> Result<String> {
    use std::io::IsTerminal as _;
    use tokio::io::AsyncReadExt as _;
    if std::io::stdin().is_terminal() {
        bail!(
            "--hook reads the client's hook input (JSON) on standard input; by hand, give the \
             query instead: engram recall \"QUERY\" --workspace NAME"
        );
    }
    let mut input = Vec::new();
    (tokio::io::stdin().take(MAX_HOOK_INPUT + 1))
        .read_to_end(&mut input)
        .await
        .context("reading the hook's input on standard input")?;
    if input.len() as u64 > MAX_HOOK_INPUT {
        bail!("the hook's input is larger than {MAX_HOOK_INPUT} bytes; it was not read");
    }
    String::from_utf8(input).context("the hook's input on standard input is not UTF-8")
}

/// The prompt in a `UserPromptSubmit` hook's input (`{"hook_event_name":
/// "UserPromptSubmit", "prompt": "…", …}`, Claude Code's documented format); `None` for a
/// slash command, which is for the client, not about memory.
///
/// # Errors
/// Input that is not such an object.
pub fn hook_prompt(input: &str) -> Result<Option<String>> {
    let input: serde_json::Value =
        serde_json::from_str(input).context("the hook's input is not JSON")?;
    let prompt = (input.get("prompt").and_then(serde_json::Value::as_str)).context(
        "the hook's input has no \"prompt\" (engram recall --hook is for UserPromptSubmit)",
    )?;
    let prompt = prompt.trim();
    if is_slash_command(prompt) {
        return Ok(None);
    }
    Ok(Some(prompt.to_owned()))
}

/// Whether `prompt` is a client's slash command (`/compact`, `/review 12`, `/mcp:tool`), not a
/// question: its first word is `/` and a name. A path (`/etc/hosts is empty`) is a question.
fn is_slash_command(prompt: &str) -> bool {
    let first = prompt.split_whitespace().next().unwrap_or_default();
    first.strip_prefix('/').is_some_and(|name| {
        !name.is_empty()
            && (name.chars()).all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
    })
}

/// The first [`QUERY_BYTES`] bytes of `query`, cut at a character boundary.
fn cut_query(query: &str) -> String {
    let mut end = query.len().min(QUERY_BYTES);
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    query[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_comes_from_claude_codes_hook_input() {
        let input = r#"{"session_id":"abc123","transcript_path":"/tmp/t.jsonl","cwd":"/repo",
            "permission_mode":"default","hook_event_name":"UserPromptSubmit",
            "prompt":"  Where does Alice live?  "}"#;
        assert_eq!(
            hook_prompt(input).unwrap().as_deref(),
            Some("Where does Alice live?")
        );
        let command = r#"{"hook_event_name":"UserPromptSubmit","prompt":"/compact"}"#;
        assert_eq!(hook_prompt(command).unwrap(), None);
        let path = r#"{"hook_event_name":"UserPromptSubmit","prompt":"/etc/hosts is empty"}"#;
        assert_eq!(
            hook_prompt(path).unwrap().as_deref(),
            Some("/etc/hosts is empty")
        );
        assert!(hook_prompt(r#"{"hook_event_name":"SessionStart"}"#).is_err());
        assert!(hook_prompt("not json").is_err());
    }

    #[test]
    fn long_queries_are_cut_at_a_character_boundary() {
        let query = "é".repeat(QUERY_BYTES);
        let cut = cut_query(&query);
        assert!(cut.len() <= QUERY_BYTES && cut.len() >= QUERY_BYTES - 1);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
