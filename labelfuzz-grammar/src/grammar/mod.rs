//! Grammar inputs: context-free grammars read from JSON, with the expansion cost of every rule,
//! rendered by a [`Generator`] that reads its decisions from a choice sequence.
//!
//! The grammar format is a JSON object from nonterminal to alternatives:
//!
//! ```json
//! {
//!   "<start>":  [["<assign>"], ["<assign>", {"text": ";\n", "hook": "sync"}, "<start>"]],
//!   "<assign>": [[{"symbol": "<var>", "hook": "define"}, " = ", "<expr>"]],
//!   "<expr>":   [["<expr>", " + ", "<expr>"], ["(", "<expr>", ")"], ["<var>"], ["<digit>"]],
//!   "<digit>":  [{"chars": "0-9"}],
//!   "<var>":    [{"chars": "a-z"}]
//! }
//! ```
//!
//! - A nonterminal is a string `<name>` (no whitespace) and must be defined; `<start>` is where
//!   generation begins.
//! - An alternative is a list of tokens. A token is a string (a nonterminal if it is defined
//!   as one or looks like `<name>`, text otherwise), `{"text": "..."}` for text that looks like a
//!   nonterminal, or `{"symbol": "<name>"}`; either object may name a `"hook"`, which the
//!   generator's [`Hooks`] receive (the context-sensitive part, written in Rust).
//! - `{"chars": "a-z0-9_"}` in place of an alternative stands for one single-character
//!   alternative per character of the class (ranges `x-y`, a literal `-` first or last).
//!
//! The cost of a rule is one more than the largest cost of the nonterminals in it; a
//! nonterminal's cost is that of its cheapest rule (as in the seed's `LimitFuzzer`). Every
//! nonterminal needs a finite cost, i.e. some finite expansion. Alternatives are kept cheapest
//! first, so choice 0 is always a cheapest rule.

pub mod choices;
pub mod generate;
pub mod hooks;
pub mod inputs;
mod json;
pub mod parse;
pub mod reduce;

pub use choices::{ChoiceSequence, RandomChoices};
pub use generate::{DerivationNode, DerivationPart, Generator, Hooks, NoHooks};
pub use inputs::{choice_bytes, GrammarInputs, HooksFactory};
pub use parse::{parse, ParseError};
pub use reduce::{ddmin, reduce, Derivation, Reduction};

use std::fmt;

/// Index of a nonterminal in its [`Grammar`].
pub type SymbolId = usize;

/// What a token produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// These bytes.
    Text(Vec<u8>),
    /// An expansion of this nonterminal.
    Symbol(SymbolId),
}

/// One element of a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it produces.
    pub item: Item,
    /// The hook that sees it being produced, if any.
    pub hook: Option<String>,
}

/// One alternative of a nonterminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its tokens, in order.
    pub tokens: Vec<Token>,
    /// Its expansion cost (one more than its costliest nonterminal).
    pub cost: u32,
}

/// A context-free grammar with expansion costs.
#[derive(Clone, Debug)]
pub struct Grammar {
    names: Vec<String>,
    rules: Vec<Vec<Rule>>,
    costs: Vec<u32>,
    start: SymbolId,
}

/// Why a grammar file was refused; each names the rule at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrammarError {
    /// Not valid JSON.
    Json(String),
    /// The JSON is not an object from nonterminals to lists of alternatives.
    Shape(String),
    /// `<start>` is not defined.
    NoStart,
    /// A nonterminal used in a rule is not defined.
    Undefined {
        /// The missing nonterminal.
        symbol: String,
        /// The nonterminal whose rule uses it.
        used_in: String,
    },
    /// A nonterminal has no finite expansion (every rule recurses forever).
    Infinite(String),
    /// A hook named in the grammar is not provided by the program.
    UnknownHook {
        /// The hook's name.
        hook: String,
        /// The nonterminal whose rule names it.
        used_in: String,
    },
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(e) => write!(f, "grammar is not valid JSON: {e}"),
            Self::Shape(e) => write!(f, "grammar: {e}"),
            Self::NoStart => write!(f, "grammar defines no `<start>` nonterminal"),
            Self::Undefined { symbol, used_in } => {
                write!(
                    f,
                    "grammar: `{used_in}` uses `{symbol}`, which is not defined"
                )
            }
            Self::Infinite(symbol) => write!(
                f,
                "grammar: `{symbol}` has no finite expansion (every alternative recurses forever)"
            ),
            Self::UnknownHook { hook, used_in } => {
                write!(
                    f,
                    "grammar: `{used_in}` names hook `{hook}`, which the program does not provide"
                )
            }
        }
    }
}

