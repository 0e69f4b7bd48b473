//! The seed's reduction experiment, reproduced (docs/reduction.md prints its output).
//!
//! The seed generated assignment programs from random choice sequences (`lf.py N`), kept those
//! with nested parentheses (`((` and `))`), and reduced the choice sequence with a simple ddmin
//! and a variant that replaces a deleted chunk by a NOP (`-1`: "this nonterminal's default").
//! Its four printed starts are rebuilt here from their text (the generator below is the
//! seed's: rules in its order, one choice per nonterminal, `lst[c % len]`, the variable hooks)
//! and reduced by six reducers on the same choice sequences and the same property:
//!
//! - the seed's simple ddmin and its NOP variant (each repeated until no shorter, as the seed's
//!   driver does);
//! - Zeller's ddmin (`labelfuzz_grammar::grammar::ddmin`);
//! - labelfuzz's reducer (`labelfuzz_grammar::grammar::reduce`), with this generator as its renderer;
//! - ddmin on the text (the property judges any string);
//! - a tree-level reducer in the style of HDD: level by level, ddmin over the derivation's nodes
//!   keeps the fewest concrete, the others become their nonterminal's default text.
//!
//! Then the same on many random starts (the seed's `randrange(10)` choices), with medians.

use labelfuzz_core::shrink::Verdict;
use labelfuzz_grammar::grammar::{ddmin, reduce, Derivation};

/// The seed's four printed starts (`lf.py 1`, `5`, `9`, `16`) and the choice counts it printed.
const SEED_STARTS: [(&str, usize); 4] = [
    (
        "e = (((00 - (00 + 00) - 0))) - (1);\nf = e + e - e + ((e)) + e + (0) + e - (1);\ng = f;\nj = (e);\n",
        61,
    ),
    (
        "i = (00) + ((00) + 00 - 1 - 0 + 00 - ((00 - 1) - ((00)))) + 00 + 00 + ((1));\n",
        40,
    ),
    (
        "e = ((00 + (1) + 00 + 0));\nh = ((e)) - (e) - 1 - e - 1 - 1 - 0 + e - ((0 + 1)) - 1 - e + e - e + 1 - e;\n",
        71,
    ),
    ("e = 00 - (1 - 00 + 0 + (0) + 00 + 0);\nj = ((0)) + e;\n", 33),
];

/// The seed's depth limit (its `LimitFuzzer` default): deeper, only the cheapest rules.
const MAX_DEPTH: usize = 10;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sym {
    Start,
    Assignments,
    Assign,
    Expr,
    Digit,
    Var,
}

impl Sym {
    /// The NOP variant's default text.
    fn default_text(self) -> &'static str {
        match self {
            Sym::Start | Sym::Assignments => "a=0;\n",
            Sym::Assign => "a=0",
            Sym::Expr | Sym::Digit | Sym::Var => "0",
        }
    }
}

/// A node of the seed generator's derivation (for the tree reducer).
#[derive(Clone, Debug)]
struct Node {
    sym: Sym,
    depth: usize,
    output: std::ops::Range<usize>,
    parent: Option<usize>,
}

/// The seed's generator over a choice sequence. `None` for a choice means "ran out".
struct SeedGen<'c> {
    choices: &'c [i64],
    next: usize,
    vars: Vec<String>,
    pending: Vec<String>,
    out: String,
    nodes: Vec<Node>,
    /// The choices read, normalized (`c % len`; -1 kept).
    used: Vec<i64>,
}

/// Ran out of choices (the seed's `IndexError`).
struct Exhausted {
    /// How many alternatives the unanswered choice had.
    options: usize,
    partial: String,
}

