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

    /// The ASCII bytes the target accepts in place of the byte at `at`.
    fn accepted_bytes(&mut self, instance: &Instance, at: usize) -> Vec<u8> {
        let original = self.inputs[instance.input][at];
        let mut set = Vec::new();
        for byte in 0..=127u8 {
            if byte == original || {
                let candidate = self.edited(instance, at, at + 1, &[byte]);
                self.parsed_alike(instance.input, &candidate)
            } {
                set.push(byte);
            }
        }
        if !set.contains(&original) {
            set.push(original);
            set.sort_unstable();
        }
        set
    }

    fn class_id(&mut self, name: &str, set: Vec<u8>) -> usize {
        if let Some(id) = self.rules.classes.iter().position(|(_, c)| *c == set) {
            return id;
        }
        self.rules.classes.push((name.to_owned(), set));
        self.rules.classes.len() - 1
    }

    /// Bytes to classes and runs; returns the items with the instance's spans to match.
    fn classify(
        &mut self,
        name: &str,
        items: &[Item],
        instance: Instance,
    ) -> (Vec<Item>, Instance) {
        let sets: Vec<Option<Vec<u8>>> = items
            .iter()
            .zip(&instance.spans)
            .map(|(item, span)| match item {
                Item::Byte(_) => Some(self.accepted_bytes(&instance, span.0)),
                _ => None,
            })
            .collect();
        let mut out_items = Vec::new();
        let mut out_spans = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let Some(set) = sets[i].as_ref().filter(|set| set.len() > 1) else {
                i = self.literal_run(name, items, &instance, i, &mut out_items, &mut out_spans);
                continue;
            };
            let mut class = set.clone();
            let mut end = i + 1;
            while let (Some(Item::Byte(here)), Some(Some(next))) = (items.get(end), sets.get(end)) {
                let Item::Byte(previous) = items[end - 1] else {
                    break;
                };
                if next.len() < 2 || !next.contains(&previous) || !class.contains(here) {
                    break;
                }
                class.retain(|b| next.contains(b));
                end += 1;
            }
            let run = &items[i..end];
            if !run
                .iter()
                .all(|item| matches!(item, Item::Byte(b) if class.contains(b)))
            {
                class = set.clone();
                end = i + 1;
            }
            let (from, to) = (instance.spans[i].0, instance.spans[end - 1].1);
            let many = self.runs_repeat(&instance, from, to, &class);
            let id = self.class_id(name, class);
            if many {
                out_items.push(Item::Class {
                    class: id,
                    many: true,
                });
                out_spans.push((from, to));
            } else {
                for k in i..end {
                    out_items.push(Item::Class {
                        class: id,
                        many: false,
                    });
                    out_spans.push(instance.spans[k]);
                }
            }
            i = end;
        }
        let instance = Instance {
            input: instance.input,
            spans: out_spans,
        };
        (out_items, instance)
    }

    /// Copies `items[i]`, or the run of one byte that starts there (`"   "`) as a run of
    /// that byte if the target takes one and three more; returns where the next item starts.
    fn literal_run(
        &mut self,
        name: &str,
        items: &[Item],
        instance: &Instance,
        i: usize,
        out_items: &mut Vec<Item>,
        out_spans: &mut Vec<(usize, usize)>,
    ) -> usize {
        let Item::Byte(byte) = items[i] else {
            out_items.push(items[i].clone());
            out_spans.push(instance.spans[i]);
            return i + 1;
        };
        let end = i + items[i..]
            .iter()
            .take_while(|item| **item == Item::Byte(byte))
            .count();
        let (from, to) = (instance.spans[i].0, instance.spans[end - 1].1);
        if self.runs_repeat(instance, from, to, &[byte]) {
            let class = self.class_id(name, vec![byte]);
            out_items.push(Item::Class { class, many: true });
            out_spans.push((from, to));
        } else {
            out_items.extend_from_slice(&items[i..end]);
            out_spans.extend_from_slice(&instance.spans[i..end]);
        }
        end
    }

    /// Whether one byte of `class`, and a run three longer, are accepted at `from..to`.
    fn runs_repeat(&mut self, instance: &Instance, from: usize, to: usize, class: &[u8]) -> bool {
        let one = [self.inputs[instance.input][from]];
        let long: Vec<u8> = (0..to - from + 3)
            .map(|k| class[(k * 7 + 1) % class.len()])
            .collect();
        if to - from > 1 {
            let short_input = self.edited(instance, from, to, &one);
            if !self.check(&short_input) {
                return false;
            }
        }
        let long_input = self.edited(instance, from, to, &long);
        self.check(&long_input)
    }

    /// Finds repeated parts in `alternative`, checks them, and returns the alternatives that
    /// result (the repetition as a nonterminal, and the form without it).
    fn find_repeats(
        &mut self,
        name: &str,
        alternative: (Vec<Item>, Instance),
    ) -> Vec<(Vec<Item>, Instance)> {
        let mut done = Vec::new();
        let mut work = vec![alternative];
        while let Some((items, instance)) = work.pop() {
            if done.len() + work.len() > 16 {
                done.push((items, instance));
                continue;
            }
            match self.repeat_in(name, &items, &instance) {
                Some(split) => work.extend(split),
                None => done.push((items, instance)),
            }
        }
        done
    }

    /// The first repetition in `items` the target confirms, as two alternatives.
    fn repeat_in(
        &mut self,
        name: &str,
        items: &[Item],
        instance: &Instance,
    ) -> Option<[(Vec<Item>, Instance); 2]> {
        let n = items.len();
        for unit in 1..=LONGEST_UNIT {
            for separator in 0..=LONGEST_SEPARATOR {
                for start in 0..n {
                    let step = unit + separator;
                    if start + unit + step > n {
                        break;
                    }
                    let first = &items[start..start + unit];
                    if !first.iter().any(|item| !matches!(item, Item::Byte(_))) {
                        continue;
                    }
                    let mut end = start + unit;
                    while end + step <= n
                        && items[end + separator..end + step] == *first
                        && items[end..end + separator]
                            == items[start + unit..start + unit + separator]
                    {
                        end += step;
                    }
                    if end == start + unit {
                        continue;
                    }
                    if let Some(split) =
                        self.confirm_repeat(name, items, instance, start + unit, end, step)
                    {
                        return Some(split);
                    }
                }
            }
        }
        None
    }

    /// Checks that the repetitions at `items[from..to]` (each `step` items) can be left out and
    /// repeated twice more.
    fn confirm_repeat(
        &mut self,
        name: &str,
        items: &[Item],
        instance: &Instance,
        from: usize,
        to: usize,
        step: usize,
    ) -> Option<[(Vec<Item>, Instance); 2]> {
        let region = (instance.spans[from].0, instance.spans[to - 1].1);
        let last = self.inputs[instance.input][instance.spans[to - step].0..region.1].to_vec();
        let without = self.edited(instance, region.0, region.1, &[]);
        if !self.check(&without) {
            return None;
        }
        let mut more = last.clone();
        more.extend_from_slice(&last);
        let with_more = self.edited(instance, region.1, region.1, &more);
        if !self.check(&with_more) {
            return None;
        }
        let unit = items[to - step..to].to_vec();
        let repeat = match self.rules.repeats.iter().position(|(_, u)| *u == unit) {
            Some(index) => index,
            None => {
                self.rules.repeats.push((name.to_owned(), unit));
                self.rules.repeats.len() - 1
            }
        };
        let mut repeated = items[..from].to_vec();
        repeated.push(Item::Repeat(repeat));
        repeated.extend_from_slice(&items[to..]);
        let mut spans = instance.spans[..from].to_vec();
        spans.push(region);
        spans.extend_from_slice(&instance.spans[to..]);
        let repeated_instance = Instance {
            input: instance.input,
            spans,
        };
        let mut bare = items[..from].to_vec();
        bare.extend_from_slice(&items[to..]);
        let removed = region.1 - region.0;
        let mut spans = instance.spans[..from].to_vec();
        spans.extend(
            instance.spans[to..]
                .iter()
                .map(|&(a, b)| (a - removed, b - removed)),
        );
        self.inputs.push(without);
        let bare_instance = Instance {
            input: self.inputs.len() - 1,
            spans,
        };
        Some([(repeated, repeated_instance), (bare, bare_instance)])
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
