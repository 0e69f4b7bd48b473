//! Rendering a grammar from a choice sequence.
//!
//! The generator asks [`ChoiceSequence::choose`] at every decision (see [`super::choices`]).
//! Below `max_depth` every rule may be chosen; deeper, only the cheapest ones, which bounds the
//! output.

use super::choices::{ChoiceSequence, RandomChoices};
use super::{Grammar, Item, SymbolId};

/// The context-sensitive part of a grammar: code run around hooked tokens.
pub trait Hooks {
    /// Before a hooked token is produced: `Some(bytes)` replaces what it would produce. May read
    /// choices from `choices`.
    fn pre(
        &mut self,
        hook: &str,
        symbol: Option<&str>,
        choices: &mut ChoiceSequence<'_>,
    ) -> Option<Vec<u8>> {
        let _ = (hook, symbol, choices);
        None
    }

    /// After a hooked token produced `produced`.
    fn post(&mut self, hook: &str, symbol: Option<&str>, produced: &[u8]) {
        let _ = (hook, symbol, produced);
    }
}

/// Hooks that do nothing: a purely context-free grammar.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}

/// Renders a grammar from choice sequences.
#[derive(Clone, Debug)]
pub struct Generator<'g> {
    grammar: &'g Grammar,
    max_depth: usize,
}

impl<'g> Generator<'g> {
    /// A generator for `grammar` that keeps only cheapest rules deeper than `max_depth`.
    #[must_use]
    pub fn new(grammar: &'g Grammar, max_depth: usize) -> Self {
        Generator { grammar, max_depth }
    }

    /// Renders `<start>` from `choices` through `hooks`.
    pub fn render(&self, choices: &mut ChoiceSequence<'_>, hooks: &mut dyn Hooks) -> Vec<u8> {
        let mut out = Vec::new();
        self.expand(self.grammar.start(), 0, choices, hooks, &mut out, None);
        out
    }

    /// Expands `symbol` alone, as at `depth`, from `choices`.
    pub fn render_symbol(
        &self,
        symbol: SymbolId,
        depth: usize,
        choices: &mut ChoiceSequence<'_>,
        hooks: &mut dyn Hooks,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        self.expand(symbol, depth, choices, hooks, &mut out, None);
        out
    }

    /// Renders `<start>` from `choices` and returns the derivation tree too. Node ranges index
    /// the choices used ([`ChoiceSequence::new`] records them) and the output.
    pub fn render_traced(
        &self,
        choices: &mut ChoiceSequence<'_>,
        hooks: &mut dyn Hooks,
    ) -> (Vec<u8>, DerivationNode) {
        let mut out = Vec::new();
        let mut walk = Walk {
            visited: 0,
            trace: true,
            splices: Vec::new(),
        };
        let tree = self
            .expand(
                self.grammar.start(),
                0,
                choices,
                hooks,
                &mut out,
                Some(&mut walk),
            )
            .expect("a traced expansion returns its node");
        (out, tree)
    }

    /// Renders `<start>` from `choices`, except that the subtree of each spliced node (numbered
    /// in preorder, as in [`DerivationNode::index`]) takes its choices from its
    /// [`RandomChoices`]; after it, reading resumes at the given choice (where that subtree
    /// ended in `choices`). Nodes are numbered as in the unspliced rendering up to the first
    /// splice; list splices in preorder.
    pub fn render_spliced(
        &self,
        choices: &mut ChoiceSequence<'_>,
        hooks: &mut dyn Hooks,
        splices: Vec<(usize, RandomChoices, usize)>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut walk = Walk {
            visited: 0,
            trace: false,
            splices: splices
                .into_iter()
                .map(|(node, with, resume_at)| Splice {
                    node,
                    with: Some(with),
                    resume_at,
                })
                .collect(),
        };
        self.expand(
            self.grammar.start(),
            0,
            choices,
            hooks,
            &mut out,
            Some(&mut walk),
        );
        out
    }

