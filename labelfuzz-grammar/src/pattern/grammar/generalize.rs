//! The four steps of [`generalize_grammar`], each a method of [`Generalizer`] that runs the
//! target through the pattern's [`Oracle`] within its budget.

use std::collections::HashMap;

use super::{Layer, PatternTree};
use crate::grammar::Derivation;
use crate::grammar::{choice_bytes, DerivationNode, DerivationPart, GrammarInputs, RandomChoices};
use crate::pattern::{mix, GrammarPattern, Oracle, Settings, Trial};
use crate::shrink::Verdict;

/// What a node became.
#[derive(Clone, Copy, Debug)]
pub(super) struct Hole {
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
    let mut generalizer = Generalizer {
        inputs,
        settings,
        base: original.used.clone(),
        original,
        oracle: Oracle {
            test,
            spent: 0,
            budget: settings.budget,
            stopped: false,
        },
        holes: HashMap::new(),
    };
    let concrete = generalizer.abstract_top_down(&tree);
    generalizer.link_dependent(&concrete);
    let (root, anywhere) = generalizer.isolate(&tree);
    let (tree, layers) = generalizer.find_layers(root);
    GrammarPattern {
        tree,
        anywhere,
        probes: generalizer.oracle.spent,
        layers,
    }
}

/// One reproducer's generalization in progress: what each step learned so far.
struct Generalizer<'a, 't> {
    inputs: &'a GrammarInputs,
    settings: &'a Settings,
    /// The reproducer's derivation: its used choices and its output.
    original: Derivation,
    /// The reproducer's used choices, which variants splice into.
    base: Vec<u32>,
    oracle: Oracle<'t>,
    /// The nodes that became holes, by derivation index.
    holes: HashMap<usize, Hole>,
}

impl Generalizer<'_, '_> {
    /// The text a node of the reproducer's tree rendered.
    fn text_of(&self, node: &DerivationNode) -> &[u8] {
        &self.original.output[node.output.clone()]
    }

    /// Marks `node` a hole after a trial that showed the label `shown` times in `tried`.
    fn make_hole(&mut self, node: &DerivationNode, group: Option<u32>, shown: u32, tried: u32) {
        self.holes.insert(
            node.index,
            Hole {
                group,
                shown,
                tried,
            },
        );
    }

