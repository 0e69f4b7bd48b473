//! Parsing text into a choice sequence: the inverse of the [`Generator`](super::Generator).
//!
//! [`parse`] finds a derivation of the text with an Earley parser and reads off the choices the
//! generator would make to render it, so an existing input (a seed, a crash found elsewhere)
//! can enter grammar mode and be reduced like any generated one.
//!
//! Rules are flattened into bytes and nonterminals: text needs no tokenizer, and a token's text
//! may stop or start anywhere. Hooks are ignored: a hooked token parses as its context-free
//! expansion, so the result renders the text only with [`NoHooks`](super::NoHooks) (or hooks
//! that leave the output alone); what a hook writes in place of a token cannot be inverted.
//!
//! The depth limit is part of the language the generator can produce: deeper than `max_depth`
//! only a nonterminal's cheapest rules may be chosen. The parser tracks, for every item, the
//! *need* of its best derivation: how many levels of the subtree, counted from its root, must
//! lie within the limit. A subtree of cheapest rules needs 0; a node whose rule is not a
//! cheapest one needs at least 1; a node needs one level more than any child that needs any.
//! A node at depth `d` may use `max_depth + 1 - d` levels (none past the limit), so the root may
//! use `max_depth + 1`. Needs combine by maximum and derivations by minimum, both monotone,
//! which lets one chart pass compute them and the extraction avoid every dead end but cycles.
//!
//! Cost: Earley's, cubic in the text's length at worst and quadratic for unambiguous grammars,
//! with no shortcut for right recursion (Leo's items): a run of `L` bytes matched by a
//! right-recursive rule (a JSON string, a run of whitespace) takes `O(L²)` items. A 2 KB JSON
//! document of short strings parses in 10 to 20 ms (release build), a single 2 KB string in
//! 0.3 to 0.5 s. Extraction uses an explicit stack, so deep trees do not exhaust the thread's.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use super::{Grammar, Item, SymbolId};

/// Why a text could not be turned into a choice sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The text is not a sentence of the grammar. Its first `offset` bytes are the start of
    /// some sentence, but no sentence continues them with the byte at `offset` (or, when
    /// `offset` is the text's length, ends there).
    NoParse {
        /// Where parsing failed, in bytes from the start of the text.
        offset: usize,
        /// Up to 20 bytes before `offset`, escaped.
        before: String,
        /// Up to 20 bytes from `offset` on, escaped; empty when the text ended too early.
        after: String,
    },
    /// The text is a sentence of the grammar, but every derivation of it needs a tree deeper
    /// than the depth limit allows: the generator could not render it with this `max_depth`.
    TooDeep {
        /// The smallest depth limit under which the text can be rendered.
        needed: usize,
        /// The depth limit asked for.
        max_depth: usize,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoParse {
                offset,
                before,
                after,
            } if after.is_empty() => write!(
                f,
                "the text does not parse: it ends at byte {offset}, after `{before}`, where the \
                 grammar expects more"
            ),
            Self::NoParse {
                offset,
                before,
                after,
            } => write!(
                f,
                "the text does not parse at byte {offset}: no sentence of the grammar goes on \
                 from `{before}` to `{after}`"
            ),
            Self::TooDeep { needed, max_depth } => write!(
                f,
                "the text parses only with derivations deeper than --grammar-depth {max_depth} \
                 allows; --grammar-depth {needed} would do"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses `text` as a sentence of `grammar` and returns the choice sequence that makes
/// `Generator::new(grammar, max_depth)` (with [`NoHooks`](super::NoHooks)) render exactly
/// `text`.
///
/// Of the text's derivations it prefers, node by node in the order the generator reads them,
/// the smallest rule index, and never repeats a nonterminal over the same span along a path
/// (a unit cycle adds nothing to the text). Trailing zero choices are left out: the generator
/// takes choice 0 once the sequence runs out. Choices are rule indices: the fuzzer's one
/// choice per byte holds them only below 256.
///
/// Hooked tokens parse as their context-free expansion (see the module docs).
///
/// # Errors
/// [`ParseError::NoParse`] when the text is not a sentence of the grammar,
/// [`ParseError::TooDeep`] when it is one the generator cannot reach within `max_depth`.
pub fn parse(grammar: &Grammar, max_depth: usize, text: &[u8]) -> Result<Vec<u32>, ParseError> {
    let flat = Flat::new(grammar);
    let chart = Chart::build(&flat, grammar.start(), text)?;
    let whole = Span {
        symbol: grammar.start(),
        from: 0,
        to: text.len(),
    };
    let need = chart
        .need(whole)
        .ok_or_else(|| no_parse(text, text.len()))?;
    let budget = u32::try_from(max_depth).map_or(u32::MAX, |d| d.saturating_add(1));
    if need > budget {
        return Err(ParseError::TooDeep {
            needed: need as usize - 1,
            max_depth,
        });
    }
    let mut extractor = Extractor {
        chart: &chart,
        path: Vec::new(),
        out: Vec::new(),
    };
    let found = extractor.derive(whole, budget);
    // The chart's needs are those of cycle-free derivations (cutting a cycle out of a tree
    // never makes it need more), and the extraction searches all of them.
    assert!(
        found,
        "parse: no derivation within the need the chart computed"
    );
    let mut choices = extractor.out;
    while choices.last() == Some(&0) {
        choices.pop();
    }
    Ok(choices)
}

/// The error for a text that stops parsing at `offset`.
fn no_parse(text: &[u8], offset: usize) -> ParseError {
    const CONTEXT: usize = 20;
    let from = offset.saturating_sub(CONTEXT);
    let to = offset.saturating_add(CONTEXT).min(text.len());
    let mut before = excerpt(&text[from..offset]);
    if from > 0 {
        before.insert_str(0, "...");
    }
    let mut after = excerpt(&text[offset..to]);
    if to < text.len() {
        after.push_str("...");
    }
    ParseError::NoParse {
        offset,
        before,
        after,
    }
}

/// Bytes as readable text: printable ASCII as it is (quotes included, unlike
/// `escape_ascii`), everything else escaped.
fn excerpt(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte.is_ascii_graphic() || byte == b' ' {
            out.push(char::from(byte));
        } else {
            out.extend(byte.escape_ascii().map(char::from));
        }
    }
    out
}

/// Marks a nonterminal that derives no empty text.
const NOT_NULLABLE: u32 = u32::MAX;

/// What a node needs when one of its children needs `need` (see the module docs).
fn deeper(need: u32) -> u32 {
    if need == 0 {
        0
    } else {
        need.saturating_add(1)
    }
}

/// What follows the dot at a position of a flattened rule.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// A byte of text.
    Byte(u8),
    /// A nonterminal.
    Symbol(SymbolId),
    /// Nothing: the rule (its index in [`Flat::rules`]) is complete.
    End(usize),
}