impl<'c> SeedGen<'c> {
    fn render(choices: &'c [i64]) -> Result<SeedGen<'c>, Exhausted> {
        let mut g = SeedGen {
            choices,
            next: 0,
            vars: Vec::new(),
            pending: Vec::new(),
            out: String::new(),
            nodes: Vec::new(),
            used: Vec::new(),
        };
        match g.expand(Sym::Start, 0, None) {
            Ok(()) => Ok(g),
            Err(options) => Err(Exhausted {
                options,
                partial: g.out,
            }),
        }
    }

    /// The next choice among `n` options: `Some(index)`, or `None` for a NOP.
    fn select(&mut self, n: usize) -> Result<Option<usize>, usize> {
        let Some(&c) = self.choices.get(self.next) else {
            return Err(n);
        };
        self.next += 1;
        if c < 0 {
            self.used.push(-1);
            return Ok(None);
        }
        let index = (c as usize) % n;
        self.used.push(index as i64);
        Ok(Some(index))
    }

    fn expand(&mut self, sym: Sym, depth: usize, parent: Option<usize>) -> Result<(), usize> {
        let at = self.nodes.len();
        let start = self.out.len();
        self.nodes.push(Node {
            sym,
            depth,
            output: start..start,
            parent,
        });
        let deep = depth > MAX_DEPTH;
        // Rule lists in the seed's order; past the depth limit only the cheapest ones.
        let count = match sym {
            Sym::Start | Sym::Assign => 1,
            Sym::Assignments => {
                if deep {
                    1
                } else {
                    2
                }
            }
            Sym::Expr => {
                if deep {
                    2
                } else {
                    5
                }
            }
            Sym::Digit => 2,
            Sym::Var => 26,
        };
        let Some(rule) = self.select(count)? else {
            self.out.push_str(sym.default_text());
            self.nodes[at].output = start..self.out.len();
            return Ok(());
        };
        match sym {
            Sym::Start => self.expand(Sym::Assignments, depth + 1, Some(at))?,
            Sym::Assignments => {
                self.expand(Sym::Assign, depth + 1, Some(at))?;
                self.out.push_str(";\n");
                self.vars.append(&mut self.pending);
                if rule == 1 {
                    self.expand(Sym::Assignments, depth + 1, Some(at))?;
                }
            }
            Sym::Assign => {
                let var_start = self.out.len();
                self.expand(Sym::Var, depth + 1, Some(at))?;
                self.pending.push(self.out[var_start..].to_string());
                self.out.push_str(" = ");
                self.expand(Sym::Expr, depth + 1, Some(at))?;
            }
            Sym::Expr => {
                // Past the limit the cheapest rules are [<var>] and [<digit>], in that order.
                let rule = if deep { rule + 3 } else { rule };
                match rule {
                    0 | 1 => {
                        self.expand(Sym::Expr, depth + 1, Some(at))?;
                        self.out.push_str(if rule == 0 { " + " } else { " - " });
                        self.expand(Sym::Expr, depth + 1, Some(at))?;
                    }
                    2 => {
                        self.out.push('(');
                        self.expand(Sym::Expr, depth + 1, Some(at))?;
                        self.out.push(')');
                    }
                    3 => {
                        // The `defined_var` hook replaces the <var> expansion.
                        if self.vars.is_empty() {
                            self.out.push_str("00");
                        } else {
                            let name = match self.select(self.vars.len())? {
                                Some(i) => self.vars[i].clone(),
                                None => "000".to_string(),
                            };
                            self.out.push_str(&name);
                        }
                    }
                    _ => self.expand(Sym::Digit, depth + 1, Some(at))?,
                }
            }
            Sym::Digit => self.out.push(if rule == 0 { '0' } else { '1' }),
            Sym::Var => self.out.push(char::from(b'a' + rule as u8)),
        }
        self.nodes[at].output = start..self.out.len();
        Ok(())
    }
}

fn nested_parens(text: &str) -> bool {
    text.contains("((") && text.contains("))")
}

/// The text of a choice sequence, `None` when it runs out (the seed's predicate is then false).
fn text_of(choices: &[i64]) -> Option<String> {
    SeedGen::render(choices).ok().map(|g| g.out)
}

fn holds(choices: &[i64]) -> bool {
    text_of(choices).is_some_and(|t| nested_parens(&t))
}

/// The seed-style choice sequence that renders `text` (depth-first search over the choices,
/// pruned as soon as the output stops being a prefix of `text`).
fn choices_for(text: &str) -> Option<Vec<i64>> {
    fn search(prefix: &mut Vec<i64>, text: &str, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        match SeedGen::render(prefix) {
            Ok(g) => g.out == text,
            Err(exhausted) => {
                if !text.starts_with(&exhausted.partial) {
                    return false;
                }
                for c in 0..exhausted.options as i64 {
                    prefix.push(c);
                    if search(prefix, text, budget) {
                        return true;
                    }
                    prefix.pop();
                }
                false
            }
        }
    }
    let mut prefix = Vec::new();
    let mut budget = 2_000_000;
    search(&mut prefix, text, &mut budget).then_some(prefix)
}

/// The seed's simple ddmin (remove chunks, halve), repeated until no shorter, as its driver.
fn seed_ddmin(start: &[i64], nop: bool, calls: &mut usize) -> Vec<i64> {
    let mut test = |c: &[i64]| {
        *calls += 1;
        holds(c)
    };
    let once = |current: Vec<i64>, test: &mut dyn FnMut(&[i64]) -> bool| {
        let mut current = current;
        let (mut start, mut part) = (0usize, current.len() / 2);
        while part >= 1 {
            let mut found = None;
            let mut i = start;
            while i < current.len() {
                let stitched: Vec<i64> = if !nop {
                    [&current[..i], &current[(i + part).min(current.len())..]].concat()
                } else if i > 0 {
                    [
                        &current[..i - 1],
                        &[-1][..],
                        &current[(i + part).min(current.len())..],
                    ]
                    .concat()
                } else {
                    [&[-1][..], &current[(part + 1).min(current.len())..]].concat()
                };
                if test(&stitched) {
                    found = Some((i, stitched));
                    break;
                }
                i += part;
            }
            match found {
                Some((at, stitched)) => {
                    start = at;
                    current = stitched;
                    if current.is_empty() {
                        return current;
                    }
                }
                None => {
                    start = 0;
                    part /= 2;
                }
            }
        }
        current
    };
    let mut current = once(start.to_vec(), &mut test);
    loop {
        let next = once(current.clone(), &mut test);
        if next.len() >= current.len() {
            return current;
        }
        current = next;
    }
}

/// One reducer's results over many starts: its name, then per start the choices left, the
/// result's length and the property calls.
type Outcomes = (&'static str, Vec<usize>, Vec<usize>, Vec<usize>);

/// One reducer's result.
struct Reduced {
    choices: Option<usize>,
    text: String,
    calls: usize,
}

fn reducers(start: &[i64], text: &str) -> Vec<(&'static str, Reduced)> {
    let mut rows = Vec::new();
    for (name, nop) in [("seed's ddmin", false), ("seed's ddmin + NOP", true)] {
        let mut calls = 0;
        let result = seed_ddmin(start, nop, &mut calls);
        rows.push((
            name,
            Reduced {
                choices: Some(result.len()),
                text: text_of(&result).unwrap_or_default(),
                calls,
            },
        ));
    }
    let unsigned: Vec<u32> = start.iter().map(|&c| c as u32).collect();
    let as_signed = |c: &[u32]| c.iter().map(|&x| i64::from(x)).collect::<Vec<_>>();
    let mut calls = 0;
    let zeller = ddmin(&unsigned, &mut |c: &[u32]| {
        calls += 1;
        holds(&as_signed(c))
    });
    rows.push((
        "Zeller's ddmin",
        Reduced {
            choices: Some(zeller.choices.len()),
            text: text_of(&as_signed(&zeller.choices)).unwrap_or_default(),
            calls: zeller.calls,
        },
    ));
    let mut render = |c: &[u32]| {
        // Choices past the end are the generator's: run out means "take the first rule" for
        // labelfuzz's reducer, so the sequence is completed with zeros as it renders.
        let mut padded = as_signed(c);
        loop {
            match SeedGen::render(&padded) {
                Ok(g) => {
                    return Derivation {
                        used: g.used.iter().map(|&x| x as u32).collect(),
                        output: g.out.into_bytes(),
                    }
                }
                Err(_) => padded.push(0),
            }
        }
    };
    let ours = reduce(&unsigned, &mut render, &mut |d: &Derivation| {
        Verdict::from(nested_parens(&String::from_utf8_lossy(&d.output)))
    });
    let ours_text = String::from_utf8(render(&ours.choices).output).unwrap_or_default();
    rows.push((
        "labelfuzz's reducer",
        Reduced {
            choices: Some(ours.choices.len()),
            text: ours_text,
            calls: ours.calls,
        },
    ));
    let bytes: Vec<u32> = text.bytes().map(u32::from).collect();
    let on_text = ddmin(&bytes, &mut |c: &[u32]| {
        let s: String = c.iter().map(|&b| char::from(b as u8)).collect();
        nested_parens(&s)
    });
    rows.push((
        "ddmin on the text",
        Reduced {
            choices: None,
            text: on_text
                .choices
                .iter()
                .map(|&b| char::from(b as u8))
                .collect(),
            calls: on_text.calls,
        },
    ));
    rows.push(("tree levels (HDD-style)", hdd(start)));
    rows
}

/// HDD-style: for each depth, ddmin over that depth's nodes (inside nodes still concrete)
/// keeps the fewest concrete; the others become their default text.
fn hdd(start: &[i64]) -> Reduced {
    let g = SeedGen::render(start).ok().expect("the start renders");
    let text = g.out.clone();
    let nodes = g.nodes;
    let mut defaulted: Vec<usize> = Vec::new();
    let render = |defaulted: &[usize]| -> String {
        // Replace outermost defaulted ranges, back to front.
        let mut ranges: Vec<(std::ops::Range<usize>, &str)> = defaulted
            .iter()
            .map(|&n| (nodes[n].output.clone(), nodes[n].sym.default_text()))
            .collect();
        ranges.sort_by_key(|(r, _)| r.start);
        let mut out = String::new();
        let mut at = 0;
        for (range, replacement) in ranges {
            if range.start < at {
                continue;
            }
            out.push_str(&text[at..range.start]);
            out.push_str(replacement);
            at = range.end;
        }
        out.push_str(&text[at..]);
        out
    };
    let inside_defaulted = |n: usize, defaulted: &[usize]| {
        let mut p = nodes[n].parent;
        while let Some(q) = p {
            if defaulted.contains(&q) {
                return true;
            }
            p = nodes[q].parent;
        }
        false
    };
    let mut calls = 0;
    let deepest = nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    for depth in 0..=deepest {
        let level: Vec<u32> = (0..nodes.len())
            .filter(|&n| nodes[n].depth == depth && !inside_defaulted(n, &defaulted))
            .map(|n| n as u32)
            .collect();
        if level.is_empty() {
            continue;
        }
        // ddmin over the nodes kept concrete; the rest of the level is defaulted.
        let kept = ddmin(&level, &mut |keep: &[u32]| {
            calls += 1;
            let mut trial = defaulted.clone();
            trial.extend(
                level
                    .iter()
                    .filter(|n| !keep.contains(n))
                    .map(|&n| n as usize),
            );
            nested_parens(&render(&trial))
        });
        let mut trial = defaulted.clone();
        trial.extend(
            level
                .iter()
                .filter(|n| !kept.choices.contains(n))
                .map(|&n| n as usize),
        );
        if nested_parens(&render(&trial)) {
            defaulted = trial;
        }
    }
    Reduced {
        choices: None,
        text: render(&defaulted),
        calls,
    }
}

fn show(text: &str) -> String {
    format!("`{}`", text.trim_end().replace('\n', "⏎ "))
}

fn median(mut values: Vec<usize>) -> usize {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// The section's Markdown.
fn run() -> String {
    let mut text = String::from(
        "### The seed's reduction experiment\n\n\
         Generated by `cargo run --release -p labelfuzz-grammar --example reduction`. Property: the text has `((` and \
         `))`. Choices are the seed's (one per nonterminal, its rule order); `-1` is the NOP.\n\n\
         | start | reducer | choices | result | property calls |\n|---|---|---|---|---|\n",
    );
    for (number, (start_text, printed)) in SEED_STARTS.iter().enumerate() {
        let Some(start) = choices_for(start_text) else {
            text.push_str(&format!(
                "| {} | (not rebuilt from its text) | | | |\n",
                number + 1
            ));
            continue;
        };
        assert!(holds(&start), "start {} shows the property", number + 1);
        text.push_str(&format!(
            "| {} ({} choices; the seed printed {printed}) | original | {} | {} | |\n",
            number + 1,
            start.len(),
            start.len(),
            show(start_text)
        ));
        for (name, reduced) in reducers(&start, start_text) {
            text.push_str(&format!(
                "| | {name} | {} | {} | {} |\n",
                reduced
                    .choices
                    .map_or("—".to_string(), |c| format!("{} → {c}", start.len())),
                show(&reduced.text),
                reduced.calls
            ));
        }
    }
    // Many random starts, as the seed drew them (`randrange(10)` per choice).
    let mut per_reducer: Vec<Outcomes> = Vec::new();
    let mut starts = 0;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut attempts = 0;
    while starts < 200 && attempts < 100_000 {
        attempts += 1;
        let mut choices = Vec::new();
        let rendered = loop {
            match SeedGen::render(&choices) {
                Ok(g) => break Some(g.out),
                Err(_) if choices.len() > 400 => break None,
                Err(_) => {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    choices.push((state % 10) as i64);
                }
            }
        };
        let Some(rendered) = rendered else { continue };
        if !nested_parens(&rendered) {
            continue;
        }
        starts += 1;
        for (i, (name, reduced)) in reducers(&choices, &rendered).into_iter().enumerate() {
            if per_reducer.len() <= i {
                per_reducer.push((name, Vec::new(), Vec::new(), Vec::new()));
            }
            let row = &mut per_reducer[i];
            row.1.push(reduced.choices.unwrap_or(0));
            row.2.push(reduced.text.len());
            row.3.push(reduced.calls);
        }
    }
    text.push_str(&format!(
        "\n{starts} random starts (choices drawn as the seed drew them, kept when they show the \
         property), medians:\n\n| reducer | choices after | result length (bytes) | property \
         calls |\n|---|---|---|---|\n"
    ));
    for (name, choices, lengths, calls) in per_reducer {
        let choices = if choices.iter().all(|&c| c == 0) {
            "—".to_string()
        } else {
            median(choices).to_string()
        };
        text.push_str(&format!(
            "| {name} | {choices} | {} | {} |\n",
            median(lengths),
            median(calls)
        ));
    }
    text
}

fn main() {
    print!("{}", run());
}
