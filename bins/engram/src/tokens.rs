//! `engram token …`: create, list and revoke the access tokens of the HTTP transports.

use anyhow::{Context, Result};
use engram_domain::Memory;
use engram_domain::auth::{Access, CreateToken, TokenInfo};

use crate::cli::TokenCommand;

/// Runs one `engram token` command.
pub async fn run(memory: &Memory, command: TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Create {
            workspace,
            read_only,
            expires,
            label,
        } => {
            let mut random = [0u8; 40];
            getrandom::fill(&mut random).context("drawing random bytes for the token")?;
            let now = chrono::Utc::now();
            let expires_at = match expires {
                Some(duration) => {
                    Some(now + chrono_duration(duration).context("--expires is too far away")?)
                }
                None => None,
            };
            let access = if read_only {
                Access::ReadOnly
            } else {
                Access::ReadWrite
            };
            let (info, token) = memory
                .create_token(
                    CreateToken::new(&workspace, access)
                        .label(label.clone())
                        .expires_at(expires_at),
                    &random,
                )
                .await?;
            eprintln!(
                "created {} token {} for workspace {}{}; it is shown once, keep it secret:",
                if read_only {
                    "a read-only"
                } else {
                    "a read-write"
                },
                info.id,
                info.workspace,
                info.expires_at
                    .map(|at| format!(", valid until {}", at.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default(),
            );
            outln!("{token}");
        }
        TokenCommand::List { workspace, json } => {
            let tokens = memory.tokens(workspace.as_deref()).await?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&tokens)?);
            } else if tokens.is_empty() {
                outln!("no tokens: create one with `engram token create --workspace NAME`");
            } else {
                outln!(
                    "{:<17} {:<24} {:<11} {:<17} {:<24} label",
                    "id",
                    "workspace",
                    "access",
                    "created",
                    "state"
                );
                let now = chrono::Utc::now();
                for token in tokens {
                    let access = match token.access {
                        Access::ReadWrite => "read-write",
                        Access::ReadOnly => "read-only",
                    };
                    outln!(
                        "{:<17} {:<24} {:<11} {:<17} {:<24} {}",
                        token.id,
                        token.workspace,
                        access,
                        token.created_at.format("%Y-%m-%d %H:%M"),
                        state(&token, now),
                        token.label.unwrap_or_default(),
                    );
                }
            }
        }
        TokenCommand::Revoke { token } => {
            memory.revoke_token(&token).await?;
            outln!("revoked; every engram process on this database refuses it from now on");
        }
    }
    Ok(())
}

/// Whether a token still grants anything, as `token list` shows it: `revoked 2026-…`,
/// `expired 2026-…`, `valid until 2026-…` or `valid`.
fn state(token: &TokenInfo, now: chrono::DateTime<chrono::Utc>) -> String {
    let at = |time: chrono::DateTime<chrono::Utc>| time.format("%Y-%m-%d %H:%M").to_string();
    match (token.revoked_at, token.expires_at) {
        (Some(revoked), _) => format!("revoked {}", at(revoked)),
        (None, Some(expires)) if expires <= now => format!("expired {}", at(expires)),
        (None, Some(expires)) => format!("valid until {}", at(expires)),
        (None, None) => "valid".to_owned(),
    }
}

fn chrono_duration(duration: std::time::Duration) -> Option<chrono::TimeDelta> {
    chrono::TimeDelta::from_std(duration).ok()
}
