//! Rendering a grammar from a choice sequence.
//!
//! The generator asks [`ChoiceSequence::choose`] at every decision. While the sequence lasts,
//! each choice picks among the alternatives (modulo their number); once it runs out, every
//! decision takes choice 0, a cheapest rule, so any sequence (the empty one included) renders to
//! a complete sentence, and the empty sequence to a cheapest one. Below `max_depth` every rule
//! may be chosen; deeper, only the cheapest ones, which bounds the output.

use super::{Grammar, Item, SymbolId};

/// Where the choices come from.
#[derive(Clone, Copy, Debug)]
enum Source<'a> {
    /// Wide choices (the reducer's sequences).
    Wide(&'a [u32]),
    /// One choice per byte (how the byte-oriented engine carries grammar inputs).
    Bytes(&'a [u8]),
}

impl Source<'_> {
    fn get(&self, index: usize) -> Option<u32> {
        match self {
            Source::Wide(choices) => choices.get(index).copied(),
            Source::Bytes(bytes) => bytes.get(index).map(|&b| u32::from(b)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Source::Wide(choices) => choices.len(),
            Source::Bytes(bytes) => bytes.len(),
        }
    }
}

/// A sequence of choices read one at a time.
#[derive(Clone, Debug)]
pub struct ChoiceSequence<'a> {
    source: Source<'a>,
    next: usize,
    /// The choices as used, when recorded (see [`ChoiceSequence::used`]).
    used: Option<Vec<u32>>,
}

impl<'a> ChoiceSequence<'a> {
    /// Reads from `choices`, recording the choices used.
    #[must_use]
    pub fn new(choices: &'a [u32]) -> Self {
        ChoiceSequence {
            source: Source::Wide(choices),
            next: 0,
            used: Some(Vec::new()),
        }
    }

    /// Reads one choice per byte, recording nothing: the fuzzing path, which renders every
    /// execution and needs only the output.
    #[must_use]
    pub fn from_bytes(bytes: &'a [u8]) -> Self {
        ChoiceSequence {
            source: Source::Bytes(bytes),
            next: 0,
            used: None,
        }
    }

    /// A value below `n`: the next choice modulo `n`, or 0 when the sequence is exhausted. A
    /// decision with a single option reads no choice.
    pub fn choose(&mut self, n: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        let value = self.source.get(self.next).map_or(0, |choice| choice % n);
        self.next += 1;
        if let Some(used) = &mut self.used {
            used.push(value);
        }
        value
    }

    /// Whether every choice has been read.
    #[must_use]
    pub fn exhausted(&self) -> bool {
        self.next >= self.source.len()
    }

    /// The choices as the generator used them: reduced modulo each decision's options and cut
    /// where generation ended. It renders to the same output and is never less simple. `None`
    /// for a sequence made with [`ChoiceSequence::from_bytes`], which records nothing.
    #[must_use]
    pub fn used(&self) -> Option<&[u32]> {
        let used = self.used.as_deref()?;
        Some(&used[..used.len().min(self.source.len())])
    }
}

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
        self.expand(self.grammar.start(), 0, choices, hooks, &mut out);
        out
    }

    fn expand(
        &self,
        symbol: SymbolId,
        depth: usize,
        choices: &mut ChoiceSequence<'_>,
        hooks: &mut dyn Hooks,
        out: &mut Vec<u8>,
    ) {
        let rules = self.grammar.rules(symbol);
        // Cheapest rules come first; past the depth limit only they may be chosen. Once the
        // sequence is exhausted choice 0 is taken, which is one of them.
        let allowed = if depth > self.max_depth {
            rules.iter().take_while(|r| r.cost == rules[0].cost).count()
        } else {
            rules.len()
        };
        let count = u32::try_from(allowed).unwrap_or(u32::MAX);
        let rule = &rules[choices.choose(count) as usize];
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
            match (replaced, &token.item) {
                (Some(bytes), _) => out.extend_from_slice(&bytes),
                (None, Item::Text(text)) => out.extend_from_slice(text),
                (None, Item::Symbol(id)) => self.expand(*id, depth + 1, choices, hooks, out),
            }
            if let Some(hook) = &token.hook {
                hooks.post(hook, symbol_name, &out[start..]);
            }
        }
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
