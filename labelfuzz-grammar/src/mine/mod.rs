//! Grammars mined from the parser itself (seed 002; Mimid, Gopinath, Mathis and Zeller, 2020).
//!
//! A hand-written parser already encodes its grammar: the function that reads an input byte
//! last is the one whose rule produced it, and the nesting of those functions is a parse tree.
//! A mining build records that for every input ([`Trace`]); [`mine`] turns the traces into
//! [parse trees](tree::parse_trees), the trees into rules (one nonterminal per function, or per
//! group of its call sites where their subtrees do not swap: [`sites`]; its invocations'
//! contents as alternatives), generalises them where the target agrees
//! (character classes, runs, repetitions; see [`induce`]), and writes a grammar in labelfuzz's
//! JSON format.
//!
//! The target decides what is valid: `accepts(input)` runs it (the engine forks, and counts an
//! input valid when the harness neither rejected it nor crashed nor entered the function named
//! as the error path).

pub mod induce;
pub mod output;
pub mod sites;
pub mod tree;

pub use output::RuleSupport;
pub use tree::{parse_trees, Invocation, Node, Part, Trace};

use crate::grammar::{Grammar, GrammarError, GrammarInputs, RandomChoices};

/// A mined grammar, its JSON text and what supports each rule.
#[derive(Debug)]
pub struct Mined {
    /// The grammar.
    pub grammar: Grammar,
    /// Its JSON text (what `--grammar` reads).
    pub json: String,
    /// Each rule, with the nodes it matched and the checks it took.
    pub support: Vec<RuleSupport>,
    /// Target runs spent checking generalisations.
    pub checks: usize,
}

/// Mines a grammar from the traces of inputs the target accepts; `accepts` runs the mining
/// build on an input and returns its trace if the target accepts it.
///
/// # Errors
/// A [`GrammarError`] if the rules do not make a grammar (no trace, or a nonterminal with no
/// finite expansion).
pub fn mine(traces: &[Trace], accepts: induce::Accepts<'_>) -> Result<Mined, GrammarError> {
    let (site_trees, _) = parse_trees(traces);
    let (names, site_checks) = sites::merge_checked(&site_trees, traces, &mut *accepts);
    let traces: Vec<Trace> = traces.iter().map(|trace| names.rename(trace)).collect();
    let mut renamed_accepts = |input: &[u8]| accepts(input).map(|trace| names.rename(&trace));
    let (trees, transparent) = parse_trees(&traces);
    let inputs = traces.iter().map(|trace| trace.input.clone()).collect();
    let mut inducer = induce::Inducer::new(inputs, transparent, &mut renamed_accepts);
    inducer.add_trees(&trees);
    let checks = inducer.checks + site_checks;
    let rules = inducer.finish();
    if rules.nonterminals.is_empty() {
        return Err(GrammarError::Shape("no input to mine from".into()));
    }
    let (json, support) = output::write(&rules);
    let grammar = Grammar::from_json(&json)?;
    Ok(Mined {
        grammar,
        json,
        support,
        checks,
    })
}

/// `count` sentences of `grammar` from random choices (seeded; depth `max_depth`; at most 256
/// random choices each, cheapest rules after that).
#[must_use]
pub fn sentences(grammar: &Grammar, count: usize, seed: u64, max_depth: usize) -> Vec<Vec<u8>> {
    let inputs = GrammarInputs::new(grammar.clone(), max_depth);
    (0..count as u64)
        .map(|i| {
            let random = RandomChoices::new(seed.wrapping_mul(1_000_003).wrapping_add(i), 256);
            inputs.random_expansion(grammar.start(), 0, random).output
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recursive-descent parser of sums of numbers in parentheses, which records its reads
    /// as a mining build would: `expr := term ('+' term)*`, `term := number | '(' expr ')'`.
    struct Recorder<'a> {
        input: &'a [u8],
        at: usize,
        trace: Trace,
        stack: Vec<usize>,
    }

    impl Recorder<'_> {
        fn enter(&mut self, function: &str) {
            self.trace.invocations.push(Invocation {
                function: function.into(),
                parent: self.stack.last().copied(),
            });
            self.stack.push(self.trace.invocations.len() - 1);
        }
        fn peek(&mut self) -> Option<u8> {
            let byte = *self.input.get(self.at)?;
            self.trace.owners[self.at] = self.stack.last().copied();
            Some(byte)
        }
        fn expr(&mut self) -> bool {
            self.enter("expr");
            let mut ok = self.term();
            while ok && self.peek() == Some(b'+') {
                self.at += 1;
                ok = self.term();
            }
            self.stack.pop();
            ok
        }
        fn term(&mut self) -> bool {
            self.enter("term");
            let ok = if self.peek() == Some(b'(') {
                self.at += 1;
                let inner = self.expr();
                let closed = inner && self.peek() == Some(b')');
                self.at += usize::from(closed);
                closed
            } else {
                self.number()
            };
            self.stack.pop();
            ok
        }
        fn number(&mut self) -> bool {
            self.enter("number");
            let from = self.at;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.at += 1;
            }
            self.stack.pop();
            self.at > from
        }
    }

    fn run(input: &[u8]) -> (bool, Trace) {
        let mut recorder = Recorder {
            input,
            at: 0,
            trace: Trace {
                input: input.to_vec(),
                invocations: Vec::new(),
                owners: vec![None; input.len()],
            },
            stack: Vec::new(),
        };
        let ok = recorder.expr() && recorder.at == input.len();
        (ok, recorder.trace)
    }

    #[test]
    fn a_recursive_descent_parser_gives_back_its_grammar() {
        let samples: [&[u8]; 3] = [b"1+(23+4)", b"(5)", b"67+8+9"];
        let traces: Vec<Trace> = samples.iter().map(|s| run(s).1).collect();
        let mut accepts = |input: &[u8]| {
            let (ok, trace) = run(input);
            ok.then_some(trace)
        };
        let mined = mine(&traces, &mut accepts).expect("a grammar");
        let generated = sentences(&mined.grammar, 300, 1, 8);
        let valid = generated.iter().filter(|s| run(s).0).count();
        assert_eq!(valid, generated.len(), "{}", mined.json);
        for sentence in [&b"((1+2))+345"[..], b"7", b"(1+(2+(3)))"] {
            assert!(
                crate::grammar::parse(&mined.grammar, 64, sentence).is_ok(),
                "{}\n{}",
                String::from_utf8_lossy(sentence),
                mined.json
            );
        }
        assert!(mined.json.contains("\"<term>\""), "{}", mined.json);
    }
}