    fn expand(
        &self,
        symbol: SymbolId,
        depth: usize,
        choices: &mut ChoiceSequence<'_>,
        hooks: &mut dyn Hooks,
        out: &mut Vec<u8>,
        mut walk: Option<&mut Walk>,
    ) -> Option<DerivationNode> {
        let index = walk.as_deref_mut().map_or(0, |w| {
            w.visited += 1;
            w.visited - 1
        });
        let resume_at =
            walk.as_deref_mut()
                .and_then(|w| w.splice_at(index))
                .map(|(with, resume_at)| {
                    choices.random = Some(with);
                    resume_at
                });
        let (choices_start, output_start) = (choices.used_len(), out.len());
        let rules = self.grammar.rules(symbol);
        // Cheapest rules come first; past the depth limit only they may be chosen. Once the
        // sequence is exhausted choice 0 is taken, which is one of them.
        let allowed = if depth > self.max_depth {
            rules.iter().take_while(|r| r.cost == rules[0].cost).count()
        } else {
            rules.len()
        };
        let count = u32::try_from(allowed).unwrap_or(u32::MAX);
        let rule_index = choices.choose(count) as usize;
        let rule = &rules[rule_index];
        let trace = walk.as_deref().is_some_and(|w| w.trace);
        let mut children = Vec::new();
        for token in &rule.tokens {
            let symbol_name = match token.item {
                Item::Symbol(id) => Some(self.grammar.name(id)),
                Item::Text(_) => None,
            };
            let start = out.len();
            let replaced = match &token.hook {
                Some(hook) => hooks.pre(hook, symbol_name, choices),
                None => None,
            };
            let part = match (replaced, &token.item) {
                (Some(bytes), _) => {
                    out.extend_from_slice(&bytes);
                    None
                }
                (None, Item::Text(text)) => {
                    out.extend_from_slice(text);
                    None
                }
                (None, Item::Symbol(id)) => self
                    .expand(*id, depth + 1, choices, hooks, out, walk.as_deref_mut())
                    .map(DerivationPart::Node),
            };
            if trace {
                // Text, and a hooked token's replacement, are leaves of this node.
                children.push(part.unwrap_or(DerivationPart::Text(start..out.len())));
            }
            if let Some(hook) = &token.hook {
                hooks.post(hook, symbol_name, &out[start..]);
            }
        }
        if let Some(resume_at) = resume_at {
            choices.random = None;
            choices.next = resume_at;
        }
        trace.then(|| DerivationNode {
            symbol,
            rule: rule_index,
            depth,
            index,
            choices: choices_start..choices.used_len(),
            output: output_start..out.len(),
            children,
        })
    }
}

/// One node of a derivation tree: the expansion of a nonterminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivationNode {
    /// The nonterminal.
    pub symbol: SymbolId,
    /// The rule chosen (an index into [`Grammar::rules`]).
    pub rule: usize,
    /// Its depth below `<start>` (0).
    pub depth: usize,
    /// Its number in preorder, `<start>` being 0.
    pub index: usize,
    /// The choices its subtree used (indices into the used choices).
    pub choices: std::ops::Range<usize>,
    /// The output its subtree produced.
    pub output: std::ops::Range<usize>,
    /// Its rule's tokens, in order: text (and hooked tokens' replacements) or child nodes.
    pub children: Vec<DerivationPart>,
}

/// A token of an expanded rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DerivationPart {
    /// Output bytes of a text token or a hooked token's replacement.
    Text(std::ops::Range<usize>),
    /// A nonterminal's expansion.
    Node(DerivationNode),
}

impl DerivationNode {
    /// This node and every node below it, in preorder.
    #[must_use]
    pub fn preorder(&self) -> Vec<&DerivationNode> {
        let mut out = vec![self];
        for part in &self.children {
            if let DerivationPart::Node(child) = part {
                out.extend(child.preorder());
            }
        }
        out
    }
}

/// What a traced or spliced expansion keeps track of.
struct Walk {
    visited: usize,
    trace: bool,
    splices: Vec<Splice>,
}

struct Splice {
    node: usize,
    with: Option<RandomChoices>,
    resume_at: usize,
}