    /// Step 1, abstraction, top-down: a subtree whose random regenerations still fail becomes
    /// a hole; otherwise its children are tried. Returns the nodes that stayed concrete.
    fn abstract_top_down<'n>(&mut self, tree: &'n DerivationNode) -> Vec<&'n DerivationNode> {
        let mut concrete = Vec::new();
        let mut stack = vec![tree];
        while let Some(node) = stack.pop() {
            let (inputs, base, output) = (self.inputs, &self.base, &self.original.output);
            let mut variant = |i: u64| {
                let random =
                    RandomChoices::new(mix(&[node.index as u64, i]), node.choices.len() + 8);
                let derived = inputs.derive_spliced(base, vec![(node, random)]);
                (derived.output != *output).then(|| choice_bytes(&derived.used))
            };
            match self.oracle.trial(self.settings, &mut variant) {
                Trial::Abstract { shown, tried } => self.make_hole(node, None, shown, tried),
                Trial::Concrete => {
                    concrete.push(node);
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
        concrete
    }

    /// Step 2, dependencies: two concrete, disjoint subtrees of one nonterminal and one text
    /// that still fail when regenerated *together* (one shared expansion) become one named hole.
    fn link_dependent(&mut self, concrete: &[&DerivationNode]) {
        let mut group = 0;
        for (a_at, a) in concrete.iter().enumerate() {
            for b in &concrete[a_at + 1..] {
                if !self.may_depend(a, b) {
                    continue;
                }
                let (first, second) = if a.index < b.index { (a, b) } else { (b, a) };
                let (inputs, base) = (self.inputs, &self.base);
                let text = self.text_of(first).to_vec();
                let mut variant = |i: u64| {
                    let random = RandomChoices::new(
                        mix(&[first.index as u64, second.index as u64, i]),
                        first.choices.len() + 8,
                    );
                    let shared = inputs.random_expansion(first.symbol, first.depth, random);
                    if shared.output == text {
                        return None;
                    }
                    let derived = inputs.derive_spliced(
                        base,
                        vec![
                            (*first, RandomChoices::replaying(&shared.used)),
                            (*second, RandomChoices::replaying(&shared.used)),
                        ],
                    );
                    Some(choice_bytes(&derived.used))
                };
                if let Trial::Abstract { shown, tried } =
                    self.oracle.trial(self.settings, &mut variant)
                {
                    group += 1;
                    self.make_hole(first, Some(group), shown, tried);
                    self.make_hole(second, Some(group), shown, tried);
                }
            }
        }
    }

    /// Whether `a` and `b` are candidates for one named hole.
    fn may_depend(&self, a: &DerivationNode, b: &DerivationNode) -> bool {
        let disjoint = a.output.end <= b.output.start || b.output.end <= a.output.start;
        let free = |n: &DerivationNode| !self.holes.contains_key(&n.index);
        a.symbol == b.symbol
            && disjoint
            && self.text_of(a) == self.text_of(b)
            && !a.output.is_empty()
            && free(a)
            && free(b)
            && !self.oracle.stopped
    }

    /// Step 3, isolation: walking down from the root while a node has a single concrete child,
    /// the child's subtree is put into random inputs; while that still fails, the context does
    /// not matter. Returns the pattern's root and whether it may occur anywhere.
    fn isolate<'n>(&mut self, tree: &'n DerivationNode) -> (&'n DerivationNode, bool) {
        let mut root = tree;
        let mut anywhere = false;
        while !self.holes.contains_key(&root.index) && !self.oracle.stopped {
            let Some(child) = self.sole_concrete_child(root) else {
                break;
            };
            let subtree = choices_in(&self.base, child.choices.clone()).to_vec();
            let text = self.text_of(child).to_vec();
            let (inputs, budget, output) =
                (self.inputs, self.base.len() + 16, &self.original.output);
            let mut variant = |i: u64| {
                let context_seed = mix(&[child.index as u64, i, 7]);
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
                    vec![(site, RandomChoices::replaying(&subtree))],
                );
                let contains = placed.output.windows(text.len().max(1)).any(|w| w == text);
                (contains && placed.output != *output).then(|| choice_bytes(&placed.used))
            };
            if !matches!(
                self.oracle.trial(self.settings, &mut variant),
                Trial::Abstract { .. }
            ) {
                break;
            }
            root = child;
            anywhere = true;
        }
        (root, anywhere)
    }

    /// The one child of `root` that stayed concrete, unless there are several, or a named hole
    /// outside it would lose its partner inside.
    fn sole_concrete_child<'n>(&self, root: &'n DerivationNode) -> Option<&'n DerivationNode> {
        let concrete: Vec<&DerivationNode> = root
            .children
            .iter()
            .filter_map(|part| match part {
                DerivationPart::Node(n) if !self.holes.contains_key(&n.index) => Some(n),
                _ => None,
            })
            .collect();
        let [child] = concrete[..] else { return None };
        let inside = child.index..child.index + child.preorder().len();
        let grouped_outside = root.preorder().iter().any(|n| {
            !inside.contains(&n.index)
                && self.holes.get(&n.index).is_some_and(|h| h.group.is_some())
        });
        (!grouped_outside).then_some(child)
    }

    /// Step 4, repetition: for each concrete node with a child of its own nonterminal (one
    /// layer of a recursion), whether the failure survives more such layers (it *repeats*) or
    /// the layer taken out (it *drops*). Returns the pattern tree and its layers.
    fn find_layers(&mut self, root: &DerivationNode) -> (PatternTree, Vec<Layer>) {
        let tree = pattern_of(self.inputs, root, &self.original.output, &self.holes);
        let tree_nodes = tree.preorder();
        let mut layers = Vec::new();
        for (at, node) in pattern_nodes(root, &self.holes).into_iter().enumerate() {
            let recursive = node
                .children
                .iter()
                .enumerate()
                .find_map(|(part, p)| match p {
                    DerivationPart::Node(child) if child.symbol == node.symbol => {
                        Some((part, child))
                    }
                    _ => None,
                });
            let Some((part, child)) = recursive else {
                continue;
            };
            if self.oracle.stopped || self.holes.contains_key(&node.index) {
                continue;
            }
            let (repeats, drops) = self.layer_behaviour(node, child);
            if let (
                true,
                PatternTree::Node {
                    symbol, children, ..
                },
            ) = (repeats || drops, tree_nodes[at])
            {
                let mut text = String::new();
                for (i, c) in children.iter().enumerate() {
                    if i == part {
                        text.push_str(symbol);
                    } else {
                        c.write(&mut text);
                    }
                }
                layers.push(Layer {
                    node: at,
                    part,
                    text,
                    repeats,
                    drops,
                });
            }
        }
        (tree, layers)
    }

    /// Whether the failure of the layer `node` around `child` survives one, two and three more
    /// layers (repeats), and the layer taken out (drops).
    fn layer_behaviour(&mut self, node: &DerivationNode, child: &DerivationNode) -> (bool, bool) {
        let outer = choices_in(&self.base, node.choices.start..child.choices.start).to_vec();
        let inner = choices_in(&self.base, child.choices.clone()).to_vec();
        let after = choices_in(&self.base, child.choices.end..node.choices.end).to_vec();
        let mut fails_alike = |layered: Vec<u32>| {
            let derived = self
                .inputs
                .derive_spliced(&self.base, vec![(node, RandomChoices::replaying(&layered))]);
            if derived.output == self.original.output {
                return Some(false);
            }
            self.oracle.shows(&choice_bytes(&derived.used))
        };
        let drops = fails_alike(inner.clone()) == Some(true);
        let repeats = (2..=4).all(|layers| {
            let mut layered = outer.repeat(layers);
            layered.extend_from_slice(&inner);
            layered.extend(after.repeat(layers));
            fails_alike(layered) == Some(true)
        });
        (repeats, drops)
    }
}

/// The choices of `range` (the used choices a node's subtree took), clamped to `base`.
fn choices_in(base: &[u32], range: std::ops::Range<usize>) -> &[u32] {
    &base[range.start.min(base.len())..range.end.min(base.len())]
}

/// The derivation nodes under `root` that the pattern has (expansions and holes, not what a
/// hole covers), in the preorder of [`PatternTree::preorder`].
fn pattern_nodes<'t>(
    root: &'t DerivationNode,
    holes: &HashMap<usize, Hole>,
) -> Vec<&'t DerivationNode> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        out.push(node);
        if holes.contains_key(&node.index) {
            continue;
        }
        for part in node.children.iter().rev() {
            if let DerivationPart::Node(child) = part {
                stack.push(child);
            }
        }
    }
    out
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
