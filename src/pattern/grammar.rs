//! Grammar-mode patterns, over the reproducer's derivation tree (DDSET's three steps):
//!
//! 1. **Abstraction**, top-down: a subtree whose random regenerations (same nonterminal, same
//!    depth, a bounded number of random choices) still show the crash label becomes
//!    `<nonterminal>`; otherwise it stays concrete and its children are tried.
//! 2. **Dependencies**: two concrete subtrees of the same nonterminal and the same text that
//!    cannot change alone may have to change together; regenerated with one shared expansion,
//!    they become one named hole, `<var>#1` twice.
//! 3. **Isolation**: walking down from the root while a node has a single concrete child, the
//!    child's subtree is put into random inputs in place of a node of its nonterminal; when
//!    that still fails, the surrounding input does not matter and the pattern is the child's
//!    (it may occur anywhere).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{mix, Oracle, Settings, Trial};
use crate::grammar::{choice_bytes, DerivationNode, DerivationPart, GrammarInputs, RandomChoices};
use crate::shrink::Verdict;

/// A node of a grammar pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternTree {
    /// Text as it is.
    Text(String),
    /// A concrete expansion: this rule of this nonterminal, its parts as given.
    Node {
        /// The nonterminal.
        symbol: String,
        /// The rule's index among the nonterminal's (cheapest first).
        rule: usize,
        /// One part per token of the rule.
        children: Vec<PatternTree>,
    },
    /// Any expansion of the nonterminal.
    Hole {
        /// The nonterminal.
        symbol: String,
        /// Holes with the same group must expand to the same text (`<var>#1`).
        group: Option<u32>,
        /// Regenerations that still showed the crash label.
        shown: u32,
        /// Regenerations tried.
        tried: u32,
    },
}

impl PatternTree {
    fn write(&self, out: &mut String) {
        match self {
            PatternTree::Text(text) => out.push_str(text),
            PatternTree::Node { children, .. } => children.iter().for_each(|c| c.write(out)),
            PatternTree::Hole { symbol, group, .. } => {
                out.push_str(symbol);
                if let Some(group) = group {
                    out.push_str(&format!("#{group}"));
                }
            }
        }
    }

    /// The holes and how many regenerations confirmed each.
    #[must_use]
    pub fn holes(&self) -> Vec<(String, u32, u32)> {
        match self {
            PatternTree::Text(_) => Vec::new(),
            PatternTree::Node { children, .. } => children.iter().flat_map(Self::holes).collect(),
            PatternTree::Hole {
                symbol,
                shown,
                tried,
                ..
            } => vec![(symbol.clone(), *shown, *tried)],
        }
    }
}

/// A grammar-mode failure pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrammarPattern {
    /// The pattern's tree.
    pub tree: PatternTree,
    /// Whether the pattern may occur anywhere in an input (isolation held) or is the whole
    /// input.
    pub anywhere: bool,
    /// Executions spent finding it.
    pub probes: usize,
}

impl GrammarPattern {
    /// Whether the derivation `tree` of `output` contains the pattern (anywhere, or at its root).
    #[must_use]
    pub fn matches(&self, inputs: &GrammarInputs, tree: &DerivationNode, output: &[u8]) -> bool {
        let nodes = if self.anywhere {
            tree.preorder()
        } else {
            vec![tree]
        };
        nodes.into_iter().any(|node| {
            let mut groups = BTreeMap::new();
            matches_at(inputs, &self.tree, node, output, &mut groups)
        })
    }
}

fn matches_at<'o>(
    inputs: &GrammarInputs,
    pattern: &PatternTree,
    node: &DerivationNode,
    output: &'o [u8],
    groups: &mut BTreeMap<u32, &'o [u8]>,
) -> bool {
    let name = inputs.grammar().name(node.symbol);
    match pattern {
        PatternTree::Text(_) => false,
        PatternTree::Hole { symbol, group, .. } => {
            symbol == name
                && group.is_none_or(|g| {
                    let text = &output[node.output.clone()];
                    *groups.entry(g).or_insert(text) == text
                })
        }
        PatternTree::Node {
            symbol,
            rule,
            children,
        } => {
            symbol == name
                && *rule == node.rule
                && children.len() == node.children.len()
                && children
                    .iter()
                    .zip(&node.children)
                    .all(|(p, part)| match (p, part) {
                        (PatternTree::Text(text), DerivationPart::Text(range)) => {
                            text.as_bytes() == &output[range.clone()]
                        }
                        (p, DerivationPart::Node(child)) => {
                            matches_at(inputs, p, child, output, groups)
                        }
                        _ => false,
                    })
        }
    }
}

impl std::fmt::Display for GrammarPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        self.tree.write(&mut text);
        f.write_str(&text)
    }
}

/// What a node became.
#[derive(Clone, Copy, Debug)]
struct Hole {
    group: Option<u32>,
    shown: u32,
    tried: u32,
}

