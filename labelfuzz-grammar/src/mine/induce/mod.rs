//! From parse trees to rules. A function is a nonterminal and the sequences of what its
//! invocations read (bytes, nested functions) are its alternatives; every generalisation of an
//! alternative is checked by running the target on an input changed accordingly:
//! - a byte becomes a character class: the bytes that, put in its place, the target accepts;
//! - adjacent bytes of one class become a run (`class+`) if one byte and a longer run are
//!   accepted in their place;
//! - a repeated part `A B A` (with an optional separator `B`) becomes `A (B A)*` if the target
//!   accepts the part without the repetitions and with two more.
//!
//! An alternative that an earlier, generalised one already matches costs no check.

use std::collections::{HashMap, HashSet};

use super::tree::{self, Node, Part, Trace};

mod generalize;

/// The target's verdict on an input: its trace if it accepts it, `None` if not.
pub type Accepts<'o> = &'o mut dyn FnMut(&[u8]) -> Option<Trace>;

/// One element of an alternative.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// This byte.
    Byte(u8),
    /// One byte of class `class` (an index into [`Rules::classes`]), or a run of them.
    Class {
        /// The class.
        class: usize,
        /// A run of one or more, not exactly one.
        many: bool,
    },
    /// An invocation of this function.
    Call(String),
    /// One or more repetitions of [`Rules::repeats`]`[index]`.
    Repeat(usize),
    /// This item or nothing.
    Optional(Box<Item>),
}

/// Where an alternative was seen: an input and the span of each item in it.
#[derive(Clone, Debug)]
struct Instance {
    input: usize,
    spans: Vec<(usize, usize)>,
}

/// One alternative of a nonterminal, with what supports it.
#[derive(Clone, Debug)]
pub struct Alternative {
    /// Its items.
    pub items: Vec<Item>,
    /// How many parse-tree nodes it matched.
    pub support: usize,
    /// How many target runs checked its generalisations.
    pub checks: usize,
    /// For each item, whether the input stayed valid without it.
    optional: Vec<bool>,
}

/// The rules mined so far.
#[derive(Debug, Default)]
pub struct Rules {
    /// Nonterminals (function names) in the order first seen, with their alternatives.
    pub nonterminals: Vec<(String, Vec<Alternative>)>,
    /// Character classes (sorted byte sets), each with the nonterminal it was first found in.
    pub classes: Vec<(String, Vec<u8>)>,
    /// Repeated parts, each with the nonterminal it was found in.
    pub repeats: Vec<(String, Vec<Item>)>,
}

/// Mines rules from trees, asking `accepts` whether the target takes a changed input.
pub struct Inducer<'o> {
    inputs: Vec<Vec<u8>>,
    accepts: Accepts<'o>,
    transparent: HashSet<String>,
    /// The parse tree of each input, with its shape: those given, and those of inputs found
    /// later, parsed when first needed.
    trees: HashMap<usize, (Node, String)>,
    rules: Rules,
    index: HashMap<String, usize>,
    /// Target runs so far.
    pub checks: usize,
}

/// Matching an alternative against a node gives up after this many steps (backtracking over
/// runs and repetitions).
const MATCH_BUDGET: usize = 10_000;
/// Longest repeated part looked for, and longest separator.
const LONGEST_UNIT: usize = 6;
const LONGEST_SEPARATOR: usize = 2;

impl<'o> Inducer<'o> {
    /// An inducer over `inputs` (the trees' inputs, by index).
    pub fn new(inputs: Vec<Vec<u8>>, transparent: HashSet<String>, accepts: Accepts<'o>) -> Self {
        Inducer {
            inputs,
            accepts,
            transparent,
            trees: HashMap::new(),
            rules: Rules::default(),
            index: HashMap::new(),
            checks: 0,
        }
    }

    /// Adds every node of `trees` (tree `i` is of input `i`), most frequent shapes first.
    pub fn add_trees(&mut self, trees: &[Node]) {
        let mut seen: Vec<(String, Vec<Item>, Instance)> = Vec::new();
        for (input, tree) in trees.iter().enumerate() {
            self.trees.insert(input, (tree.clone(), tree::shape(tree)));
            for node in tree.nodes() {
                let items = node
                    .parts
                    .iter()
                    .map(|part| match part {
                        Part::Byte(i) => Item::Byte(self.inputs[input][*i]),
                        Part::Node(child) => Item::Call(child.name.clone()),
                    })
                    .collect();
                let spans = node.parts.iter().map(Part::span).collect();
                seen.push((node.name.clone(), items, Instance { input, spans }));
            }
        }
        let mut counts: HashMap<(&str, &[Item]), usize> = HashMap::new();
        for (name, items, _) in &seen {
            *counts.entry((name.as_str(), items.as_slice())).or_default() += 1;
        }
        let mut order: Vec<usize> = (0..seen.len()).collect();
        order.sort_by_key(|&i| {
            let (name, items, _) = &seen[i];
            (
                std::cmp::Reverse(counts[&(name.as_str(), items.as_slice())]),
                items.len(),
            )
        });
        for i in order {
            let (name, items, instance) = seen[i].clone();
            self.add(&name, items, instance);
        }
    }

