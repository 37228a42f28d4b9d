//! Which tools a server offers (`engram serve --tools`): by default every tool but groups
//! `graph` and `reflections` (what agents rarely need, kept out of a model's context unless
//! asked for), or
//! `all`, or a subset named by tools and groups. A tool left out is neither listed nor
//! callable. Independently, a read-only session is offered only the tools that change nothing.

use std::collections::BTreeSet;
use std::str::FromStr;

/// The reference memory server's nine tools (`@modelcontextprotocol/server-memory`), by
/// engram's names, and `search_observations`: group `core`.
pub const CORE: &[&str] = &[
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
    "search_observations",
];

/// The graph vocabulary's tools, which agents rarely need: group `graph`, offered with
/// `--tools all` or `--tools default,graph` (issue 63: the default list stays within 15,000
/// characters of what a model reads).
pub const GRAPH: &[&str] = &[
    "find_all_paths",
    "get_graph_vocabulary",
    "describe_node",
    "get_subgraph",
    "get_relations",
];

/// Reflections, prose kept apart from the facts: group `reflections`, offered with `--tools all`
/// or `--tools default,reflections`.
pub const REFLECTIONS: &[&str] = &["add_reflection", "search_reflections"];

/// The named groups (beside `default`, `all` and `read`).
const GROUPS: [(&str, &[&str]); 3] = [
    ("core", CORE),
    ("graph", GRAPH),
    ("reflections", REFLECTIONS),
];

/// The tools a server offers: `default` (every tool but [`GRAPH`] and [`REFLECTIONS`]), `all`,
/// or the union of the named tools and groups (`default`; `core`, [`CORE`]; `graph`, [`GRAPH`];
/// `reflections`, [`REFLECTIONS`]; `read`, every tool that changes nothing), such as
/// `core,get_stats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSet {
    /// `None`: every tool.
    names: Option<BTreeSet<String>>,
    /// Whether group `read` was named.
    read: bool,
}

impl Default for ToolSet {
    /// Every tool but [`GRAPH`] and [`REFLECTIONS`].
    fn default() -> Self {
        let names = (crate::EngramServer::tool_names().into_iter())
            .filter(|name| !GRAPH.contains(&name.as_str()) && !REFLECTIONS.contains(&name.as_str()))
            .collect();
        Self {
            names: Some(names),
            read: false,
        }
    }
}

impl ToolSet {
    /// Every tool.
    pub fn all() -> Self {
        Self {
            names: None,
            read: false,
        }
    }

    /// Whether `tool` (annotated read-only or not) is offered.
    pub fn offers(&self, tool: &str, read_only: bool) -> bool {
        match &self.names {
            None => true,
            Some(names) => names.contains(tool) || (self.read && read_only),
        }
    }
}

/// A name in `--tools` that is neither a tool nor a group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown tool or group {0:?}: use `default`, `all`, `core`, `graph`, `reflections`, `read` or tool names such as \
     `search_nodes` (`engram serve --help` lists them), separated by commas"
)]
pub struct UnknownTool(pub String);

impl FromStr for ToolSet {
    type Err = UnknownTool;

    /// Parses `all`, or names and groups (`default`, `core`, `graph`, `reflections`, `read`) separated by
    /// commas (spaces ignored).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let known = crate::EngramServer::tool_names();
        let mut set = Self {
            names: Some(BTreeSet::new()),
            read: false,
        };
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => return Ok(Self::all()),
                group if let Some((_, tools)) = GROUPS.iter().find(|(g, _)| *g == group) => set
                    .names
                    .iter_mut()
                    .for_each(|n| n.extend(tools.iter().map(|c| c.to_string()))),
                "default" => {
                    let default = Self::default().names.unwrap_or_default();
                    set.names.iter_mut().for_each(|n| n.extend(default.clone()));
                }
                "read" => set.read = true,
                tool if known.iter().any(|k| k == tool) => {
                    set.names.iter_mut().for_each(|n| {
                        n.insert(tool.to_string());
                    });
                }
                other => return Err(UnknownTool(other.to_string())),
            }
        }
        if set.names.as_ref().is_some_and(BTreeSet::is_empty) && !set.read {
            return Err(UnknownTool(text.to_string()));
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_names_combine() {
        let core: ToolSet = "core, get_stats".parse().unwrap();
        assert!(core.offers("search_nodes", true));
        assert!(core.offers("create_entities", false));
        assert!(core.offers("get_stats", true));
        assert!(!core.offers("get_neighborhood", true));
        let read: ToolSet = "read".parse().unwrap();
        assert!(read.offers("get_neighborhood", true));
        assert!(!read.offers("create_entities", false));
        let all: ToolSet = "all".parse().unwrap();
        assert!(all.offers("set_tags", false));
        assert!(all.offers("find_all_paths", true));
        let default = ToolSet::default();
        assert!(default.offers("set_tags", false));
        assert!(!default.offers("find_all_paths", true));
        assert_eq!("default".parse::<ToolSet>().unwrap(), default);
        assert!(!default.offers("add_reflection", false));
        let both: ToolSet = "default, graph".parse().unwrap();
        assert!(both.offers("find_all_paths", true) && both.offers("search_nodes", true));
        let reflections: ToolSet = "default,reflections".parse().unwrap();
        assert!(reflections.offers("search_reflections", true));
        assert!(!reflections.offers("find_all_paths", true));
    }

    #[test]
    fn every_core_tool_exists_and_unknown_names_are_refused() {
        let known = crate::EngramServer::tool_names();
        for tool in GROUPS.iter().flat_map(|(_, tools)| tools.iter()) {
            assert!(known.iter().any(|k| k == tool), "{tool}");
        }
        let error = "core,serch_nodes".parse::<ToolSet>().unwrap_err();
        assert!(error.to_string().contains("\"serch_nodes\""), "{error}");
        assert!(" , ".parse::<ToolSet>().is_err());
    }
}
