//! Grammars specialised by failure patterns (the Evogram idea): `--avoid` rewrites a grammar so
//! that no input it produces matches a pattern, and `--only` so that every input does.
//!
//! A pattern is a derivation-tree fragment: concrete expansions (a nonterminal and its rule)
//! whose parts are text, holes (any expansion of a nonterminal) or smaller fragments. A tree
//! matches a fragment at its root when it uses the same rule and every child matches its part.
//!
//! - **Avoid.** Each new nonterminal is a pair: an original nonterminal and the set of
//!   fragments its tree must *not* match at its root. A pattern that may occur anywhere joins
//!   the set of every nonterminal it is rooted at. For a rule that a fragment of the set uses,
//!   some child must break that fragment: one new rule per way of picking, for every such
//!   fragment, a child to break (the child's set gains the child's fragment). Holes cannot be
//!   broken; a rule whose fragments cannot all be broken is dropped.
//! - **Only.** A nonterminal must *contain* a match, or *be* one (match a fragment at its root):
//!   it either expands the pattern's own rule with its parts (holes left free), or passes the
//!   obligation to one child that can reach the pattern's nonterminal.
//!
//! Nonterminals left with no finite expansion are removed, with the rules that use them; when
//! `<start>` is among them the pattern covers every input (avoid) or none (only), an error.
//! Equal-text constraints between named holes (`<var>#1`) are not expressible in a context-free
//! grammar: they are dropped, so `--avoid` avoids a little more than the pattern, and `--only`
//! may produce inputs where the named holes differ. A pattern's recursive layers that may
//! repeat or go ([`crate::pattern::Layer`]) are not used either: both modes take the pattern as
//! it was found (an anywhere-pattern already covers deeper nestings of its own top layer).

mod builder;

use std::collections::BTreeSet;

use crate::grammar::{Grammar, GrammarError, Item, SymbolId};
use crate::pattern::GrammarPattern;
use builder::{Builder, Fragment, Fragments, Kind};

/// Every way of choosing, for each fragment, one of its child parts to break, as (position,
/// sub-fragment) pairs; `None` when some fragment has no child part (holes cannot be broken).
fn ways_to_break(to_break: &[&Fragment]) -> Option<Vec<Vec<(usize, usize)>>> {
    let mut ways: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    for fragment in to_break {
        let breakable: Vec<(usize, usize)> = fragment
            .parts
            .iter()
            .enumerate()
            .filter_map(|(position, part)| part.map(|sub| (position, sub)))
            .collect();
        if breakable.is_empty() {
            return None;
        }
        ways = ways
            .into_iter()
            .flat_map(|chosen| {
                breakable.iter().map(move |&pick| {
                    let mut next = chosen.clone();
                    next.push(pick);
                    next
                })
            })
            .collect();
    }
    Some(ways)
}

impl Grammar {
    /// This grammar, rewritten so that no input it produces matches any of `patterns`.
    ///
    /// # Errors
    /// A pattern that does not fit the grammar, or one that every input matches.
    pub fn avoiding(&self, patterns: &[GrammarPattern]) -> Result<Grammar, GrammarError> {
        let fragments = Fragments::of(self, patterns)?;
        // The fragments a nonterminal must not match at its root wherever it occurs.
        let anywhere: Vec<(SymbolId, usize)> = fragments
            .roots
            .iter()
            .filter(|(_, anywhere)| *anywhere)
            .map(|&(f, _)| (fragments.all[f].symbol, f))
            .collect();
        let mut start_set: BTreeSet<usize> = fragments
            .roots
            .iter()
            .filter(|(_, anywhere)| !*anywhere)
            .map(|&(f, _)| f)
            .collect();
        start_set.extend(
            anywhere
                .iter()
                .filter(|(s, _)| *s == self.start())
                .map(|&(_, f)| f),
        );
        let all = fragments.all;
        let with_anywhere = |symbol: SymbolId, mut set: BTreeSet<usize>| {
            set.extend(
                anywhere
                    .iter()
                    .filter(|(s, _)| *s == symbol)
                    .map(|&(_, f)| f),
            );
            set
        };
        let child_kind = |symbol: SymbolId, set: BTreeSet<usize>| {
            let set = with_anywhere(symbol, set);
            if set.is_empty() && anywhere.is_empty() {
                Kind::Original
            } else {
                Kind::Avoiding(set)
            }
        };
        let builder = Builder::new(self);
        builder.finish(
            (self.start(), Kind::Avoiding(start_set)),
            &mut |b, symbol, kind| {
                let Kind::Avoiding(set) = kind else {
                    return b
                        .grammar
                        .rules(symbol)
                        .iter()
                        .map(|rule| b.rewrite(rule, &mut |b, _, c| b.id(c, Kind::Original)))
                        .collect();
                };
                let mut out = Vec::new();
                for (index, rule) in b.grammar.rules(symbol).iter().enumerate() {
                    // The fragments this rule could match; each must be broken by some child.
                    let to_break: Vec<&Fragment> = set
                        .iter()
                        .map(|&f| &all[f])
                        .filter(|f| f.rule == index)
                        .collect();
                    let Some(choices) = ways_to_break(&to_break) else {
                        continue;
                    };
                    for chosen in choices {
                        let rule = b.rewrite(rule, &mut |b, position, child| {
                            let set: BTreeSet<usize> = chosen
                                .iter()
                                .filter(|(p, _)| *p == position)
                                .map(|&(_, sub)| sub)
                                .collect();
                            let kind = child_kind(child, set);
                            b.id(child, kind)
                        });
                        if !out.contains(&rule) {
                            out.push(rule);
                        }
                    }
                }
                out
            },
        )
    }