    /// The rules mined. Alternatives that differ only in optional items (ones the target
    /// accepted the input without, parsed alike otherwise) are merged: each such item becomes
    /// optional wherever one of them had it, so whitespace seen before a number in one sample
    /// and after it in another is allowed on both sides.
    #[must_use]
    pub fn finish(mut self) -> Rules {
        for (_, alternatives) in &mut self.rules.nonterminals {
            *alternatives = merge_optional(std::mem::take(alternatives));
        }
        self.rules
    }

    /// Which items of `items` (an alternative of `name`) the input of `instance` is still
    /// valid without, parsed as before but for the item (a `+` left alone before a number may
    /// be valid as a sign: that is another parse, and the item is not optional).
    fn optional_items(&mut self, name: &str, items: &[Item], instance: &Instance) -> Vec<bool> {
        let mut optional = vec![false; items.len()];
        if items.len() < 2 {
            return optional;
        }
        let Some((original, _)) = self.original(instance.input) else {
            return optional;
        };
        let original = original.clone();
        for (k, slot) in optional.iter_mut().enumerate() {
            let (from, to) = instance.spans[k];
            let mut expected = original.clone();
            if !tree::remove_span(&mut expected, name, from, to) {
                continue;
            }
            let without = self.edited(instance, from, to, &[]);
            *slot = self.parse_shape(&without) == Some(tree::shape(&expected));
        }
        optional
    }

    fn add(&mut self, name: &str, items: Vec<Item>, instance: Instance) {
        let slot = match self.index.get(name) {
            Some(&slot) => slot,
            None => {
                self.rules.nonterminals.push((name.to_owned(), Vec::new()));
                self.index
                    .insert(name.to_owned(), self.rules.nonterminals.len() - 1);
                self.rules.nonterminals.len() - 1
            }
        };
        let matched = (0..self.rules.nonterminals[slot].1.len()).find(|&a| {
            let mut budget = MATCH_BUDGET;
            self.matches(
                &self.rules.nonterminals[slot].1[a].items,
                &items,
                &mut budget,
            )
        });
        if let Some(a) = matched {
            self.rules.nonterminals[slot].1[a].support += 1;
            return;
        }
        let before = self.checks;
        let classed = self.classify(name, &items, instance);
        let found = self.find_repeats(name, classed);
        let checks = self.checks - before;
        for (items, instance) in found {
            let optional = self.optional_items(name, &items, &instance);
            let alternatives = &mut self.rules.nonterminals[slot].1;
            if let Some(same) = alternatives.iter_mut().find(|a| a.items == items) {
                same.support += 1;
                same.checks += checks;
            } else {
                alternatives.push(Alternative {
                    items,
                    support: 1,
                    checks,
                    optional,
                });
            }
        }
    }

    fn check(&mut self, input: &[u8]) -> bool {
        self.checks += 1;
        (self.accepts)(input).is_some()
    }

    /// Whether the target accepts `candidate` (a byte of input `of` changed) and parses it as
    /// it parsed the input: a byte that merges with its neighbours into another structure
    /// (a digit in place of a `+` between numbers) is no member of the `+`'s class.
    fn parsed_alike(&mut self, of: usize, candidate: &[u8]) -> bool {
        let Some(shape) = self.parse_shape(candidate) else {
            return false;
        };
        self.original(of)
            .is_some_and(|(_, original)| *original == shape)
    }

    /// The shape of `input`'s parse, if the target accepts it (one check).
    fn parse_shape(&mut self, input: &[u8]) -> Option<String> {
        self.checks += 1;
        let trace = (self.accepts)(input)?;
        Some(tree::shape(&tree::build(&trace, &self.transparent)))
    }