/// A rule laid out in [`Flat::slots`].
#[derive(Clone, Debug)]
struct FlatRule {
    lhs: SymbolId,
    /// Position of its first slot (the dot before everything).
    start: usize,
    /// Position of its [`Slot::End`].
    end: usize,
    /// Its own need: 1 unless it is among the cheapest rules, the only ones allowed past the
    /// depth limit.
    base: u32,
}

/// The grammar with every rule flattened into one array of slots, so that an Earley item's
/// rule and dot are a single position.
#[derive(Debug)]
struct Flat {
    slots: Vec<Slot>,
    rules: Vec<FlatRule>,
    /// Each nonterminal's rules in [`Flat::rules`], in the grammar's order (choice order).
    by_symbol: Vec<Range<usize>>,
    /// How many leading rules of each nonterminal are allowed past the depth limit.
    cheap: Vec<usize>,
    /// The least need of an empty derivation of each nonterminal, or [`NOT_NULLABLE`].
    empty_need: Vec<u32>,
}

impl Flat {
    fn new(grammar: &Grammar) -> Self {
        let symbols = grammar.rules.len();
        let mut flat = Flat {
            slots: Vec::new(),
            rules: Vec::new(),
            by_symbol: Vec::with_capacity(symbols),
            cheap: Vec::with_capacity(symbols),
            empty_need: vec![NOT_NULLABLE; symbols],
        };
        for symbol in 0..symbols {
            let rules = grammar.rules(symbol);
            // Counted as the generator counts them, so that choice values agree.
            let cheap = rules.first().map_or(0, |first| {
                rules.iter().take_while(|r| r.cost == first.cost).count()
            });
            let first = flat.rules.len();
            for (index, rule) in rules.iter().enumerate() {
                let start = flat.slots.len();
                for token in &rule.tokens {
                    match &token.item {
                        Item::Text(bytes) => {
                            flat.slots.extend(bytes.iter().map(|&b| Slot::Byte(b)))
                        }
                        Item::Symbol(id) => flat.slots.push(Slot::Symbol(*id)),
                    }
                }
                let end = flat.slots.len();
                flat.slots.push(Slot::End(flat.rules.len()));
                flat.rules.push(FlatRule {
                    lhs: symbol,
                    start,
                    end,
                    base: u32::from(index >= cheap),
                });
            }
            flat.by_symbol.push(first..flat.rules.len());
            flat.cheap.push(cheap);
        }
        flat.find_empty_needs();
        flat
    }

