//! No import cycle of three files or more in any crate (ARCHITECTURE.md, "Layers"): two files
//! may name each other (an area module and `tool.rs`, whose `MemoryStore` joins the areas'
//! traits), but a longer cycle means a layer reaches back up through another. A file's imports
//! are every `crate::…` and `super::…` path in its code (comments, strings and its
//! `#[cfg(test)] mod tests` left out), the names a `use crate::{…}` lists, and the submodules it
//! re-exports; each resolves to the longest module path that is a file. Test-only modules
//! (`testsuite/`) are left out.

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

    /// A crate's source files (from `git ls-files`) by module path (`search::tools`; `""` for
    /// the crate root), with their code.
    fn crate_modules(src: &str, listed: &[String]) -> BTreeMap<String, String> {
        let root = crate::workspace_root();
        (listed.iter())
            .filter_map(|path| path.strip_prefix(&format!("{src}/")).map(|rel| (path, rel)))
            .filter(|(_, rel)| rel.ends_with(".rs") && !rel.starts_with("testsuite/"))
            .filter(|(_, rel)| !rel.starts_with("bin/") && !rel.ends_with("/tests.rs"))
            .map(|(path, rel)| {
                let module = rel.trim_end_matches(".rs").trim_end_matches("/mod");
                let module = match module {
                    "lib" | "main" | "mod" => String::new(),
                    other => other.replace('/', "::"),
                };
                let text = std::fs::read_to_string(root.join(path)).unwrap_or_default();
                (module, code(&text))
            })
            .collect()
    }

    /// `text` without its `#[cfg(test)] mod tests`, comments and string contents.
    fn code(text: &str) -> String {
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '/' if chars.peek() == Some(&'/') => {
                    for c in chars.by_ref() {
                        if c == '\n' {
                            out.push('\n');
                            break;
                        }
                    }
                }
                '"' => {
                    out.push('"');
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => {
                                chars.next();
                            }
                            '"' => break,
                            _ => {}
                        }
                    }
                    out.push('"');
                }
                other => out.push(other),
            }
        }
        out
    }

    /// The run of `a::b::c` path segments at the start of `text`.
    fn path_at(text: &str) -> String {
        let end = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(text.len());
        text[..end].trim_end_matches(':').to_owned()
    }

    /// The module paths `code` (the file of `module`) names.
    fn references(module: &str, code: &str, modules: &BTreeMap<String, String>) -> Vec<String> {
        let parent = module.rsplit_once("::").map_or("", |(parent, _)| parent);
        let mut paths = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let before = code[..at].chars().next_back();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                paths.push(path_at(&code[at + 7..]));
            }
        }
        for (at, _) in code.match_indices("super::") {
            let before = code[..at].chars().next_back();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                let path = path_at(&code[at + 7..]);
                paths.push(
                    [parent, &path]
                        .join("::")
                        .trim_start_matches(':')
                        .to_owned(),
                );
            }
        }
        for (at, _) in code.match_indices("use crate::{") {
            let group = &code[at + 12..];
            let group = &group[..group.find("};").unwrap_or(group.len())];
            for item in group.split([',', '{']) {
                paths.push(path_at(item.trim()));
            }
        }
        for (at, _) in code.match_indices("use ") {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let child = path_at(code[at + 4..].trim_start_matches("self::"));
            let first = child.split("::").next().unwrap_or_default();
            let child = [module, first]
                .join("::")
                .trim_start_matches(':')
                .to_owned();
            if modules.contains_key(&child) {
                paths.push(child);
            }
        }
        let mut found: Vec<String> = (paths.iter())
            .filter_map(|path| {
                let parts: Vec<&str> = path.split("::").collect();
                (1..=parts.len())
                    .rev()
                    .map(|n| parts[..n].join("::"))
                    .find(|candidate| modules.contains_key(candidate))
            })
            .filter(|target| !target.is_empty() && target != module)
            .collect();
        found.sort();
        found.dedup();
        found
    }

    /// The simple cycles of three files or more, one per set of files, each as its files in
    /// order: for each import `u → v`, the shortest way back from `v` to `u` that does not use
    /// `v → u` alone.
    fn long_cycles(imports: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
        let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        let mut cycles = Vec::new();
        for (u, targets) in imports {
            for v in targets {
                let mut previous: HashMap<&str, &str> = HashMap::new();
                let mut queue = VecDeque::from([v.as_str()]);
                let mut found = None;
                'search: while let Some(x) = queue.pop_front() {
                    for y in imports.get(x).into_iter().flatten() {
                        if y == u && x != v {
                            found = Some(x);
                            break 'search;
                        }
                        if y != u && y != v && !previous.contains_key(y.as_str()) {
                            previous.insert(y, x);
                            queue.push_back(y);
                        }
                    }
                }
                let Some(mut last) = found else { continue };
                let mut way = vec![last.to_owned()];
                while let Some(before) = previous.get(last) {
                    way.push((*before).to_owned());
                    last = before;
                }
                way.push(u.clone());
                way.reverse();
                if seen.insert(way.iter().cloned().collect()) {
                    cycles.push(way);
                }
            }
        }
        cycles
    }

    #[test]
    fn a_cycle_of_three_is_found_and_two_files_naming_each_other_are_not() {
        let imports: BTreeMap<String, Vec<String>> = [
            ("tool", vec!["nodes", "graph"]),
            ("nodes", vec!["tool", "limits"]),
            ("graph", vec!["tool"]),
            ("a", vec!["b"]),
            ("b", vec!["c"]),
            ("c", vec!["a"]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
        .collect();
        assert_eq!(long_cycles(&imports), [["a", "b", "c"]]);
        let modules: BTreeMap<String, String> = ["", "search", "search::tools", "nodes"]
            .map(|m| (m.to_owned(), String::new()))
            .into();
        let code = code(
            "use crate::{nodes::NodeStore, search::tools::Searcher};\n\
             // crate::gone::x\nlet s = \"crate::gone\"; super::tools::x(); pub use tools::*;",
        );
        assert_eq!(
            references("search", &code, &modules),
            ["nodes", "search::tools"]
        );
    }

    #[test]
    fn no_crate_has_an_import_cycle_of_three_files_or_more() {
        let listed = crate::tidy::tests::source_files();
        let mut sources: Vec<&str> = (listed.iter())
            .filter_map(|path| path.split_once("/src/").map(|(dir, _)| dir))
            .filter(|dir| dir.starts_with("crates/") || dir.starts_with("bins/") || *dir == "xtask")
            .collect();
        sources.sort_unstable();
        sources.dedup();
        assert!(sources.len() >= 6, "{sources:?}");
        let mut found = Vec::new();
        for dir in sources {
            let modules = crate_modules(&format!("{dir}/src"), &listed);
            let imports: BTreeMap<String, Vec<String>> = (modules.iter())
                .map(|(module, code)| (module.clone(), references(module, code, &modules)))
                .collect();
            for cycle in long_cycles(&imports) {
                found.push(format!("{dir}: {}", cycle.join(" → ")));
            }
        }
        assert!(
            found.is_empty(),
            "import cycles of three files or more: {found:#?}"
        );
    }
}