/// Generalizes `choices`, a reproducer that `test` accepts (its choice bytes show the crash
/// label), into a pattern over its derivation tree, spending at most `settings.budget`
/// executions of `test`.
pub fn generalize_grammar(
    inputs: &GrammarInputs,
    choices: &[u32],
    settings: &Settings,
    test: &mut dyn FnMut(&[u8]) -> Verdict,
) -> GrammarPattern {
    let (original, tree) = inputs.derive_traced(choices);
    let base = original.used.clone();
    let mut oracle = Oracle {
        test,
        spent: 0,
        budget: settings.budget,
        stopped: false,
    };
    let mut holes: HashMap<usize, Hole> = HashMap::new();
    let mut failed: Vec<&DerivationNode> = Vec::new();

    // 1. Abstraction, top-down.
    let mut stack = vec![&tree];
    while let Some(node) = stack.pop() {
        let mut variant = |i: u64| {
            let random = RandomChoices::new(mix(&[node.index as u64, i]), node.choices.len() + 8);
            let derived = inputs.derive_spliced(&base, vec![(node, random)]);
            (derived.output != original.output).then(|| choice_bytes(&derived.used))
        };
        match oracle.trial(settings, &mut variant) {
            Trial::Abstract { shown, tried } => {
                holes.insert(
                    node.index,
                    Hole {
                        group: None,
                        shown,
                        tried,
                    },
                );
            }
            Trial::Concrete => {
                failed.push(node);
                // Children in input order: pushed last first.
                for part in node.children.iter().rev() {
                    if let DerivationPart::Node(child) = part {
                        stack.push(child);
                    }
                }
            }
            Trial::Stopped => break,
        }
    }

    // 2. Dependencies: pairs of concrete same-text subtrees regenerated together.
    let text_of = |node: &DerivationNode| &original.output[node.output.clone()];
    let mut group = 0;
    for (a_at, a) in failed.iter().enumerate() {
        for b in &failed[a_at + 1..] {
            let disjoint = a.output.end <= b.output.start || b.output.end <= a.output.start;
            let free = |n: &DerivationNode| !holes.contains_key(&n.index);
            if a.symbol != b.symbol
                || !disjoint
                || text_of(a) != text_of(b)
                || a.output.is_empty()
                || !free(a)
                || !free(b)
                || oracle.stopped
            {
                continue;
            }
            let (first, second) = if a.index < b.index { (a, b) } else { (b, a) };
            let mut variant = |i: u64| {
                let random = RandomChoices::new(
                    mix(&[first.index as u64, second.index as u64, i]),
                    first.choices.len() + 8,
                );
                let shared = inputs.random_expansion(first.symbol, first.depth, random);
                if shared.output == text_of(first) {
                    return None;
                }
                let derived = inputs.derive_spliced(
                    &base,
                    vec![
                        (*first, RandomChoices::replaying(&shared.used)),
                        (*second, RandomChoices::replaying(&shared.used)),
                    ],
                );
                Some(choice_bytes(&derived.used))
            };
            if let Trial::Abstract { shown, tried } = oracle.trial(settings, &mut variant) {
                group += 1;
                for node in [first, second] {
                    holes.insert(
                        node.index,
                        Hole {
                            group: Some(group),
                            shown,
                            tried,
                        },
                    );
                }
            }
        }
    }

    // 3. Isolation: does the context matter?
    let mut root = &tree;
    let mut anywhere = false;
    while !holes.contains_key(&root.index) && !oracle.stopped {
        let concrete: Vec<&DerivationNode> = root
            .children
            .iter()
            .filter_map(|part| match part {
                DerivationPart::Node(n) if !holes.contains_key(&n.index) => Some(n),
                _ => None,
            })
            .collect();
        let [child] = concrete[..] else { break };
        // A named hole outside the child would lose its partner inside.
        let inside = child.index..child.index + child.preorder().len();
        let grouped_outside = root.preorder().iter().any(|n| {
            !inside.contains(&n.index) && holes.get(&n.index).is_some_and(|h| h.group.is_some())
        });
        if grouped_outside {
            break;
        }
        let subtree = &base[child.choices.start.min(base.len())..child.choices.end.min(base.len())];
        let text = text_of(child).to_vec();
        let mut variant = |i: u64| {
            let context_seed = mix(&[child.index as u64, i, 7]);
            let budget = base.len() + 16;
            let context = inputs.random_expansion(
                inputs.grammar().start(),
                0,
                RandomChoices::new(context_seed, budget),
            );
            let (_, context_tree) = inputs.derive_traced(&context.used);
            let sites: Vec<&DerivationNode> = context_tree
                .preorder()
                .into_iter()
                .filter(|n| n.symbol == child.symbol && n.index != 0)
                .collect();
            if sites.is_empty() {
                return None;
            }
            let site = sites[(context_seed >> 33) as usize % sites.len()];
            let placed = inputs.derive_spliced(
                &context.used,
                vec![(site, RandomChoices::replaying(subtree))],
            );
            let contains = placed.output.windows(text.len().max(1)).any(|w| w == text);
            (contains && placed.output != original.output).then(|| choice_bytes(&placed.used))
        };
        if !matches!(oracle.trial(settings, &mut variant), Trial::Abstract { .. }) {
            break;
        }
        root = child;
        anywhere = true;
    }

    GrammarPattern {
        tree: pattern_of(inputs, root, &original.output, &holes),
        anywhere,
        probes: oracle.spent,
    }
}