    /// Least fixpoint over the rules made only of nullable nonterminals; needs only fall, so
    /// it ends.
    fn find_empty_needs(&mut self) {
        loop {
            let mut changed = false;
            for rule in &self.rules {
                let mut need = rule.base;
                for slot in &self.slots[rule.start..rule.end] {
                    match *slot {
                        Slot::Symbol(id) if self.empty_need[id] != NOT_NULLABLE => {
                            need = need.max(deeper(self.empty_need[id]));
                        }
                        _ => {
                            need = NOT_NULLABLE;
                            break;
                        }
                    }
                }
                if need < self.empty_need[rule.lhs] {
                    self.empty_need[rule.lhs] = need;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}

/// A hasher for the chart's small integer keys: with the standard one (SipHash) a parse takes
/// about twice as long, and its protection against chosen collisions buys nothing for
/// positions.
#[derive(Default)]
struct PositionHasher(u64);

impl Hasher for PositionHasher {
    fn finish(&self) -> u64 {
        // Bucket indexes come from the low bits, which a multiplication mixes least.
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type PositionMap<K, V> = HashMap<K, V, BuildHasherDefault<PositionHasher>>;

/// An Earley item: a rule position reached from `origin`, with the least need of the ways
/// found so far to reach it (the rule's own need and its complete children's).
#[derive(Clone, Copy, Debug)]
struct EarleyItem {
    pos: usize,
    origin: usize,
    need: u32,
}

/// What offering an item to a set did.
enum Offer {
    /// Added it, or it was there with no greater need.
    Settled,
    /// It was there at this index with a greater need, now lowered.
    Lowered(usize),
}

/// The items ending at one text position.
#[derive(Default, Debug)]
struct Set {
    items: Vec<EarleyItem>,
    index: PositionMap<(usize, usize), usize>,
    /// Items waiting for a nonterminal, by nonterminal (filled once the set is complete).
    waiting: Vec<(SymbolId, usize)>,
    /// Nonterminals completed here, by nonterminal and origin, with their least need (filled
    /// once the set is complete).
    done: Vec<(SymbolId, usize, u32)>,
}

impl Set {
    fn offer(&mut self, pos: usize, origin: usize, need: u32) -> Offer {
        match self.index.get(&(pos, origin)) {
            Some(&at) if need < self.items[at].need => {
                self.items[at].need = need;
                Offer::Lowered(at)
            }
            Some(_) => Offer::Settled,
            None => {
                self.index.insert((pos, origin), self.items.len());
                self.items.push(EarleyItem { pos, origin, need });
                Offer::Settled
            }
        }
    }

    fn need(&self, pos: usize, origin: usize) -> Option<u32> {
        self.index
            .get(&(pos, origin))
            .map(|&at| self.items[at].need)
    }

    fn waiting_on(&self, symbol: SymbolId) -> &[(SymbolId, usize)] {
        let from = self.waiting.partition_point(|&(s, _)| s < symbol);
        let to = self.waiting.partition_point(|&(s, _)| s <= symbol);
        &self.waiting[from..to]
    }

    fn done_for(&self, symbol: SymbolId) -> &[(SymbolId, usize, u32)] {
        let from = self.done.partition_point(|&(s, _, _)| s < symbol);
        let to = self.done.partition_point(|&(s, _, _)| s <= symbol);
        &self.done[from..to]
    }

    /// Indexes the complete set for the sets after it and for the extraction.
    fn seal(&mut self, flat: &Flat, done: PositionMap<(SymbolId, usize), u32>) {
        self.waiting = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(at, item)| match flat.slots[item.pos] {
                Slot::Symbol(id) => Some((id, at)),
                _ => None,
            })
            .collect();
        self.waiting.sort_unstable();
        self.done = done
            .into_iter()
            .map(|((symbol, origin), need)| (symbol, origin, need))
            .collect();
        self.done.sort_unstable();
    }
}

/// A nonterminal deriving `text[from..to]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    symbol: SymbolId,
    from: usize,
    to: usize,
}

/// The Earley chart of a text: one [`Set`] per position, from 0 to the text's length.
struct Chart<'a> {
    flat: &'a Flat,
    text: &'a [u8],
    sets: Vec<Set>,
}

impl<'a> Chart<'a> {
    /// Recognizes `text`, or says where it stops being a prefix of a sentence.
    fn build(flat: &'a Flat, start: SymbolId, text: &'a [u8]) -> Result<Self, ParseError> {
        let mut sets: Vec<Set> = Vec::with_capacity(text.len() + 1);
        let mut current = Set::default();
        for rule in &flat.rules[flat.by_symbol[start].clone()] {
            current.offer(rule.start, 0, rule.base);
        }
        // The set in which each nonterminal was last predicted.
        let mut predicted = vec![usize::MAX; flat.by_symbol.len()];
        for k in 0..=text.len() {
            let mut next = Set::default();
            let mut done: PositionMap<(SymbolId, usize), u32> = PositionMap::default();
            // Items already processed whose need fell since: processed again, so that the
            // lower need reaches everything built on them.
            let mut redo = Vec::new();
            let mut cursor = 0;
            loop {
                let at = if cursor < current.items.len() {
                    cursor += 1;
                    cursor - 1
                } else if let Some(at) = redo.pop() {
                    at
                } else {
                    break;
                };
                let EarleyItem { pos, origin, need } = current.items[at];
                let mut lowered = Vec::new();
                match flat.slots[pos] {
                    Slot::Byte(byte) => {
                        if text.get(k) == Some(&byte) {
                            // The next set is not processed yet: a lowered need is simply used.
                            next.offer(pos + 1, origin, need);
                        }
                    }
                    Slot::Symbol(symbol) => {
                        if predicted[symbol] != k {
                            predicted[symbol] = k;
                            for rule in &flat.rules[flat.by_symbol[symbol].clone()] {
                                current.offer(rule.start, k, rule.base);
                            }
                        }
                        // Aycock and Horspool: a nullable nonterminal may be skipped at once;
                        // its empty completions here then need not reach back into this set.
                        let empty = flat.empty_need[symbol];
                        if empty != NOT_NULLABLE {
                            let need = need.max(deeper(empty));
                            if let Offer::Lowered(at) = current.offer(pos + 1, origin, need) {
                                lowered.push(at);
                            }
                        }
                    }
                    Slot::End(rule) => {
                        let lhs = flat.rules[rule].lhs;
                        let best = done.entry((lhs, origin)).or_insert(u32::MAX);
                        // Only a better derivation of the span has anything new to pass on.
                        if need < *best {
                            *best = need;
                            if origin < k {
                                let parent = &sets[origin];
                                for &(_, waiting) in parent.waiting_on(lhs) {
                                    let item = parent.items[waiting];
                                    let need = item.need.max(deeper(need));
                                    if let Offer::Lowered(at) =
                                        current.offer(item.pos + 1, item.origin, need)
                                    {
                                        lowered.push(at);
                                    }
                                }
                            }
                        }
                    }
                }
                redo.extend(lowered.into_iter().filter(|&at| at < cursor));
            }
            current.seal(flat, done);
            let stuck = next.items.is_empty();
            sets.push(current);
            if k == text.len() {
                break;
            }
            if stuck {
                return Err(no_parse(text, k));
            }
            current = next;
        }
        Ok(Chart { flat, text, sets })
    }

    /// The least need of a derivation of `span`, if it has one.
    fn need(&self, span: Span) -> Option<u32> {
        self.sets
            .get(span.to)?
            .done_for(span.symbol)
            .iter()
            .find(|&&(_, origin, _)| origin == span.from)
            .map(|&(_, _, need)| need)
    }

    /// Where the child before position `pos` of a rule that started at `origin` can start,
    /// given that it ends at `to`, within `budget` for the rule's node: one candidate for a
    /// byte, every feasible origin (nearest first) for a nonterminal.
    fn boundaries(&self, pos: usize, to: usize, origin: usize, budget: u32) -> Vec<Boundary> {
        let prefix = pos - 1;
        let fits = |set: usize| {
            self.sets[set]
                .need(prefix, origin)
                .is_some_and(|need| need <= budget)
        };
        match self.flat.slots[prefix] {
            Slot::Byte(byte) => {
                if to > origin && self.text[to - 1] == byte && fits(to - 1) {
                    vec![Boundary {
                        at: to - 1,
                        child: None,
                    }]
                } else {
                    Vec::new()
                }
            }
            Slot::Symbol(symbol) => {
                let child_budget = budget.saturating_sub(1);
                self.sets[to]
                    .done_for(symbol)
                    .iter()
                    .rev()
                    .filter(|&&(_, from, need)| {
                        need <= child_budget && from >= origin && fits(from)
                    })
                    .map(|&(_, from, _)| Boundary {
                        at: from,
                        child: Some(Span { symbol, from, to }),
                    })
                    .collect()
            }
            Slot::End(_) => Vec::new(),
        }
    }
}

/// Where a child starts, and the child if it is a nonterminal.
#[derive(Clone, Copy, Debug)]
struct Boundary {
    at: usize,
    child: Option<Span>,
}

/// One child of a rule, walking back from its end: the boundaries it may start at and which
/// one is being tried.
struct Step {
    /// The position after the child.
    pos: usize,
    boundaries: Vec<Boundary>,
    next: usize,
}

/// The ways to split a complete rule's span among its children, found one at a time by walking
/// back through the chart (depth first): an ambiguous rule can have very many, and the first
/// that works is usually the first found.
struct Splits {
    rule_start: usize,
    rule_end: usize,
    span: Span,
    budget: u32,
    stack: Vec<Step>,
    started: bool,
}

impl Splits {
    fn new(rule: &FlatRule, span: Span, budget: u32) -> Self {
        Splits {
            rule_start: rule.start,
            rule_end: rule.end,
            span,
            budget,
            stack: Vec::new(),
            started: false,
        }
    }

    /// The next split's nonterminal children, in order.
    fn next(&mut self, chart: &Chart<'_>) -> Option<Vec<Span>> {
        if !self.started {
            self.started = true;
            if self.rule_end == self.rule_start {
                return (self.span.from == self.span.to).then(Vec::new);
            }
            let boundaries =
                chart.boundaries(self.rule_end, self.span.to, self.span.from, self.budget);
            self.stack.push(Step {
                pos: self.rule_end,
                boundaries,
                next: 0,
            });
        }
        while let Some(step) = self.stack.last_mut() {
            let Some(&boundary) = step.boundaries.get(step.next) else {
                self.stack.pop();
                continue;
            };
            step.next += 1;
            let before = step.pos - 1;
            if before == self.rule_start {
                // The first child's start was checked against the rule's start item, which
                // exists only at the rule's origin.
                return Some(
                    self.stack
                        .iter()
                        .rev()
                        .filter_map(|s| s.boundaries[s.next - 1].child)
                        .collect(),
                );
            }
            let boundaries = chart.boundaries(before, boundary.at, self.span.from, self.budget);
            self.stack.push(Step {
                pos: before,
                boundaries,
                next: 0,
            });
        }
        None
    }
}

/// A node of the derivation being read out: its span, which rule and split it is trying, and
/// how many of that split's children are derived.
struct Node {
    span: Span,
    budget: u32,
    /// Where, in the path, the ancestors over the same span begin (those a cycle would return
    /// to).
    chain: usize,
    /// How many of the nonterminal's rules the generator allows here.
    allowed: usize,
    /// The rule being tried (an index among the nonterminal's rules, i.e. the choice).
    choice: usize,
    /// Its remaining splits; `None` before the first rule is tried.
    splits: Option<Splits>,
    /// The nonterminal children of the split being tried; `None` while there is none.
    children: Option<Vec<Span>>,
    derived: usize,
    /// The output's length before this node's choices, to undo a failed split.
    mark: usize,
}

/// Reads one derivation out of the chart, choices in the generator's order.
///
/// A depth-first search with backtracking, on an explicit stack: trees as deep as the text is
/// long (a list, a string) must not exhaust the thread's stack.
struct Extractor<'c, 'a> {
    chart: &'c Chart<'a>,
    /// The nonterminals on the path from the root to the current node.
    path: Vec<SymbolId>,
    out: Vec<u32>,
}

impl Extractor<'_, '_> {
    fn node(&self, span: Span, budget: u32, chain: usize) -> Node {
        let flat = self.chart.flat;
        Node {
            span,
            budget,
            chain,
            allowed: if budget > 0 {
                flat.by_symbol[span.symbol].len()
            } else {
                flat.cheap[span.symbol]
            },
            choice: 0,
            splits: None,
            children: None,
            derived: 0,
            mark: self.out.len(),
        }
    }

    /// Appends the choices of a derivation of `root` that fits in `budget` levels, never
    /// returning to a nonterminal over the same span along a path; false, with nothing
    /// appended, if there is none.
    fn derive(&mut self, root: Span, budget: u32) -> bool {
        let mut stack = vec![self.node(root, budget, 0)];
        self.path.push(root.symbol);
        // What the node last popped reported to its parent.
        let mut child_found: Option<bool> = None;
        while let Some(node) = stack.last_mut() {
            match child_found.take() {
                Some(true) => node.derived += 1,
                Some(false) => {
                    self.out.truncate(node.mark);
                    node.children = None;
                }
                None => {}
            }
            if node.children.is_none() && !self.next_split(node) {
                stack.pop();
                self.path.pop();
                child_found = Some(false);
                continue;
            }
            let children = node.children.as_deref().unwrap_or_default();
            let Some(&child) = children.get(node.derived) else {
                stack.pop();
                self.path.pop();
                child_found = Some(true);
                continue;
            };
            let same_span = child.from == node.span.from && child.to == node.span.to;
            let chain = if same_span {
                node.chain
            } else {
                self.path.len()
            };
            let child_budget = node.budget.saturating_sub(1);
            let child_node = self.node(child, child_budget, chain);
            stack.push(child_node);
            self.path.push(child.symbol);
        }
        child_found == Some(true)
    }

    /// Moves `node` on to its next split that does not close a cycle, trying its rules in
    /// choice order, and appends the choice; false when none is left.
    fn next_split(&mut self, node: &mut Node) -> bool {
        let chart = self.chart;
        let flat = chart.flat;
        let rules = &flat.rules[flat.by_symbol[node.span.symbol].clone()];
        loop {
            let splits = match &mut node.splits {
                Some(splits) => splits,
                None => {
                    // The first rule that fits, on the first call; the next one afterwards.
                    let Some(choice) = (node.choice..node.allowed).find(|&choice| {
                        chart.sets[node.span.to]
                            .need(rules[choice].end, node.span.from)
                            .is_some_and(|need| need <= node.budget)
                    }) else {
                        return false;
                    };
                    node.choice = choice;
                    node.splits
                        .insert(Splits::new(&rules[choice], node.span, node.budget))
                }
            };
            let Some(children) = splits.next(chart) else {
                node.splits = None;
                node.choice += 1;
                continue;
            };
            let closes_cycle = children.iter().any(|child| {
                child.from == node.span.from
                    && child.to == node.span.to
                    && self.path[node.chain..].contains(&child.symbol)
            });
            if closes_cycle {
                continue;
            }
            node.mark = self.out.len();
            if node.allowed > 1 {
                self.out
                    .push(u32::try_from(node.choice).unwrap_or(u32::MAX));
            }
            node.children = Some(children);
            node.derived = 0;
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::ASSIGNMENTS;
    use super::super::{ChoiceSequence, Generator, NoHooks};
    use super::*;

    const JSON: &str = include_str!("../../../fuzzers/json/grammar.json");

    /// Left recursion in two nonterminals, a prefix operator and parentheses.
    const EXPRESSIONS: &str = r#"{
        "<start>": [["<expr>"]],
        "<expr>": [["<expr>", "+", "<term>"], ["<expr>", "-", "<term>"], ["<term>"]],
        "<term>": [["<term>", "*", "<factor>"], ["<factor>"]],
        "<factor>": [["(", "<expr>", ")"], ["-", "<factor>"], ["<number>"]],
        "<number>": [["<number>", "<digit>"], ["<digit>"]],
        "<digit>": [{"chars": "0-9"}]
    }"#;

    /// Empty rules, nullable chains (`<b>` through `<c>`, `<a>` starting with `<b>`) and a unit
    /// cycle `<x>` -> `<y>` -> `<x>` that also passes through the nullable `<z>`.
    const NULLABLE: &str = r#"{
        "<start>": [["<a>", "<b>", "<x>", "<b>"]],
        "<a>": [[], ["<b>", "<a>", "a"]],
        "<b>": [["<c>"], ["b"]],
        "<c>": [[], ["<c>", "c"]],
        "<x>": [["<y>"], ["x", "<x>"]],
        "<y>": [["<x>"], ["y"], ["<z>"], ["<z>", "<x>", "z"]],
        "<z>": [["<x>", "z"], []]
    }"#;

    /// Concatenations and sums that split anywhere: most texts have many derivations.
    const AMBIGUOUS: &str = r#"{
        "<start>": [["<e>"]],
        "<e>": [["<e>", "<e>"], ["a"], ["<e>", "+", "<e>"], ["b"], ["<e>", "<e>", "<e>"]]
    }"#;

    fn grammar(json: &str) -> Grammar {
        Grammar::from_json(json).unwrap()
    }

    fn render(grammar: &Grammar, max_depth: usize, choices: &[u32]) -> Vec<u8> {
        Generator::new(grammar, max_depth).render(&mut ChoiceSequence::new(choices), &mut NoHooks)
    }

    /// Parses `text` and checks that its choices render it again.
    fn round_trip(grammar: &Grammar, max_depth: usize, text: &str) -> Vec<u32> {
        let choices =
            parse(grammar, max_depth, text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let rendered = render(grammar, max_depth, &choices);
        assert_eq!(
            String::from_utf8_lossy(&rendered),
            text,
            "choices {choices:?}"
        );
        choices
    }

    /// A deterministic pseudo-random source (xorshift64).
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn choices(&mut self, max_len: u64, max_value: u64) -> Vec<u32> {
            let len = self.next() % (max_len + 1);
            (0..len)
                .map(|_| u32::try_from(self.next() % max_value).unwrap())
                .collect()
        }
    }

    #[test]
    fn json_texts_round_trip() {
        let g = grammar(JSON);
        for text in [
            "0",
            "-0",
            "\"\"",
            "true",
            " \n\tnull\t\n ",
            "-12.5e+3",
            "1E10",
            "3.25e-07",
            "[]",
            "[ ]",
            "{}",
            "[1,[2,[3,[4,[]]]]]",
            "{\"a\":{\"b\":{\"c\":[true,false,null]}}}",
            "{ \"key\" : \"v a l\" , \"n\" :-0.5E-1 }",
            "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uABCD\"",
            "[\n  {\"id\": 1, \"tags\": [\"x\", \"y\"]},\n  {\"id\": 22, \"tags\": []}\n]\n",
        ] {
            round_trip(&g, 1000, text);
        }
    }

    #[test]
    fn the_cheapest_sentence_needs_no_choices() {
        let g = grammar(JSON);
        let cheapest = render(&g, 12, &[]);
        assert_eq!(cheapest, b"true");
        assert_eq!(parse(&g, 12, &cheapest), Ok(vec![]));
    }

    #[test]
    fn left_recursion_round_trips() {
        let g = grammar(EXPRESSIONS);
        for text in [
            "7",
            "1+2",
            "1-2-3+4",
            "12*34*5",
            "(1+2)*-3-4*(5)",
            "--(((9)))",
            "1234567890+0*0*0*0-10",
        ] {
            round_trip(&g, 100, text);
        }
    }

    #[test]
    fn empty_rules_nullable_chains_and_unit_cycles_round_trip() {
        let g = grammar(NULLABLE);
        for text in [
            "", "y", "z", "xxy", "b", "bb", "cc", "ccbaayb", "xzzz", "cbaaxyzb",
        ] {
            let choices = round_trip(&g, 50, text);
            // Going round a cycle adds choices but no text: a parse never does.
            assert!(choices.len() <= 4 * text.len() + 8, "{text:?}: {choices:?}");
        }
        let mut random = XorShift(0x5eed_0001);
        for _ in 0..300 {
            let choices = random.choices(30, 8);
            let text = render(&g, 10, &choices);
            let parsed = parse(&g, 10, &text).unwrap();
            assert_eq!(render(&g, 10, &parsed), text, "{choices:?} -> {parsed:?}");
        }
    }

    #[test]
    fn a_cycle_tried_first_is_left_for_the_way_out() {
        // `<y>`'s cheapest rule leads back to `<x>` over the same text: going round would
        // never reach the `p`.
        let g = grammar(
            r#"{
            "<start>": [["<x>"]],
            "<x>": [["a"], ["<y>"]],
            "<y>": [["<x>"], ["<p>"]],
            "<p>": [["p", "<d>"]],
            "<d>": [["<e>"]],
            "<e>": [["e"]]
        }"#,
        );
        assert_eq!(round_trip(&g, 10, "pe"), vec![1, 1]);
        assert_eq!(round_trip(&g, 10, "a"), Vec::<u32>::new());
    }

    #[test]
    fn ambiguous_texts_get_small_choices() {
        let g = grammar(AMBIGUOUS);
        // Rules cheapest first: `a`, `b`, `<e><e>`, `<e>+<e>`, `<e><e><e>`.
        assert_eq!(round_trip(&g, 20, "a"), Vec::<u32>::new());
        assert_eq!(round_trip(&g, 20, "b"), vec![1]);
        assert_eq!(round_trip(&g, 20, "ab"), vec![2, 0, 1]);
        for text in ["aaaa", "abba", "a+b", "a+ab+ba", "ababababab"] {
            let choices = round_trip(&g, 20, text);
            // The three-way split is never needed, and `+` only where the text has one.
            assert!(choices.iter().all(|&c| c <= 3), "{text}: {choices:?}");
            assert_eq!(
                text.contains('+'),
                choices.contains(&3),
                "{text}: {choices:?}"
            );
        }
    }

    #[test]
    fn hooked_tokens_parse_as_their_context_free_expansion() {
        let g = grammar(ASSIGNMENTS);
        round_trip(&g, 10, "a = 1;\nb = (a + 0) - z;\n");
    }

    #[test]
    fn texts_outside_the_language_say_where_they_stop() {
        let g = grammar(JSON);
        let offset = |text: &str| match parse(&g, 100, text.as_bytes()) {
            Err(ParseError::NoParse { offset, .. }) => offset,
            other => panic!("{text:?}: {other:?}"),
        };
        assert_eq!(offset("{\"a\": 1x}"), 7);
        assert_eq!(offset("{\"a\" 1}"), 5);
        assert_eq!(offset("[1, 2"), 5);
        assert_eq!(offset(""), 0);
        assert_eq!(offset("01"), 1);
        assert_eq!(offset("\"tab\there\""), 4);
        assert_eq!(offset("[1] [2]"), 4);
        let error = parse(&g, 100, b"{\"key\": [1, 2, 3, tru]}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the text does not parse at byte 21: no sentence of the grammar goes on from \
             `...\"key\": [1, 2, 3, tru` to `]}`"
        );
        let error = parse(&g, 100, b"[1, 2").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the text does not parse: it ends at byte 5, after `[1, 2`, where the grammar \
             expects more"
        );
        let error = parse(&g, 100, b"\xff").unwrap_err();
        assert!(error.to_string().contains("`\\xff`"), "{error}");
    }