impl std::error::Error for GrammarError {}

impl Grammar {
    /// The grammar of these nonterminals (the first is the start) and their rules, with the
    /// costs worked out: how a specialised grammar is put together.
    pub(crate) fn from_rules(
        names: Vec<String>,
        rules: Vec<Vec<Rule>>,
    ) -> Result<Grammar, GrammarError> {
        let mut grammar = Grammar {
            costs: vec![u32::MAX; names.len()],
            names,
            rules,
            start: 0,
        };
        grammar.compute_costs()?;
        Ok(grammar)
    }

    /// Costs by fixpoint: a rule is finite once all its nonterminals are; at most one round per
    /// nonterminal. Then sorts every nonterminal's rules cheapest first (stable).
    fn compute_costs(&mut self) -> Result<(), GrammarError> {
        let rule_cost = |costs: &[u32], rule: &Rule| -> Option<u32> {
            let mut worst = 0;
            for token in &rule.tokens {
                if let Item::Symbol(id) = token.item {
                    worst = worst.max(*costs.get(id)?);
                }
            }
            (worst != u32::MAX).then(|| worst + 1)
        };
        loop {
            let mut changed = false;
            for symbol in 0..self.rules.len() {
                let best = self.rules[symbol]
                    .iter()
                    .filter_map(|rule| rule_cost(&self.costs, rule))
                    .min()
                    .unwrap_or(u32::MAX);
                if best < self.costs[symbol] {
                    self.costs[symbol] = best;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if let Some(symbol) = self.costs.iter().position(|&c| c == u32::MAX) {
            return Err(GrammarError::Infinite(self.names[symbol].clone()));
        }
        for symbol in 0..self.rules.len() {
            let mut rules = std::mem::take(&mut self.rules[symbol]);
            for rule in &mut rules {
                rule.cost = rule_cost(&self.costs, rule).unwrap_or(u32::MAX);
            }
            rules.sort_by_key(|rule| rule.cost);
            self.rules[symbol] = rules;
        }
        Ok(())
    }

    /// The start nonterminal.
    #[must_use]
    pub fn start(&self) -> SymbolId {
        self.start
    }

    /// How many nonterminals the grammar has (their ids are `0..count`).
    #[must_use]
    pub fn symbol_count(&self) -> usize {
        self.names.len()
    }

    /// The name of a nonterminal.
    #[must_use]
    pub fn name(&self, symbol: SymbolId) -> &str {
        &self.names[symbol]
    }

    /// The nonterminal called `name`, if defined.
    #[must_use]
    pub fn symbol(&self, name: &str) -> Option<SymbolId> {
        self.names.iter().position(|n| n == name)
    }

    /// A nonterminal's rules, cheapest first.
    #[must_use]
    pub fn rules(&self, symbol: SymbolId) -> &[Rule] {
        &self.rules[symbol]
    }

    /// A nonterminal's cost: that of its cheapest rule.
    #[must_use]
    pub fn cost(&self, symbol: SymbolId) -> u32 {
        self.costs[symbol]
    }

    /// Renders `<start>` from a choice sequence stored one choice per byte (how grammar inputs
    /// travel through the byte-oriented engine: expanding, shrinking and shortlex order on the
    /// bytes are the same on the choices), without hooks.
    #[must_use]
    pub fn render_choice_bytes(&self, max_depth: usize, bytes: &[u8]) -> Vec<u8> {
        Generator::new(self, max_depth).render(&mut ChoiceSequence::from_bytes(bytes), &mut NoHooks)
    }

    /// Whether any rule names a hook.
    #[must_use]
    pub fn has_hooks(&self) -> bool {
        self.rules
            .iter()
            .flatten()
            .flat_map(|r| &r.tokens)
            .any(|t| t.hook.is_some())
    }

    /// Checks that every hook the grammar names is among `provided`.
    ///
    /// # Errors
    /// [`GrammarError::UnknownHook`] for the first hook that is not.
    pub fn check_hooks(&self, provided: &[&str]) -> Result<(), GrammarError> {
        self.check_hooks_with(&|hook| provided.contains(&hook))
    }

    /// Checks that every hook the grammar names is one `provided` accepts.
    ///
    /// # Errors
    /// [`GrammarError::UnknownHook`] for the first hook that is not.
    pub fn check_hooks_with(&self, provided: &dyn Fn(&str) -> bool) -> Result<(), GrammarError> {
        for (symbol, rules) in self.rules.iter().enumerate() {
            for token in rules.iter().flat_map(|r| &r.tokens) {
                if let Some(hook) = &token.hook {
                    if !provided(hook) {
                        return Err(GrammarError::UnknownHook {
                            hook: hook.clone(),
                            used_in: self.names[symbol].clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's assignment grammar, context-free part.
    pub(crate) const ASSIGNMENTS: &str = r#"{
        "<start>": [["<assignments>"]],
        "<assignments>": [["<assign>", {"text": ";\n", "hook": "sync"}],
                          ["<assign>", {"text": ";\n", "hook": "sync"}, "<assignments>"]],
        "<assign>": [[{"symbol": "<var>", "hook": "define"}, " = ", "<expr>"]],
        "<expr>": [["<expr>", " + ", "<expr>"], ["<expr>", " - ", "<expr>"],
                   ["(", "<expr>", ")"], [{"symbol": "<var>", "hook": "use"}], ["<digit>"]],
        "<digit>": [{"chars": "01"}],
        "<var>": [{"chars": "a-z"}]
    }"#;

    #[test]
    fn costs_follow_the_cheapest_rule_and_sort_alternatives() {
        let g = Grammar::from_json(ASSIGNMENTS).unwrap();
        let cost = |name: &str| g.cost(g.symbol(name).unwrap());
        assert_eq!(cost("<var>"), 1);
        assert_eq!(cost("<digit>"), 1);
        assert_eq!(cost("<expr>"), 2);
        assert_eq!(cost("<assign>"), 3);
        assert_eq!(cost("<assignments>"), 4);
        assert_eq!(cost("<start>"), 5);
        let expr = g.rules(g.symbol("<expr>").unwrap());
        let costs: Vec<u32> = expr.iter().map(|r| r.cost).collect();
        assert_eq!(costs, vec![2, 2, 3, 3, 3], "cheapest first");
        assert_eq!(g.rules(g.symbol("<var>").unwrap()).len(), 26);
    }

    #[test]
    fn bad_grammars_are_refused_naming_the_rule() {
        let undefined = Grammar::from_json(r#"{"<start>": [["<a>"]], "<a>": [["<b>", "x"]]}"#);
        assert_eq!(
            undefined.unwrap_err(),
            GrammarError::Undefined {
                symbol: "<b>".into(),
                used_in: "<a>".into()
            }
        );
        let infinite = Grammar::from_json(r#"{"<start>": [["<a>"]], "<a>": [["(", "<a>", ")"]]}"#);
        assert_eq!(infinite.unwrap_err(), GrammarError::Infinite("<a>".into()));
        assert!(matches!(
            Grammar::from_json("{\"<start>\": [[\"x\"]"),
            Err(GrammarError::Json(_))
        ));
        assert_eq!(
            Grammar::from_json(r#"{"<a>": [["x"]]}"#).unwrap_err(),
            GrammarError::NoStart
        );
        let message = Grammar::from_json(r#"{"<start>": []}"#)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("`<start>` has no alternatives"),
            "{message}"
        );
        let message = Grammar::from_json(r#"{"<start>": [{"chars": "z-a"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(message.contains("backwards"), "{message}");
    }

    #[test]
    fn hooks_must_be_provided() {
        let g = Grammar::from_json(ASSIGNMENTS).unwrap();
        assert!(g.check_hooks(&["sync", "define", "use"]).is_ok());
        assert_eq!(
            g.check_hooks(&["sync", "define"]).unwrap_err(),
            GrammarError::UnknownHook {
                hook: "use".into(),
                used_in: "<expr>".into()
            }
        );
    }

    #[test]
    fn text_that_looks_like_a_nonterminal_can_be_written_as_text() {
        let g = Grammar::from_json(r#"{"<start>": [[{"text": "<b>"}, "<"]]}"#).unwrap();
        let rule = &g.rules(g.start())[0];
        assert_eq!(rule.tokens[0].item, Item::Text(b"<b>".to_vec()));
        assert_eq!(rule.tokens[1].item, Item::Text(b"<".to_vec()));
    }
}
