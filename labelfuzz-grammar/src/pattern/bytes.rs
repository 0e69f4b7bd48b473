//! Byte-mode patterns: which positions of a reproducer can take any byte, any byte of a class,
//! or must be exactly what they are; which runs of free bytes can be of any length; and whether
//! anything may follow. `B\x00\xff` becomes `B ? \xff *`.

use serde::{Deserialize, Serialize};

use super::{mix, Oracle, Settings, Trial};
use crate::shrink::Verdict;

/// A set of byte values one position may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ByteClass {
    /// Any byte.
    Any,
    /// Printable ASCII or whitespace.
    Printable,
    /// An ASCII letter.
    Letter,
    /// An ASCII digit.
    Digit,
}

impl ByteClass {
    /// Whether `b` belongs to the class.
    #[must_use]
    pub fn contains(self, b: u8) -> bool {
        match self {
            ByteClass::Any => true,
            ByteClass::Printable => b.is_ascii_graphic() || b.is_ascii_whitespace(),
            ByteClass::Letter => b.is_ascii_alphabetic(),
            ByteClass::Digit => b.is_ascii_digit(),
        }
    }

    fn members(self) -> Vec<u8> {
        (0..=255u8).filter(|&b| self.contains(b)).collect()
    }

    fn symbol(self) -> &'static str {
        match self {
            ByteClass::Any => "?",
            ByteClass::Printable => "[:print:]",
            ByteClass::Letter => "[a-zA-Z]",
            ByteClass::Digit => "[0-9]",
        }
    }
}

/// One element of a byte pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BytePart {
    /// This byte and no other.
    Exact(u8),
    /// One byte of a class; `shown` of `tried` variants still failed alike.
    Class {
        /// The class.
        class: ByteClass,
        /// Variants that showed the crash label.
        shown: u32,
        /// Variants tried.
        tried: u32,
    },
    /// Any number of any bytes (a run of free bytes whose length did not matter, or a tail).
    AnyRun {
        /// Variants that showed the crash label.
        shown: u32,
        /// Variants tried.
        tried: u32,
    },
}

/// A byte-mode failure pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytePattern {
    /// The pattern's elements, in input order.
    pub parts: Vec<BytePart>,
    /// Executions spent finding it.
    pub probes: usize,
    /// The same pattern on the `Debug` form of a typed target's input, when there is one.
    #[serde(default)]
    pub typed: Option<super::TypedPattern>,
}

impl BytePattern {
    /// Whether `input` matches the pattern.
    #[must_use]
    pub fn matches(&self, input: &[u8]) -> bool {
        fn at(parts: &[BytePart], input: &[u8]) -> bool {
            match parts.split_first() {
                None => input.is_empty(),
                Some((BytePart::AnyRun { .. }, rest)) => {
                    (0..=input.len()).any(|skip| at(rest, &input[skip..]))
                }
                Some((part, rest)) => match input.split_first() {
                    None => false,
                    Some((&b, tail)) => {
                        let fits = match part {
                            BytePart::Exact(e) => b == *e,
                            BytePart::Class { class, .. } => class.contains(b),
                            BytePart::AnyRun { .. } => true,
                        };
                        fits && at(rest, tail)
                    }
                },
            }
        }
        at(&self.parts, input)
    }
}

impl std::fmt::Display for BytePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut tokens: Vec<String> = Vec::new();
        let mut exact = String::new();
        for part in &self.parts {
            if let BytePart::Exact(b) = part {
                match b {
                    b'\\' | b'?' | b'*' | b'[' => exact.push_str(&format!("\\{}", char::from(*b))),
                    b'!'..=b'~' => exact.push(char::from(*b)),
                    _ => exact.push_str(&format!("\\x{b:02x}")),
                }
                continue;
            }
            if !exact.is_empty() {
                tokens.push(std::mem::take(&mut exact));
            }
            tokens.push(match part {
                BytePart::Class { class, .. } => class.symbol().to_string(),
                _ => "*".to_string(),
            });
        }
        if !exact.is_empty() {
            tokens.push(exact);
        }
        if tokens.is_empty() {
            return f.write_str("(empty)");
        }
        f.write_str(&tokens.join(" "))
    }
}

/// Generalizes `input`, a reproducer that `test` accepts (it shows the crash label), into a byte
/// pattern, spending at most `settings.budget` executions of `test`: first the widest class
/// each position may take, then which runs of free bytes may be of any length.
pub fn generalize_bytes(
    input: &[u8],
    settings: &Settings,
    test: &mut dyn FnMut(&[u8]) -> Verdict,
) -> BytePattern {
    let mut oracle = Oracle {
        test,
        spent: 0,
        budget: settings.budget,
        stopped: false,
    };
    let mut parts: Vec<BytePart> = input.iter().map(|&b| BytePart::Exact(b)).collect();
    if widen_positions(input, settings, &mut oracle, &mut parts) {
        let any_runs = length_free_runs(input, &parts, settings, &mut oracle);
        // Replace each length-free run by one `*`, from the back so indices stay valid.
        for (run, shown, tried) in any_runs.into_iter().rev() {
            parts.splice(run, [BytePart::AnyRun { shown, tried }]);
        }
    }
    BytePattern {
        parts,
        probes: oracle.spent,
        typed: None,
    }
}

