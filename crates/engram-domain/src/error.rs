//! The semantic error every engram layer speaks.
//!
//! Stores map their driver errors onto these variants in one place (`error.rs` of each store
//! crate); the MCP layer maps them onto tool results or protocol errors in one place too.

/// What went wrong, in terms a caller can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A named thing (`kind` is "workspace", "node", "observation", "relation") does not exist.
    #[error("{kind} not found: {name}{}", did_you_mean_hint(.did_you_mean))]
    NotFound {
        /// What was looked for.
        kind: &'static str,
        /// Its name (or `node#ordinal` for an observation).
        name: String,
        /// For a node, up to three existing names close to `name`
        /// ([`crate::suggestions`]); empty otherwise.
        did_you_mean: Vec<String>,
    },
    /// Creating a named thing that must be unique, where one already exists.
    #[error("{kind} already exists: {name}")]
    AlreadyExists {
        /// What was created.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// An argument broke a limit or a rule; nothing was changed.
    #[error("invalid argument `{field}`: {reason}")]
    InvalidArgument {
        /// The argument's path, as a caller wrote it: `entities[3].name`.
        field: String,
        /// What is wrong and what the limit is.
        reason: String,
    },
    /// The request contradicts the current state (for example a rename onto an existing
    /// relation, or deleting a non-empty workspace without force); nothing was changed.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The backing service (database, embedder) cannot be reached; retrying later may work.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A concurrent write conflicted with this call's (a deadlock or a serialization failure
    /// the database resolved by rolling this call back): nothing was changed, and running the
    /// call again may succeed. Stores classify it from the driver's own error code and retry
    /// the transaction a few times before reporting it.
    #[error("unavailable: {0}")]
    Contended(String),
    /// A bug or an unexpected state of the backing service.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// An [`Error::InvalidArgument`] for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// An [`Error::NotFound`] for the node `name`.
    pub fn node_not_found(name: impl Into<String>) -> Self {
        Self::not_found("node", name.into())
    }

    /// An [`Error::NotFound`] of a `kind` named `name`, without suggestions.
    fn not_found(kind: &'static str, name: String) -> Self {
        Self::NotFound {
            kind,
            name,
            did_you_mean: Vec::new(),
        }
    }

    /// The [`Error::NotFound`] of observation `ordinal` of the node `node`: of the observation
    /// when the node exists, else of the node.
    pub fn observation_not_found(node: &str, ordinal: i64, node_exists: bool) -> Self {
        if !node_exists {
            return Self::node_not_found(node);
        }
        Self::not_found("observation", format!("{node}#{ordinal}"))
    }

    /// An [`Error::AlreadyExists`] for the workspace name `name`.
    pub fn workspace_taken(name: impl Into<String>) -> Self {
        Self::AlreadyExists {
            kind: "workspace",
            name: name.into(),
        }
    }

    /// The [`Error::Conflict`] of deleting a workspace that holds `nodes` nodes without force,
    /// naming the command that does it.
    pub fn workspace_not_empty(name: &str, nodes: i64) -> Self {
        Self::Conflict(format!(
            "workspace {name} holds {nodes} nodes; deleting it deletes them all, so it needs \
             force (engram workspace delete {name} --force)"
        ))
    }

    /// An [`Error::NotFound`] for the relation `relation`.
    pub fn relation_not_found(relation: &crate::RelationSpec) -> Self {
        Self::not_found("relation", relation.to_string())
    }

    /// The [`Error::Conflict`] of renaming `relation` onto `new_type` when that relation
    /// exists already.
    pub fn relation_taken(relation: &crate::RelationSpec, new_type: &str) -> Self {
        Self::Conflict(format!(
            "cannot rename {relation} to {new_type}: that relation already exists (delete one of \
             the two instead)"
        ))
    }

    /// The [`Error::Internal`] of a store whose schema is behind this build.
    pub fn schema_not_current() -> Self {
        Self::Internal("the database schema is not current: run `engram migrate`".into())
    }

    /// An [`Error::NotFound`] for the access token `id`.
    pub fn token_not_found(id: impl Into<String>) -> Self {
        Self::not_found("token", id.into())
    }

    /// An [`Error::NotFound`] for the workspace `name`.
    pub fn workspace_not_found(name: impl Into<String>) -> Self {
        Self::not_found("workspace", name.into())
    }

    /// The same error with an [`Error::InvalidArgument`]'s field placed under `parent`
    /// (`name` within `nodes[3]` becomes `nodes[3].name`); other errors unchanged.
    #[must_use]
    pub fn within(self, parent: &str) -> Self {
        match self {
            Self::InvalidArgument { field, reason } => Self::InvalidArgument {
                field: format!("{parent}.{field}"),
                reason,
            },
            other => other,
        }
    }

    /// Whether a model (or a user) can fix the call and try again: not found, invalid
    /// argument, already exists and conflict. The others are outages or bugs.
    pub fn is_caller_error(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. }
                | Self::AlreadyExists { .. }
                | Self::InvalidArgument { .. }
                | Self::Conflict(_)
        )
    }

    /// What a remote client is told: the whole message for what it can fix; for an outage
    /// or a bug only what happened, since their messages name the database's host, port and
    /// name, which are the operator's (the server logs the whole error where it answers).
    pub fn for_clients(&self) -> String {
        match self {
            Self::Unavailable(_) => {
                "the memory store is unavailable right now; try again shortly (the server's \
                 log says why)"
                    .into()
            }
            Self::Internal(_) => "an internal error; the server's log says what".into(),
            _ => self.to_string(),
        }
    }
}

/// The end of a not-found message: ` (did you mean "A" or "B"?)`, or nothing.
fn did_you_mean_hint(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

/// `Result` with engram's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
