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
//! 4. **Repetition**: a concrete node with a child of its own nonterminal is one layer of a
//!    recursion (`(<expr>)` around an `<expr>`, one item of a list). With one, two and three
//!    more such layers, and with the layer taken out, the input tells whether the failure
//!    needs the layer exactly once: a layer that *repeats* may nest deeper, one that *drops*
//!    may go. Matching honours both.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::grammar::{DerivationNode, DerivationPart, GrammarInputs};

mod generalize;

pub use generalize::generalize_grammar;

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
    /// Its recursive layers that may repeat or drop (step 4).
    #[serde(default)]
    pub layers: Vec<Layer>,
}

/// A recursive layer of a pattern: a concrete expansion with a child of its own nonterminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    /// The layer's node: its number in a preorder walk over the pattern's expansions and holes
    /// (text not counted), the root being 0.
    pub node: usize,
    /// Which part of the node is the recursive child.
    pub part: usize,
    /// The layer as text, the recursive child written as its nonterminal: `(<expr>)`.
    pub text: String,
    /// Whether inputs with more such layers (one, two, three more) all still fail alike.
    pub repeats: bool,
    /// Whether the input without the layer still fails alike.
    pub drops: bool,
}

impl Layer {
    /// How the layer may vary, in words: `` `(<expr>)` may repeat ``.
    #[must_use]
    pub fn describe(&self) -> String {
        let how = match (self.repeats, self.drops) {
            (true, true) => "may repeat or go",
            (true, false) => "may repeat",
            (false, true) => "may go",
            (false, false) => "must occur once",
        };
        format!("`{}` {how}", self.text)
    }
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
        let walk = Matcher {
            inputs,
            output,
            nodes: self.tree.preorder(),
            layers: &self.layers,
        };
        nodes.into_iter().any(|node| {
            let mut groups = BTreeMap::new();
            walk.matches_at(&self.tree, node, &mut groups)
        })
    }
}

impl PatternTree {
    /// The pattern's expansions and holes in preorder (the numbering of [`Layer::node`]).
    fn preorder(&self) -> Vec<&PatternTree> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(tree) = stack.pop() {
            match tree {
                PatternTree::Text(_) => {}
                PatternTree::Hole { .. } => out.push(tree),
                PatternTree::Node { children, .. } => {
                    out.push(tree);
                    stack.extend(children.iter().rev());
                }
            }
        }
        out
    }
}

/// Matches derivation trees against one pattern.
struct Matcher<'a> {
    inputs: &'a GrammarInputs,
    output: &'a [u8],
    nodes: Vec<&'a PatternTree>,
    layers: &'a [Layer],
}

impl<'a> Matcher<'a> {
    /// The layer whose node is `pattern`, if it is one.
    fn layer(&self, pattern: &PatternTree) -> Option<&'a Layer> {
        let at = self.nodes.iter().position(|n| std::ptr::eq(*n, pattern))?;
        self.layers.iter().find(|l| l.node == at)
    }

    /// Whether `node` matches `pattern` at its root: exactly, or (for a layer that drops) as
    /// the layer's recursive child, or (for one that repeats) with the layer more than once.
    fn matches_at(
        &self,
        pattern: &'a PatternTree,
        node: &DerivationNode,
        groups: &mut BTreeMap<u32, &'a [u8]>,
    ) -> bool {
        let layer = self.layer(pattern);
        let recursive = |layer: &Layer| match pattern {
            PatternTree::Node { children, .. } => children.get(layer.part),
            _ => None,
        };
        let saved = groups.clone();
        if self.matches_here(pattern, layer, node, groups) {
            return true;
        }
        *groups = saved.clone();
        if let Some(child) = layer.filter(|l| l.drops).and_then(recursive) {
            if self.matches_at(child, node, groups) {
                return true;
            }
        }
        *groups = saved;
        false
    }

    fn matches_here(
        &self,
        pattern: &'a PatternTree,
        layer: Option<&Layer>,
        node: &DerivationNode,
        groups: &mut BTreeMap<u32, &'a [u8]>,
    ) -> bool {
        let output = self.output;
        let name = self.inputs.grammar().name(node.symbol);
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
                    && children.iter().zip(&node.children).enumerate().all(
                        |(at, (p, part))| match (p, part) {
                            (PatternTree::Text(text), DerivationPart::Text(range)) => {
                                text.as_bytes() == &output[range.clone()]
                            }
                            (p, DerivationPart::Node(child)) => {
                                self.matches_at(p, child, groups)
                                    || layer.is_some_and(|l| l.repeats && l.part == at)
                                        && self.matches_at(pattern, child, groups)
                            }
                            _ => false,
                        },
                    )
            }
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::grammar::Grammar;
    use crate::pattern::Settings;
    use crate::shrink::Verdict;

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

    /// Asserts which of `cases` (text, whether it should match) `pattern` matches.
    fn assert_matches(inputs: &GrammarInputs, pattern: &GrammarPattern, cases: &[(&str, bool)]) {
        for &(text, expected) in cases {
            let (derived, tree) = inputs.derive_traced(&choices_of(inputs, text));
            assert_eq!(
                pattern.matches(inputs, &tree, &derived.output),
                expected,
                "{text}"
            );
        }
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
        // Both parenthesis layers may nest deeper; neither may go.
        let layers: Vec<String> = pattern.layers.iter().map(Layer::describe).collect();
        assert_eq!(layers, ["`(<expr>)` may repeat", "`(<expr>)` may repeat"]);
        // It matches other inputs with the bug and not inputs without.
        assert_matches(
            &inputs,
            &pattern,
            &[
                ("b = 1 + ((c - 2));\n", true),
                ("b = (((c)));\n", true),
                ("b = (1) + (2);\n", false),
            ],
        );
    }

    #[test]
    fn a_layer_the_failure_does_not_need_may_go_and_matching_skips_it() {
        // Fails when a 7 is subtracted: `(7)` needs no parentheses, `- 7` needs its operator.
        let inputs = GrammarInputs::new(Grammar::from_json(SEED).unwrap(), 8);
        let choices = choices_of(&inputs, "a = 1 - (7);\n");
        let minus_seven = |text: &[u8]| {
            let text = String::from_utf8_lossy(text).replace(['(', ')'], "");
            text.contains("- 7")
        };
        let pattern = generalize_grammar(&inputs, &choices, &Settings::DEFAULT, &mut |bytes| {
            Verdict::from(minus_seven(&inputs.render(bytes)))
        });
        assert_eq!(pattern.to_string(), "<expr> - (7)");
        let layers: Vec<String> = pattern.layers.iter().map(Layer::describe).collect();
        // The subtraction is a layer too (left-recursive): `<expr> - (7) - (7)` fails alike.
        assert_eq!(
            layers,
            ["`<expr> - (7)` may repeat", "`(<expr>)` may repeat or go"]
        );
        assert_matches(
            &inputs,
            &pattern,
            &[
                ("b = c - 7;\n", true),
                ("b = c - ((7));\n", true),
                ("b = c + (7);\n", false),
            ],
        );
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
