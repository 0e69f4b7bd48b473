//! Choice sequences: what a grammar input is.
//!
//! While the sequence lasts, each choice picks among the alternatives (modulo their number);
//! once it runs out, every decision takes choice 0, a cheapest rule, so any sequence (the empty
//! one included) renders to a complete sentence, and the empty sequence to a cheapest one.
//! [`RandomChoices`] stands in for a sequence where a subtree is regenerated at random.

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
    pub(super) next: usize,
    /// The choices as used, when recorded (see [`ChoiceSequence::used`]).
    used: Option<Vec<u32>>,
    /// While set, choices come from here instead of the source (a subtree being regenerated).
    pub(crate) random: Option<RandomChoices>,
}

/// Random choices with a budget: once it is spent every choice is 0, a cheapest rule, so a
/// regenerated subtree stays about as large as the budget allows.
#[derive(Clone, Debug)]
pub struct RandomChoices {
    state: u64,
    budget: usize,
    /// Fixed choices to replay first (a subtree copied elsewhere), before any random one.
    replay: std::collections::VecDeque<u32>,
}

impl RandomChoices {
    /// Random choices from `seed`, at most `budget` of them non-zero.
    #[must_use]
    pub fn new(seed: u64, budget: usize) -> Self {
        RandomChoices {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            budget,
            replay: std::collections::VecDeque::new(),
        }
    }

    /// Replays `choices` (then nothing but zeros).
    #[must_use]
    pub fn replaying(choices: &[u32]) -> Self {
        RandomChoices {
            state: 1,
            budget: 0,
            replay: choices.iter().copied().collect(),
        }
    }

    fn next(&mut self, n: u32) -> u32 {
        if let Some(choice) = self.replay.pop_front() {
            return choice % n;
        }
        if self.budget == 0 {
            return 0;
        }
        self.budget -= 1;
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let value = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
        u32::try_from(value % u64::from(n)).unwrap_or(0)
    }
}

impl<'a> ChoiceSequence<'a> {
    /// Reads from `choices`, recording the choices used.
    #[must_use]
    pub fn new(choices: &'a [u32]) -> Self {
        ChoiceSequence {
            source: Source::Wide(choices),
            next: 0,
            used: Some(Vec::new()),
            random: None,
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
            random: None,
        }
    }

    /// A value below `n`: the next choice modulo `n`, or 0 when the sequence is exhausted. A
    /// decision with a single option reads no choice.
    pub fn choose(&mut self, n: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        let value = match &mut self.random {
            Some(random) => random.next(n),
            None => {
                let value = self.source.get(self.next).map_or(0, |choice| choice % n);
                self.next += 1;
                value
            }
        };
        if let Some(used) = &mut self.used {
            used.push(value);
        }
        value
    }

    /// How many choices have been used so far (recorded ones; 0 when nothing is recorded).
    #[must_use]
    pub fn used_len(&self) -> usize {
        self.used.as_ref().map_or(0, Vec::len)
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

    /// Every choice used, regenerated subtrees included, without trailing zeros (a choice 0 at
    /// the end is what an exhausted sequence reads anyway): the sequence that renders the same.
    #[must_use]
    pub fn used_trimmed(&self) -> Option<&[u32]> {
        let used = self.used.as_deref()?;
        let end = used.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        Some(&used[..end])
    }
}
