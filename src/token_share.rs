//! How many of havoc's mutants may use tokens, learned from what each kind of mutant finds.
//!
//! Token mutations pay on a target that looks its input's words up (SQLite's keywords: the
//! automatic dictionary is what takes it past the tokenizer) and cost on one whose input is a
//! compressed stream (a word written into a deflate stream breaks it: zlib ended behind with
//! the program's 101 tokens, every one an error message or a word of one). With tokens among
//! 2^k stacked mutations, about three mutants in ten carry one; which share pays is the
//! target's, so the run measures it: each mutant is drawn from plain havoc or havoc with the
//! token mutations, in proportion to the rate at which each has improved a label so far, never
//! below [`MIN_SHARE`] for either.

use std::borrow::Cow;

use libafl::corpus::CorpusId;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl::Error;
use libafl_bolts::rands::Rand;
use libafl_bolts::Named;

/// The least share of mutants either kind gets, so that a kind that stopped paying early is
/// still tried when the corpus has moved on.
pub const MIN_SHARE: f64 = 0.05;

/// The counts behind the share: mutants tried and labels improved, per kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    tried: [u64; 2],
    improved: [u64; 2],
}

/// Which kind of mutant: plain havoc, or havoc with the token mutations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Havoc's mutations only.
    Plain,
    /// Havoc's mutations and the token mutations.
    WithTokens,
}

impl Tally {
    /// The share of mutants that get the token mutations: each kind's rate of improvements
    /// (with half an improvement each to start, so an untried kind is tried), the tokens' rate
    /// over the sum of both, kept within [`MIN_SHARE`] of 0 and 1.
    #[must_use]
    pub fn token_share(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let rate =
            |kind: usize| (self.improved[kind] as f64 + 0.5) / (self.tried[kind] as f64 + 1.0);
        let (plain, tokens) = (rate(0), rate(1));
        (tokens / (plain + tokens)).clamp(MIN_SHARE, 1.0 - MIN_SHARE)
    }

    /// Counts one mutant of `kind`, and whether it improved a label.
    pub fn record(&mut self, kind: Kind, improved: bool) {
        let index = kind as usize;
        self.tried[index] += 1;
        self.improved[index] += u64::from(improved);
    }
}

/// Havoc's mutator choosing, mutant by mutant, between plain havoc and havoc with the token
/// mutations as [`Tally::token_share`] says; it learns from `post_exec`, which is told the
/// corpus entry a mutant added (an improvement) or none.
pub struct TokenShareMutator<P, T> {
    plain: P,
    with_tokens: T,
    tally: Tally,
    last: Option<Kind>,
}

impl<P, T> TokenShareMutator<P, T> {
    /// Chooses between `plain` and `with_tokens`, at first half and half.
    pub fn new(plain: P, with_tokens: T) -> Self {
        Self {
            plain,
            with_tokens,
            tally: Tally::default(),
            last: None,
        }
    }
}

impl<P, T> Named for TokenShareMutator<P, T> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("TokenShareMutator");
        &NAME
    }
}

impl<I, S, P, T> Mutator<I, S> for TokenShareMutator<P, T>
where
    S: HasRand,
    P: Mutator<I, S>,
    T: Mutator<I, S>,
{
    fn mutate(&mut self, state: &mut S, input: &mut I) -> Result<MutationResult, Error> {
        let with_tokens = state.rand_mut().coinflip(self.tally.token_share());
        let kind = if with_tokens {
            Kind::WithTokens
        } else {
            Kind::Plain
        };
        self.last = Some(kind);
        match kind {
            Kind::Plain => self.plain.mutate(state, input),
            Kind::WithTokens => self.with_tokens.mutate(state, input),
        }
    }

    fn post_exec(&mut self, state: &mut S, new_corpus_id: Option<CorpusId>) -> Result<(), Error> {
        let Some(kind) = self.last.take() else {
            return Ok(());
        };
        self.tally.record(kind, new_corpus_id.is_some());
        match kind {
            Kind::Plain => self.plain.post_exec(state, new_corpus_id),
            Kind::WithTokens => self.with_tokens.post_exec(state, new_corpus_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untried_kinds_share_evenly_and_the_less_tried_one_goes_next() {
        let mut tally = Tally::default();
        assert!((tally.token_share() - 0.5).abs() < 1e-9);
        tally.record(Kind::Plain, false);
        assert!(tally.token_share() > 0.5, "{}", tally.token_share());
    }

    #[test]
    fn the_kind_that_improves_more_often_gets_more_mutants_within_the_bounds() {
        let mut tally = Tally::default();
        for i in 0..100_000 {
            tally.record(Kind::Plain, i % 1000 == 0);
            tally.record(Kind::WithTokens, i % 4000 == 0);
        }
        let share = tally.token_share();
        assert!((0.15..0.25).contains(&share), "{share}");
        let mut barren = Tally::default();
        for i in 0..100_000 {
            barren.record(Kind::Plain, i % 100 == 0);
            barren.record(Kind::WithTokens, false);
        }
        assert!((barren.token_share() - MIN_SHARE).abs() < 1e-9);
        let mut rich = Tally::default();
        for i in 0..100_000 {
            rich.record(Kind::Plain, false);
            rich.record(Kind::WithTokens, i % 100 == 0);
        }
        assert!((rich.token_share() - (1.0 - MIN_SHARE)).abs() < 1e-9);
    }
}