    /// The parse tree and shape of input `of`.
    fn original(&mut self, of: usize) -> Option<&(Node, String)> {
        if !self.trees.contains_key(&of) {
            let input = self.inputs[of].clone();
            self.checks += 1;
            let trace = (self.accepts)(&input)?;
            let tree = tree::build(&trace, &self.transparent);
            let shape = tree::shape(&tree);
            self.trees.insert(of, (tree, shape));
        }
        self.trees.get(&of)
    }

    /// Whether `pattern` (generalised items) matches `raw` (bytes and calls).
    fn matches(&self, pattern: &[Item], raw: &[Item], budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let Some((first, rest)) = pattern.split_first() else {
            return raw.is_empty();
        };
        match first {
            Item::Byte(_) | Item::Call(_) => {
                raw.first() == Some(first) && self.matches(rest, &raw[1..], budget)
            }
            Item::Class { class, many } => {
                let members = &self.rules.classes[*class].1;
                let run = raw
                    .iter()
                    .take_while(
                        |item| matches!(item, Item::Byte(b) if members.binary_search(b).is_ok()),
                    )
                    .count();
                let longest = if *many { run } else { run.min(1) };
                (1..=longest)
                    .rev()
                    .any(|n| self.matches(rest, &raw[n..], budget))
            }
            Item::Optional(inner) => {
                let mut with: Vec<Item> = vec![(**inner).clone()];
                with.extend_from_slice(rest);
                self.matches(&with, raw, budget) || self.matches(rest, raw, budget)
            }
            Item::Repeat(index) => {
                let unit = &self.rules.repeats[*index].1;
                let mut once: Vec<Item> = unit.clone();
                once.extend_from_slice(rest);
                let mut again: Vec<Item> = unit.clone();
                again.push(first.clone());
                again.extend_from_slice(rest);
                self.matches(&again, raw, budget) || self.matches(&once, raw, budget)
            }
        }
    }

    /// `input` of `instance` with `from..to` replaced by `with`.
    fn edited(&self, instance: &Instance, from: usize, to: usize, with: &[u8]) -> Vec<u8> {
        let input = &self.inputs[instance.input];
        let mut out = Vec::with_capacity(input.len() + with.len());
        out.extend_from_slice(&input[..from]);
        out.extend_from_slice(with);
        out.extend_from_slice(&input[to..]);
        out
    }
}

/// Groups alternatives by their required items and makes every optional item seen in a group
/// optional in the group's one alternative (see [`Inducer::finish`]).
fn merge_optional(alternatives: Vec<Alternative>) -> Vec<Alternative> {
    struct Group {
        core: Vec<Item>,
        gaps: Vec<Vec<Item>>,
        support: usize,
        checks: usize,
    }
    let mut groups: Vec<Group> = Vec::new();
    for alternative in alternatives {
        let core: Vec<Item> = alternative
            .items
            .iter()
            .zip(&alternative.optional)
            .filter(|(_, &optional)| !optional)
            .map(|(item, _)| item.clone())
            .collect();
        if core.is_empty() {
            // Every item optional, but only one at a time was tried: keep it as it is.
            let items = alternative.items.clone();
            groups.push(Group {
                gaps: vec![Vec::new(); items.len() + 1],
                core: items,
                support: alternative.support,
                checks: alternative.checks,
            });
            continue;
        }
        let at = match groups.iter().position(|group| group.core == core) {
            Some(at) => at,
            None => {
                groups.push(Group {
                    gaps: vec![Vec::new(); core.len() + 1],
                    core,
                    support: 0,
                    checks: 0,
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[at];
        group.support += alternative.support;
        group.checks += alternative.checks;
        // Optional items of one gap keep the order an alternative shows them in; one never
        // seen beside the others goes first.
        let (mut gap, mut cursor) = (0, 0);
        for (item, &optional) in alternative.items.iter().zip(&alternative.optional) {
            if !optional {
                gap += 1;
                cursor = 0;
            } else if let Some(at) = group.gaps[gap].iter().position(|known| known == item) {
                cursor = at + 1;
            } else {
                group.gaps[gap].insert(cursor, item.clone());
                cursor += 1;
            }
        }
    }
    groups
        .into_iter()
        .map(|group| {
            let mut items = Vec::new();
            for (gap, optional) in group.gaps.iter().enumerate() {
                items.extend(
                    optional
                        .iter()
                        .map(|item| Item::Optional(Box::new(item.clone()))),
                );
                if let Some(item) = group.core.get(gap) {
                    items.push(item.clone());
                }
            }
            let optional = vec![false; items.len()];
            Alternative {
                items,
                support: group.support,
                checks: group.checks,
                optional,
            }
        })
        .collect()
}
