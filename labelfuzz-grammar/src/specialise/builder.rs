//! What both rewritings are built from: a pattern's fragments, flattened, and the builder that
//! names each (nonterminal, constraint) pair once and prunes what has no finite expansion.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::grammar::{Grammar, GrammarError, Item, Rule, SymbolId, Token};
use crate::pattern::{GrammarPattern, PatternTree};

/// A fragment of a pattern, flattened: its nonterminal, rule and parts.
#[derive(Clone, Debug)]
pub(super) struct Fragment {
    pub(super) symbol: SymbolId,
    pub(super) rule: usize,
    /// Per token of the rule: the fragment the child must match, or `None` (text, or a hole:
    /// anything matches).
    pub(super) parts: Vec<Option<usize>>,
}

/// The fragments of some patterns, with the roots of the patterns.
pub(super) struct Fragments {
    pub(super) all: Vec<Fragment>,
    /// (root fragment, may occur anywhere) per pattern.
    pub(super) roots: Vec<(usize, bool)>,
}

impl Fragments {
    pub(super) fn of(grammar: &Grammar, patterns: &[GrammarPattern]) -> Result<Self, GrammarError> {
        let mut fragments = Fragments {
            all: Vec::new(),
            roots: Vec::new(),
        };
        for pattern in patterns {
            let root = fragments.add(grammar, &pattern.tree)?.ok_or_else(|| {
                GrammarError::Shape(format!(
                    "the pattern `{pattern}` is one hole: it matches every input of its nonterminal"
                ))
            })?;
            fragments.roots.push((root, pattern.anywhere));
        }
        Ok(fragments)
    }

    /// Adds the fragment of `tree`; `None` for a hole or text (nothing to match).
    pub(super) fn add(
        &mut self,
        grammar: &Grammar,
        tree: &PatternTree,
    ) -> Result<Option<usize>, GrammarError> {
        let PatternTree::Node {
            symbol,
            rule,
            children,
        } = tree
        else {
            return Ok(None);
        };
        let unknown = || {
            GrammarError::Shape(format!("the pattern uses `{symbol}`, which the grammar does not define, or a rule it does not have"))
        };
        let id = grammar.symbol(symbol).ok_or_else(unknown)?;
        let tokens = &grammar.rules(id).get(*rule).ok_or_else(unknown)?.tokens;
        if tokens.len() != children.len() {
            return Err(unknown());
        }
        let mut parts = Vec::new();
        for (token, child) in tokens.iter().zip(children) {
            // A hooked token's output is the hook's: the pattern cannot constrain it.
            let part = match (&token.item, &token.hook) {
                (Item::Symbol(_), None) => self.add(grammar, child)?,
                _ => None,
            };
            parts.push(part);
        }
        self.all.push(Fragment {
            symbol: id,
            rule: *rule,
            parts,
        });
        Ok(Some(self.all.len() - 1))
    }
}

/// What a new nonterminal stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Kind {
    /// The original, unconstrained.
    Original,
    /// No match of these fragments at the root (nor of an anywhere-pattern below).
    Avoiding(BTreeSet<usize>),
    /// Contains a match of the pattern somewhere.
    Containing,
    /// Matches this fragment at the root.
    Being(usize),
}

/// Builds a grammar from (nonterminal, kind) pairs reached from `<start>`'s pair.
pub(super) struct Builder<'g> {
    pub(super) grammar: &'g Grammar,
    ids: HashMap<(SymbolId, Kind), SymbolId>,
    names: Vec<String>,
    rules: Vec<Vec<Rule>>,
    queue: VecDeque<(SymbolId, Kind)>,
}

impl<'g> Builder<'g> {
    pub(super) fn new(grammar: &'g Grammar) -> Self {
        Builder {
            grammar,
            ids: HashMap::new(),
            names: Vec::new(),
            rules: Vec::new(),
            queue: VecDeque::new(),
        }
    }