    #[test]
    fn too_deep_texts_name_a_depth_that_works() {
        let g = grammar(JSON);
        let text = b"[[[[[[[[1]]]]]]]]";
        let Err(ParseError::TooDeep { needed, max_depth }) = parse(&g, 4, text) else {
            panic!("expected TooDeep");
        };
        // Each `[` puts `<value>`, `<array>`, `<elements>`, `<element>` on the path: the `1`'s
        // `<value>` is at depth 1 + 4 * 8, where only `true`, `false` and `null` (the cheapest
        // values) are allowed unless it is within the limit.
        assert_eq!((needed, max_depth), (33, 4));
        let message = parse(&g, 4, text).unwrap_err().to_string();
        assert!(
            message.contains(&format!("--grammar-depth {needed} would do")),
            "{message}"
        );
        // The depth named is the least that works.
        let choices = parse(&g, needed, text).unwrap();
        assert_eq!(render(&g, needed, &choices), text);
        assert_eq!(
            parse(&g, needed - 1, text),
            Err(ParseError::TooDeep {
                needed,
                max_depth: needed - 1
            })
        );
        // Past the limit only the cheapest rules may be chosen: the generator renders an empty
        // string there, however long the text asks for.
        assert!(matches!(
            parse(&g, 2, b"\"abcdefgh\""),
            Err(ParseError::TooDeep { .. })
        ));
    }

