//! Grammar inputs as the fuzzer carries them: one choice per byte, rendered by a grammar (and
//! optional Rust hooks) into what the target sees, and shrunk with the grammar reducer.

use std::sync::Arc;

use super::choices::RandomChoices;
use super::generate::DerivationNode;
use super::reduce::{reduce, Derivation};
use super::{ChoiceSequence, Generator, Grammar, Hooks, NoHooks};
use crate::shrink::Verdict;

/// Makes fresh hooks for one rendering (hooks keep per-sentence state, such as the variables
/// defined so far).
pub type HooksFactory = dyn Fn() -> Box<dyn Hooks> + Send + Sync;

/// A grammar, its depth limit and its hooks: everything needed to turn choice bytes into a
/// sentence.
#[derive(Clone)]
pub struct GrammarInputs {
    grammar: Grammar,
    max_depth: usize,
    hooks: Option<Arc<HooksFactory>>,
}

impl std::fmt::Debug for GrammarInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrammarInputs")
            .field("max_depth", &self.max_depth)
            .field("hooks", &self.hooks.is_some())
            .finish_non_exhaustive()
    }
}

impl GrammarInputs {
    /// Inputs of `grammar`, keeping only cheapest rules deeper than `max_depth`.
    #[must_use]
    pub fn new(grammar: Grammar, max_depth: usize) -> Self {
        GrammarInputs {
            grammar,
            max_depth,
            hooks: None,
        }
    }

    /// Renders through hooks made by `factory` (one set per sentence): the context-sensitive
    /// part of the grammar, written in Rust.
    #[must_use]
    pub fn with_hooks(
        mut self,
        factory: impl Fn() -> Box<dyn Hooks> + Send + Sync + 'static,
    ) -> Self {
        self.hooks = Some(Arc::new(factory));
        self
    }

    /// The grammar.
    #[must_use]
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    /// The depth limit.
    #[must_use]
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Fresh hooks for one sentence (`NoHooks`, which costs no allocation, without any).
    fn fresh_hooks(&self) -> Box<dyn Hooks> {
        match &self.hooks {
            Some(factory) => factory(),
            None => Box::new(NoHooks),
        }
    }

    fn generator(&self) -> Generator<'_> {
        Generator::new(&self.grammar, self.max_depth)
    }

    fn generate(&self, choices: &mut ChoiceSequence<'_>) -> Vec<u8> {
        self.generator()
            .render(choices, self.fresh_hooks().as_mut())
    }

    /// The sentence that choice bytes render to (the fuzzing path: nothing recorded).
    #[must_use]
    pub fn render(&self, bytes: &[u8]) -> Vec<u8> {
        self.generate(&mut ChoiceSequence::from_bytes(bytes))
    }

    /// The sentence that `choices` render to, and the choices used.
    #[must_use]
    pub fn derive(&self, choices: &[u32]) -> Derivation {
        let mut sequence = ChoiceSequence::new(choices);
        let output = self.generate(&mut sequence);
        Derivation {
            used: sequence.used().map(<[u32]>::to_vec).unwrap_or_default(),
            output,
        }
    }

    /// Like [`GrammarInputs::derive`], with the derivation tree.
    #[must_use]
    pub fn derive_traced(&self, choices: &[u32]) -> (Derivation, DerivationNode) {
        let mut sequence = ChoiceSequence::new(choices);
        let (output, tree) = self
            .generator()
            .render_traced(&mut sequence, self.fresh_hooks().as_mut());
        let derivation = Derivation {
            used: sequence.used().map(<[u32]>::to_vec).unwrap_or_default(),
            output,
        };
        (derivation, tree)
    }

    /// `choices` with the subtrees of some nodes regenerated: each `(node, with)` gives a
    /// node of `tree` (the derivation of `choices`) and where its new choices come from.
    #[must_use]
    pub fn derive_spliced(
        &self,
        choices: &[u32],
        splices: Vec<(&DerivationNode, RandomChoices)>,
    ) -> Derivation {
        let mut sequence = ChoiceSequence::new(choices);
        let splices = splices
            .into_iter()
            .map(|(node, with)| (node.index, with, node.choices.end))
            .collect();
        let output =
            self.generator()
                .render_spliced(&mut sequence, self.fresh_hooks().as_mut(), splices);
        trimmed(&sequence, output)
    }

    /// A random expansion of `symbol` as at `depth`: its output and the choices it used.
    #[must_use]
    pub fn random_expansion(
        &self,
        symbol: crate::grammar::SymbolId,
        depth: usize,
        random: RandomChoices,
    ) -> Derivation {
        let mut sequence = ChoiceSequence::new(&[]);
        sequence.random = Some(random);
        let output = self.generator().render_symbol(
            symbol,
            depth,
            &mut sequence,
            self.fresh_hooks().as_mut(),
        );
        trimmed(&sequence, output)
    }

    /// Reduces choice bytes that `test` accepts with the grammar reducer. `test` runs the
    /// target on (normalized) choice bytes. Returns the simplest accepted bytes and the number
    /// of tests run.
    pub fn reduce_bytes(
        &self,
        input: &[u8],
        test: &mut dyn FnMut(&[u8]) -> Verdict,
    ) -> (Vec<u8>, usize) {
        let start: Vec<u32> = input.iter().map(|&b| u32::from(b)).collect();
        let reduction = reduce(
            &start,
            &mut |choices: &[u32]| self.derive(choices),
            &mut |derivation: &Derivation| test(&choice_bytes(&derivation.used)),
        );
        (choice_bytes(&reduction.choices), reduction.calls)
    }
}

/// Grammar mode's crash reproducers are choice bytes, shrunk with the grammar reducer.
impl labelfuzz_core::consider::CrashShrinker for GrammarInputs {
    fn shrink_crash(&self, input: Vec<u8>, judge: &mut dyn FnMut(&[u8]) -> Verdict) {
        self.reduce_bytes(&input, judge);
    }
}

/// A derivation from every choice `sequence` used, trailing zeros cut.
fn trimmed(sequence: &ChoiceSequence<'_>, output: Vec<u8>) -> Derivation {
    Derivation {
        used: sequence
            .used_trimmed()
            .map(<[u32]>::to_vec)
            .unwrap_or_default(),
        output,
    }
}

/// Choices stored one per byte. Choices read from bytes and then lowered never exceed 255.
#[must_use]
pub fn choice_bytes(choices: &[u32]) -> Vec<u8> {
    choices
        .iter()
        .map(|&c| u8::try_from(c).unwrap_or(u8::MAX))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_reduction_keeps_the_property_and_normalizes() {
        let grammar = Grammar::from_json(
            r#"{"<start>": [["<item>"], ["<item>", ",", "<start>"]], "<item>": [{"chars": "abcz"}]}"#,
        )
        .unwrap();
        let inputs = GrammarInputs::new(grammar, 20);
        // A list with a `z` somewhere: the simplest is the one-item list `z`.
        let start = [1u8, 2, 1, 7, 1, 3, 0, 1];
        assert!(inputs.render(&start).contains(&b'z'));
        let (reduced, calls) = inputs.reduce_bytes(&start, &mut |bytes| {
            Verdict::from(inputs.render(bytes).contains(&b'z'))
        });
        assert_eq!(inputs.render(&reduced), b"z");
        assert_eq!(reduced, [0, 3]);
        assert!(calls > 0);
        let (_, calls) = inputs.reduce_bytes(&start, &mut |_| Verdict::Stop);
        assert!(calls <= 1, "a stop ends the reduction");
    }
}