/// Position by position, the widest class that still shows the label. False when the budget or
/// the run ended first.
fn widen_positions(
    input: &[u8],
    settings: &Settings,
    oracle: &mut Oracle<'_>,
    parts: &mut [BytePart],
) -> bool {
    for (position, &original) in input.iter().enumerate() {
        for class in [
            ByteClass::Any,
            ByteClass::Printable,
            ByteClass::Letter,
            ByteClass::Digit,
        ] {
            if !class.contains(original) {
                continue;
            }
            let others: Vec<u8> = class
                .members()
                .into_iter()
                .filter(|&b| b != original)
                .collect();
            if others.is_empty() {
                continue;
            }
            let mut variant = |i: u64| {
                let pick = mix(&[position as u64, i, others.len() as u64]) as usize % others.len();
                let mut v = input.to_vec();
                v[position] = others[pick];
                Some(v)
            };
            match oracle.trial(settings, &mut variant) {
                Trial::Abstract { shown, tried } => {
                    parts[position] = BytePart::Class {
                        class,
                        shown,
                        tried,
                    };
                    break;
                }
                Trial::Concrete => {}
                Trial::Stopped => return false,
            }
        }
    }
    true
}

/// The runs of positions that may be any byte, and the empty run at the input's end.
fn free_runs(parts: &[BytePart], input_len: usize) -> Vec<std::ops::Range<usize>> {
    let is_free = |part: &BytePart| {
        matches!(
            part,
            BytePart::Class {
                class: ByteClass::Any,
                ..
            }
        )
    };
    let mut runs = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        let start = i;
        while i < parts.len() && is_free(&parts[i]) {
            i += 1;
        }
        if i > start {
            runs.push(start..i);
        } else {
            i += 1;
        }
    }
    runs.push(input_len..input_len);
    runs
}

/// Which free runs may be of any length (filled with random bytes of other lengths, the input
/// still shows the label), with the trial's counts.
fn length_free_runs(
    input: &[u8],
    parts: &[BytePart],
    settings: &Settings,
    oracle: &mut Oracle<'_>,
) -> Vec<(std::ops::Range<usize>, u32, u32)> {
    let mut any_runs = Vec::new();
    for run in free_runs(parts, input.len()) {
        let mut variant = |i: u64| {
            let seed = mix(&[run.start as u64, run.end as u64, i]);
            let length = (seed % (2 * run.len() as u64 + 4)) as usize;
            if length == run.len() {
                return None;
            }
            let filler = (0..length).map(|k| (mix(&[seed, k as u64]) >> 24) as u8);
            let mut v = input[..run.start].to_vec();
            v.extend(filler);
            v.extend_from_slice(&input[run.end..]);
            Some(v)
        };
        match oracle.trial(settings, &mut variant) {
            Trial::Abstract { shown, tried } => any_runs.push((run, shown, tried)),
            Trial::Concrete => {}
            Trial::Stopped => break,
        }
    }
    any_runs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled target's `tagged` bug: a `B`, any byte, then `0xff`, anything after.
    fn tagged(input: &[u8]) -> Verdict {
        Verdict::from(input.len() >= 3 && input[0] == b'B' && input[2] == 0xff)
    }

    #[test]
    fn a_tag_any_byte_and_a_value_generalize_exactly() {
        let pattern = generalize_bytes(b"B\x00\xff", &Settings::DEFAULT, &mut tagged);
        assert_eq!(pattern.to_string(), "B ? \\xff *");
        assert!(pattern.probes <= Settings::DEFAULT.budget);
        assert!(pattern.matches(b"B7\xff"));
        assert!(pattern.matches(b"B7\xffmore"));
        assert!(!pattern.matches(b"C7\xff"));
        assert!(!pattern.matches(b"B\xff"));
    }

    #[test]
    fn classes_and_length_free_runs_are_found() {
        // A digit, then a letter, then anything of any length, then `;`.
        let test = &mut |input: &[u8]| {
            Verdict::from(
                input.len() >= 3
                    && input[0].is_ascii_digit()
                    && input[1].is_ascii_alphabetic()
                    && input.ends_with(b";"),
            )
        };
        let pattern = generalize_bytes(b"0axx;", &Settings::DEFAULT, test);
        assert_eq!(pattern.to_string(), "[0-9] [a-zA-Z] * ;");
        assert!(pattern.matches(b"7Q;"));
        assert!(pattern.matches(b"7Qabcdef;"));
        assert!(!pattern.matches(b"7Qabcdef"));
    }

    #[test]
    fn the_budget_bounds_the_executions() {
        let mut calls = 0;
        let pattern = generalize_bytes(b"B\x00\xff", &Settings::with_budget(5), &mut |input| {
            calls += 1;
            tagged(input)
        });
        assert_eq!(calls, 5);
        assert_eq!(pattern.probes, 5);
        assert_eq!(
            pattern.parts.len(),
            3,
            "what was not decided stays concrete"
        );
    }
}