    #[test]
    fn generated_json_parses_back_to_the_same_text() {
        let g = grammar(JSON);
        let mut random = XorShift(0x0123_4567_89ab_cdef);
        for round in 0..500 {
            // Small values pick recursive rules often; large ones cover every alternative.
            let max_value = if round % 2 == 0 { 8 } else { 1 << 20 };
            let choices = random.choices(400, max_value);
            let text = render(&g, 12, &choices);
            let parsed = parse(&g, 12, &text)
                .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(&text)));
            assert_eq!(render(&g, 12, &parsed), text, "{choices:?} -> {parsed:?}");
            // Under a tighter limit the text parses, or the limit named is the least that works.
            match parse(&g, 3, &text) {
                Ok(parsed) => assert_eq!(render(&g, 3, &parsed), text),
                Err(ParseError::TooDeep { needed, .. }) => {
                    assert!((4..=12).contains(&needed), "{needed}");
                    let parsed = parse(&g, needed, &text).unwrap();
                    assert_eq!(render(&g, needed, &parsed), text);
                    assert!(matches!(
                        parse(&g, needed - 1, &text),
                        Err(ParseError::TooDeep { .. })
                    ));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn a_two_kilobyte_document_parses() {
        let g = grammar(JSON);
        let mut text = String::from("{\"items\": [\n");
        let mut i = 0;
        while text.len() < 2000 {
            if i > 0 {
                text.push_str(",\n");
            }
            text.push_str(&format!(
                "  {{\"id\": {i}, \"name\": \"item {i}\", \"price\": {i}.5e-2, \
                 \"tags\": [\"a\", \"b\\n\"], \"ok\": true, \"next\": null}}"
            ));
            i += 1;
        }
        text.push_str("\n]}\n");
        let Err(ParseError::TooDeep { needed, .. }) = parse(&g, 12, text.as_bytes()) else {
            panic!("a long list needs more than depth 12");
        };
        round_trip(&g, needed, &text);
    }
}
