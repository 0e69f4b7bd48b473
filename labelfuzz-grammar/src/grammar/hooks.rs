//! Built-in hooks: the context-sensitive rules most input languages need, named in grammar files
//! so that C and command-line users get them without writing Rust.
//!
//! A hook is `KIND:NAMESPACE` on a token (`{"symbol": "<id>", "hook": "use:table"}`):
//!
//! - `define:NS`: the token's output becomes a name in the namespace `NS`;
//! - `fresh:NS`: the token outputs a name not yet in `NS` (`NS` and a number: `t0`, `t1`...)
//!   and defines it;
//! - `use:NS`: the token outputs one of the names defined in `NS` so far (a choice picks
//!   which); while `NS` is empty it expands as written;
//! - `repeat:NS`: the token outputs the name last defined or used in `NS` (as written while
//!   there is none);
//! - `scope:NS`: names defined in `NS` during the token's expansion are forgotten after it
//!   (block scoping).
//!
//! A namespace may be qualified by another one's current name: `col@table` is the namespace of
//! the columns of the table last defined or used, so `define:col@table` in a `CREATE TABLE`
//! and `use:col@table` after `use:table` pick columns that exist in that table.

use std::collections::HashMap;

use super::{ChoiceSequence, GrammarError, Hooks};

/// The hook kinds a grammar file may name.
pub const KINDS: [&str; 5] = ["define", "fresh", "use", "repeat", "scope"];

/// Whether `hook` is a built-in hook (`KIND:NAMESPACE`).
#[must_use]
pub fn is_builtin(hook: &str) -> bool {
    hook.split_once(':')
        .is_some_and(|(kind, namespace)| KINDS.contains(&kind) && !namespace.is_empty())
}

/// Checks that every hook `grammar` names is a built-in one.
///
/// # Errors
/// [`GrammarError::UnknownHook`] for the first that is not.
pub fn check_builtin(grammar: &super::Grammar) -> Result<(), GrammarError> {
    grammar.check_hooks_with(&is_builtin)
}

/// The state of the built-in hooks while one sentence is rendered.
#[derive(Clone, Debug, Default)]
pub struct BuiltinHooks {
    names: HashMap<String, Vec<Vec<u8>>>,
    last: HashMap<String, Vec<u8>>,
    scopes: Vec<(String, usize)>,
}

impl BuiltinHooks {
    /// Fresh hooks: no names defined.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The namespace `spec` stands for now (`col@table` → `col@t0`). Hooks run on every
    /// rendering, so an unqualified namespace is not copied.
    fn resolve<'s>(&self, spec: &'s str) -> std::borrow::Cow<'s, str> {
        match spec.split_once('@') {
            Some((inner, outer)) => {
                let current = self.last.get(outer).map_or(&[][..], Vec::as_slice);
                format!("{inner}@{}", String::from_utf8_lossy(current)).into()
            }
            None => spec.into(),
        }
    }

    /// The names defined in namespace `spec` (resolved) so far.
    #[must_use]
    pub fn names(&self, spec: &str) -> &[Vec<u8>] {
        self.names
            .get(self.resolve(spec).as_ref())
            .map_or(&[], Vec::as_slice)
    }

    fn base(spec: &str) -> &str {
        spec.split_once('@').map_or(spec, |(inner, _)| inner)
    }
}

impl Hooks for BuiltinHooks {
    fn pre(
        &mut self,
        hook: &str,
        _symbol: Option<&str>,
        choices: &mut ChoiceSequence<'_>,
    ) -> Option<Vec<u8>> {
        let (kind, spec) = hook.split_once(':')?;
        match kind {
            "use" => {
                let names = self.names(spec);
                if names.is_empty() {
                    return None;
                }
                let n = u32::try_from(names.len()).unwrap_or(u32::MAX);
                Some(names[choices.choose(n) as usize].clone())
            }
            "repeat" => self.last.get(Self::base(spec)).cloned(),
            "fresh" => {
                // The base and a number no name of the namespace has, even one from `define`.
                let names = self.names(spec);
                let base = Self::base(spec);
                (names.len()..)
                    .map(|k| format!("{base}{k}").into_bytes())
                    .find(|candidate| !names.contains(candidate))
            }
            "scope" => {
                let namespace = self.resolve(spec).into_owned();
                let depth = self.names.get(&namespace).map_or(0, Vec::len);
                self.scopes.push((namespace, depth));
                None
            }
            _ => None,
        }
    }