fn pattern_of(
    inputs: &GrammarInputs,
    node: &DerivationNode,
    output: &[u8],
    holes: &HashMap<usize, Hole>,
) -> PatternTree {
    let symbol = inputs.grammar().name(node.symbol).to_string();
    if let Some(hole) = holes.get(&node.index) {
        return PatternTree::Hole {
            symbol,
            group: hole.group,
            shown: hole.shown,
            tried: hole.tried,
        };
    }
    PatternTree::Node {
        symbol,
        rule: node.rule,
        children: node
            .children
            .iter()
            .map(|part| match part {
                DerivationPart::Text(range) => {
                    PatternTree::Text(String::from_utf8_lossy(&output[range.clone()]).into_owned())
                }
                DerivationPart::Node(child) => pattern_of(inputs, child, output, holes),
            })
            .collect(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::grammar::Grammar;

    /// The seed's assignment grammar, context-free.
    pub(crate) const SEED: &str = r#"{
        "<start>": [["<assignments>"]],
        "<assignments>": [["<assign>", ";\n"], ["<assign>", ";\n", "<assignments>"]],
        "<assign>": [["<var>", " = ", "<expr>"]],
        "<expr>": [["<expr>", " + ", "<expr>"], ["<expr>", " - ", "<expr>"],
                   ["(", "<expr>", ")"], ["<digit>"], ["<var>"]],
        "<digit>": [{"chars": "0-9"}],
        "<var>": [{"chars": "a-z"}]
    }"#;

    pub(crate) fn nested_parens(text: &[u8]) -> bool {
        let has = |needle: &[u8]| text.windows(2).any(|w| w == needle);
        has(b"((") && has(b"))")
    }

    /// The choices of `text` under the seed grammar (found by search: small inputs only).
    pub(crate) fn choices_of(inputs: &GrammarInputs, text: &str) -> Vec<u32> {
        let parsed = crate::grammar::parse(inputs.grammar(), inputs.max_depth(), text.as_bytes())
            .expect("the text parses");
        let derived = inputs.derive(&parsed);
        assert_eq!(String::from_utf8_lossy(&derived.output), text);
        derived.used
    }

    #[test]
    fn the_seed_example_generalizes_to_nested_parentheses_around_any_expression() {
        let inputs = GrammarInputs::new(Grammar::from_json(SEED).unwrap(), 8);
        let choices = choices_of(&inputs, "a = ((4));\n");
        let pattern = generalize_grammar(&inputs, &choices, &Settings::DEFAULT, &mut |bytes| {
            Verdict::from(nested_parens(&inputs.render(bytes)))
        });
        assert_eq!(pattern.to_string(), "((<expr>))");
        assert!(pattern.anywhere, "the assignment around it does not matter");
        assert!(pattern.probes <= Settings::DEFAULT.budget);
        let holes = pattern.tree.holes();
        assert_eq!(holes.len(), 1);
        assert!(holes[0].1 * 10 >= holes[0].2 * 9, "{holes:?}");
        // It matches other inputs with the bug and not inputs without.
        for (text, expected) in [("b = 1 + ((c - 2));\n", true), ("b = (1) + (2);\n", false)] {
            let (derived, tree) = inputs.derive_traced(&choices_of(&inputs, text));
            assert_eq!(
                pattern.matches(&inputs, &tree, &derived.output),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn equal_subtrees_that_must_stay_equal_become_one_named_hole() {
        // Fails when an assignment's variable is used in its own expression: `a = a;`.
        let inputs = GrammarInputs::new(Grammar::from_json(SEED).unwrap(), 8);
        let choices = choices_of(&inputs, "q = q;\n");
        let self_reference = |text: &[u8]| {
            let text = String::from_utf8_lossy(text);
            text.split(";\n").any(|s| {
                s.split_once(" = ").is_some_and(|(lhs, rhs)| {
                    rhs.split(|c: char| !c.is_ascii_lowercase())
                        .any(|v| v == lhs)
                })
            })
        };
        let pattern = generalize_grammar(&inputs, &choices, &Settings::DEFAULT, &mut |bytes| {
            Verdict::from(self_reference(&inputs.render(bytes)))
        });
        assert_eq!(pattern.to_string(), "<var>#1 = <var>#1");
    }
}
