//! Reducing a choice sequence: the smallest sequence, in shortlex order, that a test still
//! accepts. Because the generator renders every sequence to a valid sentence, every candidate
//! is valid input: reduction never wastes a test on a syntax error, unlike delta debugging on
//! text.
//!
//! The passes, each small and named (as in Hypothesis' shrinker), run in turn until none makes
//! progress. A candidate is kept only when the test holds and the sequence the generator actually
//! used is simpler than the current one.

/// A reduction pass: proposes candidates derived from the current sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Deletes blocks of choices, large blocks first.
    DeleteBlocks,
    /// Sets blocks of choices to zero (the cheapest alternative).
    ZeroBlocks,
    /// Lowers single choices: to zero, then by binary search.
    LowerChoices,
    /// Deletes a few choices (1 to 4) and lowers the one before them: undoes one step of a
    /// recursion (one list item fewer, one nesting less) where deleting alone would shift the
    /// choices after it onto other decisions.
    DeleteAndLowerPrevious,
}

/// The passes in the order they run.
pub const PASSES: [Pass; 4] = [
    Pass::DeleteBlocks,
    Pass::ZeroBlocks,
    Pass::LowerChoices,
    Pass::DeleteAndLowerPrevious,
];

/// The result of a reduction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// The smallest accepted sequence found.
    pub choices: Vec<u32>,
    /// How many times the test ran.
    pub calls: usize,
}

/// Orders choice sequences: shorter first, then smaller choice by choice.
fn simpler(a: &[u32], b: &[u32]) -> bool {
    a.len() < b.len() || (a.len() == b.len() && a < b)
}

struct Reducer<'t> {
    test: &'t mut dyn FnMut(&[u32]) -> Option<Vec<u32>>,
    current: Vec<u32>,
    calls: usize,
    /// Candidates already tested (the passes propose the same ones again in later rounds).
    tried: std::collections::HashSet<Vec<u32>>,
}

impl Reducer<'_> {
    /// Tests `candidate`; keeps what the generator used if the test holds and it is simpler.
    fn try_candidate(&mut self, candidate: &[u32]) -> bool {
        if !simpler(candidate, &self.current) || !self.tried.insert(candidate.to_vec()) {
            return false;
        }
        self.calls += 1;
        match (self.test)(candidate) {
            Some(used) if simpler(&used, &self.current) => {
                self.current = used;
                true
            }
            _ => false,
        }
    }

    fn run(&mut self, pass: Pass) -> bool {
        match pass {
            Pass::DeleteBlocks => self.delete_blocks(),
            Pass::ZeroBlocks => self.zero_blocks(),
            Pass::LowerChoices => self.lower_choices(),
            Pass::DeleteAndLowerPrevious => self.delete_and_lower_previous(),
        }
    }

    fn block_sizes(&self) -> Vec<usize> {
        let mut size = self.current.len().next_power_of_two();
        let mut sizes = Vec::new();
        while size >= 1 {
            sizes.push(size);
            size /= 2;
        }
        sizes
    }

    fn delete_blocks(&mut self) -> bool {
        let mut progress = false;
        for size in self.block_sizes() {
            // Large blocks at aligned positions (as ddmin splits), small ones (a few choices:
            // one grammar decision and its operands) at every position.
            let step = if size <= 4 { 1 } else { size };
            let mut start = 0;
            while start < self.current.len() {
                let end = (start + size).min(self.current.len());
                let mut candidate = self.current[..start].to_vec();
                candidate.extend_from_slice(&self.current[end..]);
                if self.try_candidate(&candidate) {
                    progress = true;
                } else {
                    start += step;
                }
            }
        }
        progress
    }

    fn zero_blocks(&mut self) -> bool {
        let mut progress = false;
        for size in self.block_sizes() {
            let mut start = 0;
            while start < self.current.len() {
                let end = (start + size).min(self.current.len());
                if self.current[start..end].iter().any(|&c| c != 0) {
                    let mut candidate = self.current.clone();
                    candidate[start..end].fill(0);
                    progress |= self.try_candidate(&candidate);
                }
                start += size;
            }
        }
        progress
    }

    fn lower_choices(&mut self) -> bool {
        let mut progress = false;
        let mut i = 0;
        while i < self.current.len() {
            let value = self.current[i];
            if value > 0 {
                // The smallest accepted value in [0, value): binary search on "accepted", which
                // is not monotone in general, so it finds a local minimum, not always the least.
                let (mut lo, mut hi) = (0u32, value);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let mut candidate = self.current.clone();
                    if i >= candidate.len() {
                        break;
                    }
                    candidate[i] = mid;
                    if self.try_candidate(&candidate) {
                        progress = true;
                        hi = mid;
                        if self.current.get(i) != Some(&mid) {
                            break; // the sequence changed shape: move on
                        }
                    } else {
                        lo = mid + 1;
                    }
                }
            }
            i += 1;
        }
        progress
    }

    fn delete_and_lower_previous(&mut self) -> bool {
        let mut progress = false;
        for size in 1..=4 {
            let mut i = 1;
            while i + size <= self.current.len() {
                if self.current[i - 1] > 0 {
                    let mut candidate = self.current.clone();
                    candidate.drain(i..i + size);
                    candidate[i - 1] -= 1;
                    if self.try_candidate(&candidate) {
                        progress = true;
                        continue;
                    }
                }
                i += 1;
            }
        }
        progress
    }
}