    fn post(&mut self, hook: &str, _symbol: Option<&str>, produced: &[u8]) {
        let Some((kind, spec)) = hook.split_once(':') else {
            return;
        };
        match kind {
            "define" | "fresh" => {
                let namespace = self.resolve(spec).into_owned();
                self.names
                    .entry(namespace)
                    .or_default()
                    .push(produced.to_vec());
                self.last
                    .insert(Self::base(spec).to_string(), produced.to_vec());
            }
            "use" | "repeat" => {
                self.last
                    .insert(Self::base(spec).to_string(), produced.to_vec());
            }
            "scope" => {
                if let Some((namespace, depth)) = self.scopes.pop() {
                    if let Some(names) = self.names.get_mut(&namespace) {
                        names.truncate(depth);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::{Grammar, GrammarInputs, RandomChoices};

    /// Tables with columns, then statements on them.
    const TABLES: &str = r#"{
        "<start>": [["<create>", "<more>", "<stmts>"]],
        "<more>": [[], ["<create>", "<more>"]],
        "<create>": [["CREATE TABLE ", {"symbol": "<name>", "hook": "fresh:t"}, "(", "<cols>", ");\n"]],
        "<cols>": [[{"symbol": "<name>", "hook": "define:c@t"}], [{"symbol": "<name>", "hook": "define:c@t"}, ", ", "<cols>"]],
        "<stmts>": [[], ["<stmt>", "<stmts>"]],
        "<stmt>": [["SELECT * FROM ", {"symbol": "<name>", "hook": "use:t"}, " WHERE ", {"symbol": "<name>", "hook": "use:c@t"}, ";\n"],
                   ["{", {"text": "", "hook": "scope:t"}, "}\n"]],
        "<name>": [["x"], ["y"], ["z"]]
    }"#;

    #[test]
    fn statements_use_tables_and_columns_that_exist() {
        let grammar = Grammar::from_json(TABLES).unwrap();
        check_builtin(&grammar).unwrap();
        let inputs = GrammarInputs::new(grammar, 10).with_hooks(|| Box::new(BuiltinHooks::new()));
        let mut selects = 0;
        for seed in 0..500 {
            let derived =
                inputs.random_expansion(inputs.grammar().start(), 0, RandomChoices::new(seed, 40));
            let text = String::from_utf8(derived.output).unwrap();
            let mut columns: HashMap<String, Vec<String>> = HashMap::new();
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("CREATE TABLE ") {
                    let (table, cols) = rest.split_once('(').unwrap();
                    assert!(!columns.contains_key(table), "fresh names are new: {text}");
                    let cols = cols.trim_end_matches(");").split(", ").map(String::from);
                    columns.insert(table.to_string(), cols.collect());
                } else if let Some(rest) = line.strip_prefix("SELECT * FROM ") {
                    let (table, column) = rest.trim_end_matches(';').split_once(" WHERE ").unwrap();
                    let known = columns
                        .get(table)
                        .unwrap_or_else(|| panic!("{table} in {text}"));
                    assert!(
                        known.iter().any(|c| c == column),
                        "{column} of {table} in {text}"
                    );
                    selects += 1;
                }
            }
        }
        assert!(selects > 100, "{selects}");
        // The same sentence again from its choices (what the fuzzer stores): the hooks replay.
        let derived =
            inputs.random_expansion(inputs.grammar().start(), 0, RandomChoices::new(3, 40));
        assert_eq!(inputs.derive(&derived.used).output, derived.output);
    }

    /// The SQL grammar's own tables (`u0`, `u1`...) are named by hooks only: every statement
    /// that names one comes after the statement that created it (or renamed a table to it).
    #[test]
    fn the_sql_grammar_names_only_tables_it_created() {
        let grammar =
            Grammar::from_json(include_str!("../../../fuzzers/sql/grammar.json")).unwrap();
        check_builtin(&grammar).unwrap();
        let inputs = GrammarInputs::new(grammar, 12).with_hooks(|| Box::new(BuiltinHooks::new()));
        let is_own_table = |word: &str| {
            word.strip_prefix('u')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        let mut uses = 0;
        for seed in 0..300 {
            let derived =
                inputs.random_expansion(inputs.grammar().start(), 0, RandomChoices::new(seed, 400));
            let text = String::from_utf8_lossy(&derived.output);
            let mut created: Vec<&str> = Vec::new();
            let words: Vec<&str> = text
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .filter(|w| !w.is_empty())
                .collect();
            for (i, word) in words.iter().enumerate() {
                if !is_own_table(word) {
                    continue;
                }
                let before = &words[i.saturating_sub(2)..i];
                if matches!(before, ["CREATE" | "TEMP", "TABLE"] | ["RENAME", "TO"]) {
                    created.push(word);
                } else {
                    assert!(
                        created.contains(word),
                        "{word} before its CREATE in:\n{text}"
                    );
                    uses += 1;
                }
            }
        }
        assert!(
            uses > 300,
            "only {uses} statements named the grammar's own tables"
        );
    }

    #[test]
    fn unknown_hook_kinds_are_refused() {
        let grammar =
            Grammar::from_json(r#"{"<start>": [[{"text": "a", "hook": "defne:x"}]]}"#).unwrap();
        let message = check_builtin(&grammar).unwrap_err().to_string();
        assert!(message.contains("defne:x"), "{message}");
        assert!(is_builtin("scope:x") && !is_builtin("use:") && !is_builtin("sync"));
    }
}