impl Walk {
    /// The replacement choices when node `index` is the spliced one.
    fn splice_at(&mut self, index: usize) -> Option<(RandomChoices, usize)> {
        let splice = self.splices.iter_mut().find(|s| s.node == index)?;
        Some((splice.with.take()?, splice.resume_at))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::tests::ASSIGNMENTS;
    use super::*;

    /// The seed's context-sensitive rule: a variable may only be used once its assignment is
    /// complete; with none defined yet, `00` stands in (as in the seed).
    #[derive(Default)]
    pub(crate) struct DefinedVariables {
        defined: Vec<Vec<u8>>,
        pending: Vec<Vec<u8>>,
    }

    impl Hooks for DefinedVariables {
        fn pre(
            &mut self,
            hook: &str,
            _symbol: Option<&str>,
            choices: &mut ChoiceSequence<'_>,
        ) -> Option<Vec<u8>> {
            if hook != "use" {
                return None;
            }
            if self.defined.is_empty() {
                return Some(b"00".to_vec());
            }
            let n = u32::try_from(self.defined.len()).unwrap();
            Some(self.defined[choices.choose(n) as usize].clone())
        }

        fn post(&mut self, hook: &str, _symbol: Option<&str>, produced: &[u8]) {
            match hook {
                "define" => self.pending.push(produced.to_vec()),
                "sync" => self.defined.append(&mut self.pending),
                _ => {}
            }
        }
    }

    fn render(choices: &[u32], max_depth: usize) -> (String, Vec<u32>) {
        let grammar = Grammar::from_json(ASSIGNMENTS).unwrap();
        let mut sequence = ChoiceSequence::new(choices);
        let out = Generator::new(&grammar, max_depth)
            .render(&mut sequence, &mut DefinedVariables::default());
        (
            String::from_utf8(out).unwrap(),
            sequence.used().expect("recorded").to_vec(),
        )
    }

    #[test]
    fn the_empty_sequence_renders_a_cheapest_sentence() {
        assert_eq!(render(&[], 10).0, "a = 00;\n");
    }

    #[test]
    fn choices_pick_alternatives_and_exhaustion_completes_cheaply() {
        // <assignments> 1 (two assignments), <var> 1 (b), <expr> 1 (<digit>: rules are
        // cheapest first), <digit> 1; then exhausted: the second assignment is a cheapest one,
        // and its variable use can only be `b`.
        assert_eq!(render(&[1, 1, 1, 1], 10).0, "b = 1;\na = b;\n");
        // <expr> 4 is `( <expr> )`.
        assert_eq!(render(&[0, 0, 4, 1, 1], 10).0, "a = (1);\n");
    }

    #[test]
    fn used_choices_are_reduced_and_render_the_same() {
        let (text, used) = render(&[3, 27, 9, 5, 7, 100, 2, 2, 2, 2, 2, 2, 2, 2, 2], 10);
        assert!(used.len() <= 15);
        let (again, used_again) = render(&used, 10);
        assert_eq!(again, text);
        assert_eq!(used_again, used);
    }

    #[test]
    fn only_defined_variables_are_used() {
        for seed in 0..200u32 {
            let choices: Vec<u32> = (0..60)
                .map(|i| seed.wrapping_mul(2654435761) >> (i % 29))
                .collect();
            let (text, _) = render(&choices, 8);
            let mut defined: Vec<&str> = Vec::new();
            for statement in text.split(";\n").filter(|s| !s.is_empty()) {
                let (lhs, rhs) = statement.split_once(" = ").expect("an assignment");
                for used in rhs
                    .split(|c: char| !c.is_ascii_lowercase())
                    .filter(|v| !v.is_empty())
                {
                    assert!(
                        defined.contains(&used),
                        "{used} used before definition in {text:?}"
                    );
                }
                defined.push(lhs);
            }
        }
    }

    #[test]
    fn the_depth_limit_bounds_the_output() {
        // Always choosing the recursive alternatives would never end without the limit.
        let recursive = vec![2u32; 10_000];
        let (shallow, _) = render(&recursive, 2);
        let (deep, _) = render(&recursive, 6);
        assert!(shallow.len() < deep.len(), "{shallow:?} vs {deep:?}");
        assert!(deep.len() < 10_000);
    }
}