    pub(super) fn id(&mut self, symbol: SymbolId, kind: Kind) -> SymbolId {
        if let Some(&id) = self.ids.get(&(symbol, kind.clone())) {
            return id;
        }
        let base = self.grammar.name(symbol);
        let name = match &kind {
            Kind::Original => base.to_string(),
            Kind::Avoiding(set) if set.is_empty() => {
                format!("{}:avoid>", base.trim_end_matches('>'))
            }
            Kind::Avoiding(set) => format!(
                "{}:avoid{}>",
                base.trim_end_matches('>'),
                set.iter().map(|f| format!("-{f}")).collect::<String>()
            ),
            Kind::Containing => format!("{}:only>", base.trim_end_matches('>')),
            Kind::Being(f) => format!("{}:is-{f}>", base.trim_end_matches('>')),
        };
        let id = self.names.len();
        self.names.push(name);
        self.rules.push(Vec::new());
        self.ids.insert((symbol, kind.clone()), id);
        self.queue.push_back((symbol, kind));
        id
    }

    /// A copy of `rule` whose nonterminal tokens become `child(position, symbol)`.
    pub(super) fn rewrite(
        &mut self,
        rule: &Rule,
        child: &mut dyn FnMut(&mut Self, usize, SymbolId) -> SymbolId,
    ) -> Rule {
        with_symbols(rule, &mut |position, symbol| child(self, position, symbol))
    }

    /// Every pair reached from `start`, with its rules, as a grammar (unproductive
    /// nonterminals removed).
    pub(super) fn finish(
        mut self,
        start: (SymbolId, Kind),
        expand: &mut dyn FnMut(&mut Self, SymbolId, &Kind) -> Vec<Rule>,
    ) -> Result<Grammar, GrammarError> {
        let start = self.id(start.0, start.1);
        while let Some((symbol, kind)) = self.queue.pop_front() {
            let id = self.ids[&(symbol, kind.clone())];
            let rules = expand(&mut self, symbol, &kind);
            self.rules[id] = rules;
        }
        prune(self.names, self.rules, start)
    }
}

/// A copy of `rule` (cost to be computed) whose nonterminal tokens become
/// `symbol(position, nonterminal)`.
pub(super) fn with_symbols(
    rule: &Rule,
    symbol: &mut dyn FnMut(usize, SymbolId) -> SymbolId,
) -> Rule {
    let tokens = rule
        .tokens
        .iter()
        .enumerate()
        .map(|(position, token)| Token {
            item: match token.item {
                Item::Symbol(id) => Item::Symbol(symbol(position, id)),
                Item::Text(ref text) => Item::Text(text.clone()),
            },
            hook: token.hook.clone(),
        })
        .collect();
    Rule { tokens, cost: 0 }
}

/// Removes nonterminals with no finite expansion (and the rules using them), then the
/// unreachable ones; computes costs.
pub(super) fn prune(
    names: Vec<String>,
    rules: Vec<Vec<Rule>>,
    start: SymbolId,
) -> Result<Grammar, GrammarError> {
    // A rule is productive when all its nonterminals are.
    let all_productive = |rule: &Rule, productive: &[bool]| {
        rule.tokens.iter().all(|t| match t.item {
            Item::Symbol(s) => productive[s],
            Item::Text(_) => true,
        })
    };
    let mut productive = vec![false; names.len()];
    loop {
        let mut changed = false;
        for (symbol, alternatives) in rules.iter().enumerate() {
            if !productive[symbol]
                && alternatives
                    .iter()
                    .any(|rule| all_productive(rule, &productive))
            {
                productive[symbol] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !productive[start] {
        return Err(GrammarError::Shape(
            "no input of the grammar is left: the pattern matches every one (or, for --only, none)"
                .into(),
        ));
    }
    // Keep productive rules; then renumber what `<start>` reaches.
    let keep = |rule: &Rule| all_productive(rule, &productive);
    let mut order = vec![start];
    let mut index: HashMap<SymbolId, SymbolId> = HashMap::from([(start, 0)]);
    let mut at = 0;
    while at < order.len() {
        let symbol = order[at];
        at += 1;
        for rule in rules[symbol].iter().filter(|r| keep(r)) {
            for token in &rule.tokens {
                if let Item::Symbol(s) = token.item {
                    if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(s) {
                        slot.insert(order.len());
                        order.push(s);
                    }
                }
            }
        }
    }
    let new_rules: Vec<Vec<Rule>> = order
        .iter()
        .map(|&symbol| {
            rules[symbol]
                .iter()
                .filter(|r| keep(r))
                .map(|rule| with_symbols(rule, &mut |_, s| index[&s]))
                .collect()
        })
        .collect();
    let mut new_names: Vec<String> = order.iter().map(|&s| names[s].clone()).collect();
    new_names[0] = "<start>".into();
    Grammar::from_rules(new_names, new_rules)
}