/// Reduces `start`, a sequence `test` accepts. `test` runs the generator and the property on a
/// candidate and returns the choices the generator used (see [`super::ChoiceSequence::used`])
/// when the property holds, `None` when it does not.
pub fn reduce(start: &[u32], test: &mut dyn FnMut(&[u32]) -> Option<Vec<u32>>) -> Reduction {
    let mut reducer = Reducer {
        test,
        current: start.to_vec(),
        calls: 0,
        tried: std::collections::HashSet::new(),
    };
    // Cut the length first with delta debugging, which halves a long sequence in few calls,
    // then let the passes find the shortlex minimum near it.
    let cut = ddmin(start, &mut |candidate: &[u32]| {
        (reducer.test)(candidate).is_some()
    });
    reducer.calls += cut.calls;
    reducer.calls += 1;
    if let Some(used) = (reducer.test)(&cut.choices) {
        if simpler(&used, &reducer.current) {
            reducer.current = used;
        }
    }
    loop {
        let mut progress = false;
        for pass in PASSES {
            progress |= reducer.run(pass);
        }
        if !progress {
            break;
        }
    }
    Reduction {
        choices: reducer.current,
        calls: reducer.calls,
    }
}

/// Plain delta debugging (Zeller's ddmin) on a choice sequence, as the seed applied it: the
/// baseline [`reduce`] is measured against. `test` says whether a candidate still shows the
/// property; the result is 1-minimal (no single choice can be removed), not shortlex-minimal.
pub fn ddmin(start: &[u32], test: &mut dyn FnMut(&[u32]) -> bool) -> Reduction {
    let mut current = start.to_vec();
    let mut calls = 0;
    let mut granularity = 2usize;
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(granularity);
        let chunks: Vec<(usize, usize)> = (0..current.len())
            .step_by(chunk)
            .map(|start| (start, (start + chunk).min(current.len())))
            .collect();
        let mut reduced = false;
        for &(lo, hi) in &chunks {
            calls += 1;
            if test(&current[lo..hi]) {
                current = current[lo..hi].to_vec();
                granularity = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && chunks.len() > 2 {
            for &(lo, hi) in &chunks {
                let complement: Vec<u32> = current[..lo]
                    .iter()
                    .chain(&current[hi..])
                    .copied()
                    .collect();
                calls += 1;
                if test(&complement) {
                    current = complement;
                    granularity = (granularity - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    Reduction {
        choices: current,
        calls,
    }
}

#[cfg(test)]
mod tests {
    use super::super::generate::tests::DefinedVariables;
    use super::super::{ChoiceSequence, Generator, Grammar};
    use super::*;

    /// The seed's assignment language, with `<digit>` listed before `<var>` among the cheapest
    /// expressions (choice 0 is the first cheapest rule: the grammar's author decides which).
    const SEED_GRAMMAR: &str = r#"{
        "<start>": [["<assignments>"]],
        "<assignments>": [["<assign>", {"text": ";\n", "hook": "sync"}],
                          ["<assign>", {"text": ";\n", "hook": "sync"}, "<assignments>"]],
        "<assign>": [[{"symbol": "<var>", "hook": "define"}, " = ", "<expr>"]],
        "<expr>": [["<expr>", " + ", "<expr>"], ["<expr>", " - ", "<expr>"],
                   ["(", "<expr>", ")"], ["<digit>"], [{"symbol": "<var>", "hook": "use"}]],
        "<digit>": [{"chars": "01"}],
        "<var>": [{"chars": "a-z"}]
    }"#;

    fn render(grammar: &Grammar, choices: &[u32]) -> (Vec<u8>, Vec<u32>) {
        let mut sequence = ChoiceSequence::new(choices);
        let out =
            Generator::new(grammar, 10).render(&mut sequence, &mut DefinedVariables::default());
        (out, sequence.used().expect("recorded").to_vec())
    }

    fn nested_parens(text: &[u8]) -> bool {
        let has = |needle: &[u8]| text.windows(2).any(|w| w == needle);
        has(b"((") && has(b"))")
    }

    #[test]
    fn the_seed_example_reduces_to_the_global_minimum_from_every_start() {
        let grammar = Grammar::from_json(SEED_GRAMMAR).unwrap();
        let mut started = 0;
        for seed in 0u64..400 {
            // A pseudo-random start (xorshift), kept if it shows the property.
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let start: Vec<u32> = (0..200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    u32::try_from(x % 10).unwrap()
                })
                .collect();
            let (text, _) = render(&grammar, &start);
            if !nested_parens(&text) {
                continue;
            }
            started += 1;
            let reduction = reduce(&start, &mut |candidate: &[u32]| {
                let (text, used) = render(&grammar, candidate);
                nested_parens(&text).then_some(used)
            });
            let (text, _) = render(&grammar, &reduction.choices);
            assert_eq!(
                String::from_utf8_lossy(&text),
                "a = ((0));\n",
                "from seed {seed} ({} calls)",
                reduction.calls
            );
            assert_eq!(reduction.choices, vec![0, 0, 4, 4]);
            let baseline = ddmin(&start, &mut |candidate: &[u32]| {
                nested_parens(&render(&grammar, candidate).0)
            });
            // ddmin's result is never shorter, and mostly not the minimum (e.g. `i = ((0));`).
            assert!(baseline.choices.len() >= reduction.choices.len());
            if started == 8 {
                break;
            }
        }
        assert_eq!(started, 8, "enough starting sequences show the property");
    }

    #[test]
    fn each_pass_alone_makes_progress_on_its_own_kind_of_redundancy() {
        // Property: the sum of choices is at least 10.
        let mut test = |c: &[u32]| (c.iter().sum::<u32>() >= 10).then(|| c.to_vec());
        let mut reducer = Reducer {
            test: &mut test,
            current: vec![0, 0, 9, 0, 9, 0],
            calls: 0,
            tried: std::collections::HashSet::new(),
        };
        assert!(reducer.run(Pass::DeleteBlocks));
        assert_eq!(reducer.current, vec![9, 9]);
        assert!(reducer.run(Pass::LowerChoices));
        assert_eq!(reducer.current, vec![1, 9]);
        assert!(!reducer.run(Pass::ZeroBlocks), "no zero keeps the sum");

        let mut test = |c: &[u32]| c.contains(&0).then(|| c.to_vec());
        let mut reducer = Reducer {
            test: &mut test,
            current: vec![3, 0, 5, 7],
            calls: 0,
            tried: std::collections::HashSet::new(),
        };
        assert!(reducer.run(Pass::ZeroBlocks));
        assert_eq!(reducer.current, vec![0, 0, 0, 0]);

        // Length is what counts: [2, 5] (a two-item list) becomes [1] (one item).
        let mut test = |c: &[u32]| (c.first().is_some_and(|&n| n >= 1)).then(|| c.to_vec());
        let mut reducer = Reducer {
            test: &mut test,
            current: vec![2, 5],
            calls: 0,
            tried: std::collections::HashSet::new(),
        };
        assert!(reducer.run(Pass::DeleteAndLowerPrevious));
        assert_eq!(reducer.current, vec![1]);
    }
}
