//! Secrets kept out of memory: every text a write stores (names, types, summaries, tags,
//! observations, relation types, imported records) is screened by [`crate::secrets`] and,
//! by the operator's [`SecretPolicy`], refused, redacted or let through.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::model::{NewNode, RelationSpec};
use crate::observations::ObservationAdditions;
use crate::secrets::SecretPolicy;
use crate::transfer::{NodeRecord, RelationRecord};

impl SecretPolicy {
    /// A content text (an observation, a summary) as the policy stores it: borrowed when
    /// unchanged, owned when redacted.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `field` and the credential's kind, under
    /// [`SecretPolicy::Refuse`]; or the content limit, which a redacted text is held to again.
    pub fn screen<'a>(self, field: &str, text: &'a str) -> Result<Cow<'a, str>> {
        self.screen_content(|| field.to_owned(), text)
    }

    /// [`SecretPolicy::screen`] with the field named only when needed; a redacted text is held
    /// to the content limit again (each marker is longer than some secrets).
    fn screen_content<'a>(self, field: impl Fn() -> String, text: &'a str) -> Result<Cow<'a, str>> {
        let screened = self.screen_named(&field, text)?;
        if let Cow::Owned(redacted) = &screened {
            crate::limits::content(&field(), redacted)?;
        }
        Ok(screened)
    }

    /// [`SecretPolicy::screen`] naming the field only when it refuses (most texts hold no
    /// secret, and a batch has thousands of fields).
    fn screen_named<'a>(
        self,
        field: impl FnOnce() -> String,
        text: &'a str,
    ) -> Result<Cow<'a, str>> {
        match self {
            Self::Allow => Ok(Cow::Borrowed(text)),
            Self::Redact => Ok(crate::secrets::redact(text)),
            Self::Refuse => match crate::secrets::first_secret(text) {
                None => Ok(Cow::Borrowed(text)),
                Some(found) => Err(Error::invalid(
                    field(),
                    format!(
                        "holds what looks like a credential ({}, bytes {}–{}); secrets are kept \
                         out of memory, which everyone with access to the workspace reads: \
                         store where it is kept (a vault entry, an environment variable's \
                         name) instead of its value",
                        found.kind.label(),
                        found.range.start,
                        found.range.end
                    ),
                )),
            },
        }
    }

    /// A name-like text (a node's name or type, a relation's type or endpoint) as stored:
    /// unchanged, or refused under [`SecretPolicy::Redact`] too. A redacted name would no
    /// longer name what the caller meant, could exceed the name limit, and two secrets would
    /// redact to the same node.
    pub(crate) fn screen_identity(self, field: impl FnOnce() -> String, text: &str) -> Result<()> {
        let policy = match self {
            Self::Redact => Self::Refuse,
            other => other,
        };
        policy.screen_named(field, text).map(drop)
    }

    /// Screens a content text (an observation, a summary) in place.
    pub(crate) fn screen_owned(self, field: impl Fn() -> String, text: &mut String) -> Result<()> {
        if let Cow::Owned(redacted) = self.screen_content(field, text)? {
            *text = redacted;
        }
        Ok(())
    }

    /// A stored name outside the graph (a workspace's name, a token's label, a perspective's
    /// template): refused, never redacted, when it holds a credential, unless the policy
    /// allows them. Names travel in headers, logs and metrics' labels.
    pub(crate) fn screen_name(self, field: &str, text: &str) -> Result<()> {
        self.screen_identity(|| field.to_owned(), text)
    }

    /// The relation type `new_type` of `rename_relation_type`: refused (never redacted) when
    /// it holds a credential.
    pub(crate) fn screen_relation_type(self, new_type: &str) -> Result<()> {
        self.screen_identity(|| "new_type".to_owned(), new_type)
    }

    /// Screens tags in place; redacted ones are held to the tag limits again (and repeats
    /// dropped).
    pub(crate) fn screen_tags(self, field: &str, tags: &mut Vec<String>) -> Result<()> {
        let mut changed = false;
        for (i, tag) in tags.iter_mut().enumerate() {
            if let Cow::Owned(redacted) = self.screen_named(|| format!("{field}[{i}]"), tag)? {
                *tag = redacted;
                changed = true;
            }
        }
        if changed {
            *tags = crate::limits::tags(field, tags)?;
        }
        Ok(())
    }

    /// Screens a `create_entities` batch in place.
    pub(crate) fn screen_nodes(self, entities: &mut [NewNode]) -> Result<()> {
        if self == Self::Allow {
            return Ok(());
        }
        for (i, entity) in entities.iter_mut().enumerate() {
            let field = |name: &str| format!("entities[{i}].{name}");
            let node = NodeTexts {
                name: &entity.name,
                entity_type: &entity.entity_type,
                summary: &mut entity.summary,
                tags: &mut entity.tags,
            };
            self.screen_node(&field, node)?;
            for (j, observation) in entity.observations.iter_mut().enumerate() {
                self.screen_owned(
                    || field(&format!("observations[{j}]")),
                    &mut observation.content,
                )?;
            }
        }
        Ok(())
    }

    /// Screens what a created or imported node stores besides its observations: its name
    /// and type (refused, never redacted), summary and tags; `field(part)` names each.
    fn screen_node(self, field: &dyn Fn(&str) -> String, node: NodeTexts<'_>) -> Result<()> {
        self.screen_identity(|| field("name"), node.name)?;
        self.screen_identity(|| field("entity_type"), node.entity_type)?;
        if let Some(summary) = node.summary {
            self.screen_owned(|| field("summary"), summary)?;
        }
        self.screen_tags(&field("tags"), node.tags)
    }

    /// An `add_observations` batch as stored: `None` when unchanged (the common case, no
    /// copy), else the redacted copy.
    ///
    /// # Errors
    /// As [`SecretPolicy::screen`], naming `observations[i].contents[j]`.
    pub(crate) fn screen_additions(
        self,
        additions: &[ObservationAdditions],
    ) -> Result<Option<Vec<ObservationAdditions>>> {
        let mut copy: Option<Vec<ObservationAdditions>> = None;
        for (i, addition) in additions.iter().enumerate() {
            for (j, content) in addition.contents.iter().enumerate() {
                let field = || format!("observations[{i}].contents[{j}]");
                if let Cow::Owned(redacted) = self.screen_content(field, &content.content)? {
                    copy.get_or_insert_with(|| additions.to_vec())[i].contents[j].content =
                        redacted;
                }
            }
        }
        Ok(copy)
    }

    /// Screens relations' types, which are refused (never redacted) when they hold a
    /// credential.
    pub(crate) fn screen_relations(self, relations: &[RelationSpec]) -> Result<()> {
        for (i, relation) in relations.iter().enumerate() {
            let field = || format!("relations[{i}].relation_type");
            self.screen_identity(field, &relation.relation_type)?;
        }
        Ok(())
    }

    /// Screens an import batch in place: every node's texts and every relation's endpoints
    /// and type (an import may create the nodes its relations name). `engram import` screens
    /// each line this way, to refuse the line rather than its batch.
    ///
    /// # Errors
    /// As [`SecretPolicy::screen`], naming `nodes[i].…` or `relations[i].…`.
    pub fn screen_import(
        self,
        nodes: &mut [NodeRecord],
        relations: &[RelationRecord],
    ) -> Result<()> {
        if self == Self::Allow {
            return Ok(());
        }
        for (i, record) in nodes.iter_mut().enumerate() {
            let field = |name: &str| format!("nodes[{i}].{name}");
            let node = NodeTexts {
                name: &record.name,
                entity_type: &record.entity_type,
                summary: &mut record.summary,
                tags: &mut record.tags,
            };
            self.screen_node(&field, node)?;
            // An alias is a name the node answers to: refused, never redacted.
            for (j, alias) in record.aliases.iter().enumerate() {
                self.screen_identity(|| field(&format!("aliases[{j}]")), alias)?;
            }
            for (j, observation) in record.observations.iter_mut().enumerate() {
                let content = || field(&format!("observations[{j}].content"));
                self.screen_owned(content, &mut observation.content)?;
                if let Some(author) = &observation.author {
                    self.screen_identity(|| field(&format!("observations[{j}].author")), author)?;
                }
            }
        }
        for (i, relation) in relations.iter().enumerate() {
            let field = |name: &str| format!("relations[{i}].{name}");
            self.screen_identity(|| field("from"), &relation.from)?;
            self.screen_identity(|| field("to"), &relation.to)?;
            self.screen_identity(|| field("relation_type"), &relation.relation_type)?;
        }
        Ok(())
    }
}

/// A node's texts other than its observations, as [`SecretPolicy::screen_node`] screens them.
struct NodeTexts<'a> {
    name: &'a str,
    entity_type: &'a str,
    summary: &'a mut Option<String>,
    tags: &'a mut Vec<String>,
}