    /// This grammar, rewritten so that every input it produces matches `pattern`.
    ///
    /// # Errors
    /// A pattern that does not fit the grammar, or one no input can match.
    pub fn only(&self, pattern: &GrammarPattern) -> Result<Grammar, GrammarError> {
        let fragments = Fragments::of(self, std::slice::from_ref(pattern))?;
        let (root, anywhere) = fragments.roots[0];
        let all = fragments.all;
        let root_symbol = all[root].symbol;
        let reaches = self.reaching(root_symbol);
        let start = if anywhere {
            Kind::Containing
        } else {
            Kind::Being(root)
        };
        let builder = Builder::new(self);
        builder.finish((self.start(), start), &mut |b, symbol, kind| {
            let rules = b.grammar.rules(symbol);
            let being = |b: &mut Builder<'_>, fragment: usize| {
                let f = &all[fragment];
                b.rewrite(
                    &rules[f.rule],
                    &mut |b, position, child| match f.parts[position] {
                        Some(sub) => b.id(child, Kind::Being(sub)),
                        None => b.id(child, Kind::Original),
                    },
                )
            };
            match kind {
                Kind::Being(f) => vec![being(b, *f)],
                Kind::Containing => {
                    let mut out = Vec::new();
                    if symbol == root_symbol {
                        out.push(being(b, root));
                    }
                    for rule in rules {
                        for (position, token) in rule.tokens.iter().enumerate() {
                            let Item::Symbol(child) = token.item else {
                                continue;
                            };
                            if token.hook.is_some() || !reaches[child] {
                                continue;
                            }
                            let rule = b.rewrite(rule, &mut |b, p, c| {
                                b.id(
                                    c,
                                    if p == position {
                                        Kind::Containing
                                    } else {
                                        Kind::Original
                                    },
                                )
                            });
                            if !out.contains(&rule) {
                                out.push(rule);
                            }
                        }
                    }
                    out
                }
                _ => rules
                    .iter()
                    .map(|rule| b.rewrite(rule, &mut |b, _, c| b.id(c, Kind::Original)))
                    .collect(),
            }
        })
    }

    /// Which nonterminals can have `target` in their trees (itself included).
    fn reaching(&self, target: SymbolId) -> Vec<bool> {
        let mut reaches = vec![false; self.symbol_count()];
        reaches[target] = true;
        loop {
            let mut changed = false;
            for (symbol, rules) in (0..self.symbol_count()).map(|s| (s, self.rules(s))) {
                if !reaches[symbol]
                    && rules.iter().flat_map(|r| &r.tokens).any(|t| {
                        matches!(t.item, Item::Symbol(s) if reaches[s]) && t.hook.is_none()
                    })
                {
                    reaches[symbol] = true;
                    changed = true;
                }
            }
            if !changed {
                return reaches;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::{GrammarInputs, RandomChoices};
    use crate::pattern::grammar::tests::{nested_parens, SEED};
    use crate::pattern::PatternTree;
    use crate::pattern::{generalize_grammar, Settings};
    use crate::shrink::Verdict;

    fn nested_pattern(inputs: &GrammarInputs) -> GrammarPattern {
        let text = b"a = ((4));\n";
        let choices = crate::grammar::parse(inputs.grammar(), inputs.max_depth(), text).unwrap();
        generalize_grammar(inputs, &choices, &Settings::DEFAULT, &mut |bytes| {
            Verdict::from(nested_parens(&inputs.render(bytes)))
        })
    }

    /// Whether `text` has `((E))`: a parenthesis whose content is one parenthesized expression.
    fn doubly_wrapped(text: &[u8]) -> bool {
        let close_of = |open: usize| {
            let mut depth = 0;
            for (i, &c) in text.iter().enumerate().skip(open) {
                depth += match c {
                    b'(' => 1,
                    b')' => -1,
                    _ => 0,
                };
                if depth == 0 {
                    return Some(i);
                }
            }
            None
        };
        (0..text.len().saturating_sub(1)).any(|i| {
            text[i] == b'('
                && text[i + 1] == b'('
                && close_of(i).is_some_and(|end| close_of(i + 1) == Some(end - 1))
        })
    }

    /// Renders many random inputs of `grammar`.
    fn samples(grammar: Grammar, count: u64) -> Vec<Vec<u8>> {
        let inputs = GrammarInputs::new(grammar, 8);
        (0..count)
            .map(|seed| {
                inputs
                    .random_expansion(inputs.grammar().start(), 0, RandomChoices::new(seed, 60))
                    .output
            })
            .collect()
    }

    #[test]
    fn an_avoiding_grammar_never_produces_the_pattern_and_still_produces_the_rest() {
        let grammar = Grammar::from_json(SEED).unwrap();
        let inputs = GrammarInputs::new(grammar.clone(), 8);
        let pattern = nested_pattern(&inputs);
        assert_eq!(pattern.to_string(), "((<expr>))");
        let plain = samples(grammar.clone(), 3000);
        assert!(
            plain.iter().any(|s| nested_parens(s)),
            "the plain grammar produces the bug"
        );
        let avoiding = grammar.avoiding(std::slice::from_ref(&pattern)).unwrap();
        let produced = samples(avoiding, 3000);
        for sentence in &produced {
            assert!(
                !doubly_wrapped(sentence),
                "{}",
                String::from_utf8_lossy(sentence)
            );
        }
        // Other ways to the property (`((0) - 1)`) are not the pattern: still produced.
        assert!(produced.iter().any(|s| nested_parens(s)));
        // Single parentheses and every operator are still produced.
        let all = produced.concat();
        for needle in [&b"("[..], b" + ", b" - ", b"\n"] {
            assert!(all.windows(needle.len()).any(|w| w == needle), "{needle:?}");
        }
        assert!(
            produced.iter().collect::<BTreeSet<_>>().len() > 1000,
            "varied"
        );
    }

    #[test]
    fn an_only_grammar_produces_nothing_but_the_pattern() {
        let grammar = Grammar::from_json(SEED).unwrap();
        let inputs = GrammarInputs::new(grammar.clone(), 8);
        let pattern = nested_pattern(&inputs);
        let only = grammar.only(&pattern).unwrap();
        let produced = samples(only, 2000);
        for sentence in &produced {
            assert!(
                doubly_wrapped(sentence),
                "{}",
                String::from_utf8_lossy(sentence)
            );
        }
        assert!(
            produced.iter().collect::<BTreeSet<_>>().len() > 500,
            "varied"
        );
    }

    #[test]
    fn a_pattern_of_one_hole_or_of_another_grammar_is_refused() {
        let grammar = Grammar::from_json(SEED).unwrap();
        let hole = GrammarPattern {
            tree: PatternTree::Hole {
                symbol: "<expr>".into(),
                group: None,
                shown: 20,
                tried: 20,
            },
            anywhere: true,
            probes: 20,
            layers: Vec::new(),
        };
        assert!(grammar.avoiding(&[hole]).is_err());
        let foreign = GrammarPattern {
            tree: PatternTree::Node {
                symbol: "<json>".into(),
                rule: 0,
                children: Vec::new(),
            },
            anywhere: true,
            probes: 1,
            layers: Vec::new(),
        };
        let message = grammar.avoiding(&[foreign]).unwrap_err().to_string();
        assert!(message.contains("<json>"), "{message}");
    }
}
