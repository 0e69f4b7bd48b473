//! Labels: the facts one execution shows.
//!
//! A label is either an *edge label* — one SanitizerCoverage edge together with the AFL bucket of
//! its hit count — or a *crash label* — one kind of failure at one place. Both are packed in a
//! `u64` so the hot path compares integers and the table can index edges densely.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use crate::stable_hash::Fnv1a;

/// The kind of a failure. Written as its name (`panic`, `stack-overflow`, ...) in crash labels,
/// `summary.json` and saved state, so the names never change.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum CrashKind {
    /// A Rust panic in the target.
    Panic,
    /// A signal from the target's own fault or abort.
    Signal,
    /// A sanitizer's report (the message names its bug type).
    Sanitizer,
    /// The stack ran out.
    StackOverflow,
    /// The target called `exit()`.
    Exit,
    /// An execution over the time limit.
    Timeout,
    /// An execution over the memory limit.
    Oom,
    /// Any other failure LibAFL reports, by its name.
    Other(String),
}

impl CrashKind {
    /// The kind's name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            CrashKind::Panic => "panic",
            CrashKind::Signal => "signal",
            CrashKind::Sanitizer => "sanitizer",
            CrashKind::StackOverflow => "stack-overflow",
            CrashKind::Exit => "exit",
            CrashKind::Timeout => "timeout",
            CrashKind::Oom => "oom",
            CrashKind::Other(name) => name,
        }
    }
}

impl From<String> for CrashKind {
    fn from(name: String) -> Self {
        match name.as_str() {
            "panic" => CrashKind::Panic,
            "signal" => CrashKind::Signal,
            "sanitizer" => CrashKind::Sanitizer,
            "stack-overflow" => CrashKind::StackOverflow,
            "exit" => CrashKind::Exit,
            "timeout" => CrashKind::Timeout,
            "oom" => CrashKind::Oom,
            _ => CrashKind::Other(name),
        }
    }
}

impl From<CrashKind> for String {
    fn from(kind: CrashKind) -> Self {
        kind.as_str().to_string()
    }
}

impl std::fmt::Display for CrashKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Set on crash labels, clear on edge labels.
const CRASH_BIT: u64 = 1 << 63;
/// Set on comparison labels (value profile and comparison progress).
const COMPARISON_BIT: u64 = 1 << 62;
/// A comparison label's low byte: the value profile's matching bits (0..=64), or one of these
/// tags with the progress it measures in the low bits.
const EQUAL_COUNT_TAG: u64 = 0x80;
const DISTANCE_TAG: u64 = 0xc0;

/// Number of AFL hit-count buckets per edge (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+).
pub const BUCKETS_PER_EDGE: usize = 8;

/// One label: an (edge, hit-count bucket) pair or a crash label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Label(u64);

impl Label {
    /// The label of `edge` taken with the AFL-classified hit count `classified`.
    ///
    /// `classified` is a value written by LibAFL's hit-count classification: a single set bit
    /// (1, 2, 4, ... 128), whose position is the bucket.
    #[must_use]
    pub fn edge(edge: usize, classified: u8) -> Self {
        debug_assert!(classified != 0, "an edge that was not hit has no label");
        let bucket = u64::from(classified.trailing_zeros());
        Label(((edge as u64) << 3) | bucket)
    }

    /// The label of a crash of `kind` at `location` (both stable across runs and processes).
    #[must_use]
    pub fn crash(kind: &str, location: &str) -> Self {
        let mut hash = Fnv1a::new();
        hash.write(kind.as_bytes());
        hash.write(&[0]);
        hash.write(location.as_bytes());
        Label(CRASH_BIT | (hash.finish() & !CRASH_BIT))
    }

    /// The label of comparison site `site` when `matching_bits` bits of its operands agreed
    /// at best in an execution (value profile).
    #[must_use]
    pub fn comparison(site: usize, matching_bits: u8) -> Self {
        Label(COMPARISON_BIT | ((site as u64) << 8) | u64::from(matching_bits))
    }

    /// The label of comparison site `site` when its operands came out equal `count` times in
    /// one execution, by AFL hit-count bucket (`count` ≥ 1): a byte test feeding a select
    /// changes no edge, but one more equal outcome is a new label.
    #[must_use]
    pub fn comparison_equal_count(site: usize, count: u8) -> Self {
        debug_assert!(
            count != 0,
            "a comparison never equal has no equal-count label"
        );
        let bucket = u64::from(CLASSIFIED[usize::from(count)].trailing_zeros());
        Label(COMPARISON_BIT | ((site as u64) << 8) | EQUAL_COUNT_TAG | bucket)
    }

    /// The label of comparison site `site` when its operands came within a distance of
    /// `distance_bits` bits at best in one execution (the bit length of the smallest `|a - b|`,
    /// 1..=64): a counter or a magic number approached one power of two at a time.
    #[must_use]
    pub fn comparison_distance(site: usize, distance_bits: u8) -> Self {
        debug_assert!((1..=64).contains(&distance_bits), "{distance_bits}");
        let bits = u64::from(distance_bits.clamp(1, 64) - 1);
        Label(COMPARISON_BIT | ((site as u64) << 8) | DISTANCE_TAG | bits)
    }

    /// True for crash labels.
    #[must_use]
    pub fn is_crash(self) -> bool {
        self.0 & CRASH_BIT != 0
    }

    /// True for comparison labels.
    #[must_use]
    pub fn is_comparison(self) -> bool {
        !self.is_crash() && self.0 & COMPARISON_BIT != 0
    }

    /// For an edge label, the edge index and the bucket index (0..8).
    #[must_use]
    pub fn as_edge(self) -> Option<(usize, usize)> {
        (!self.is_crash() && !self.is_comparison())
            .then_some(((self.0 >> 3) as usize, (self.0 & 7) as usize))
    }

    /// Position of an edge label in a dense per-(edge, bucket) array.
    #[must_use]
    pub fn dense_index(self) -> Option<usize> {
        self.as_edge().map(|_| self.0 as usize)
    }

    /// The raw packed value.
    #[must_use]
    pub fn raw(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_edge() {
            Some((edge, bucket)) => write!(f, "edge:{edge}:{}", BUCKET_NAMES[bucket]),
            None if self.is_comparison() => {
                let site = (self.0 & !COMPARISON_BIT) >> 8;
                let low = self.0 & 0xff;
                if low & DISTANCE_TAG == DISTANCE_TAG {
                    write!(f, "cmp:{site}:distance<2^{}", (low & 0x3f) + 1)
                } else if low & EQUAL_COUNT_TAG != 0 {
                    let bucket = (low & 7) as usize;
                    write!(f, "cmp:{site}:equal:{}", BUCKET_NAMES[bucket])
                } else {
                    write!(f, "cmp:{site}:{low}")
                }
            }
            None => write!(f, "crash:{:016x}", self.0 & !CRASH_BIT),
        }
    }
}

/// A map keyed by labels, hashed with [`LabelHasher`].
pub type LabelMap<V> = HashMap<Label, V, BuildHasherDefault<LabelHasher>>;

/// The hasher of label maps: one multiply and a fold. Every execution looks up each of its
/// comparison and crash labels, and SipHash (std's default, built against flooding by
/// adversarial keys, which labels are not) cost a tenth of a run on a comparison-heavy target.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelHasher(u64);

impl LabelHasher {
    const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
}

impl Hasher for LabelHasher {
    fn finish(&self) -> u64 {
        // The product's high half depends on every bit of the key: fold it into the low bits,
        // which pick the bucket.
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(Self::MULTIPLIER);
    }
}

/// Human names of the AFL buckets, by bucket index.
const BUCKET_NAMES: [&str; BUCKETS_PER_EDGE] =
    ["1", "2", "3", "4-7", "8-15", "16-31", "32-127", "128+"];

/// The AFL hit-count bucket of a raw hit count, as LibAFL's classification writes it (a single
/// set bit: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+ become 1, 2, 4, ... 128; 0 stays 0).
const CLASSIFIED: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut count = 1;
    while count < 256 {
        table[count] = match count {
            1 => 1,
            2 => 2,
            3 => 4,
            4..=7 => 8,
            8..=15 => 16,
            16..=31 => 32,
            32..=127 => 64,
            _ => 128,
        };
        count += 1;
    }
    table
};

/// Appends the edge labels of a raw hit-count map to `out`, each edge with its AFL bucket.
///
/// Reads 64 map bytes at a time so that the common case — long runs of untouched edges — costs
/// a few OR instructions per block.
pub fn collect_edge_labels(hit_counts: &[u8], out: &mut Vec<Label>) {
    const BLOCK: usize = 64;
    let mut blocks = hit_counts.chunks_exact(BLOCK);
    let mut base = 0;
    for block in &mut blocks {
        let any = block.chunks_exact(8).fold(0u64, |acc, word| {
            acc | u64::from_ne_bytes(word.try_into().expect("eight"))
        });
        if any != 0 {
            push_hit_edges(block, base, out);
        }
        base += BLOCK;
    }
    push_hit_edges(blocks.remainder(), base, out);
}

fn push_hit_edges(counts: &[u8], base: usize, out: &mut Vec<Label>) {
    let mut words = counts.chunks_exact(8);
    let mut word_base = base;
    for word in &mut words {
        // Visits the non-zero bytes of the word only (little-endian byte order = map order).
        let mut bits = u64::from_le_bytes(word.try_into().expect("eight"));
        while bits != 0 {
            let byte = bits.trailing_zeros() / 8;
            let count = (bits >> (byte * 8)) as u8;
            out.push(Label::edge(
                word_base + byte as usize,
                CLASSIFIED[usize::from(count)],
            ));
            bits &= !(0xff << (byte * 8));
        }
        word_base += 8;
    }
    for (offset, &count) in words.remainder().iter().enumerate() {
        if count != 0 {
            out.push(Label::edge(
                word_base + offset,
                CLASSIFIED[usize::from(count)],
            ));
        }
    }
}

/// A short stable hex digest of some bytes, for file names.
#[must_use]
pub fn short_digest(bytes: &[u8]) -> String {
    let mut hash = Fnv1a::new();
    hash.write(bytes);
    format!("{:016x}", hash.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_labels_carry_edge_and_bucket() {
        let label = Label::edge(1234, 16);
        assert_eq!(label.as_edge(), Some((1234, 4)));
        assert!(!label.is_crash());
        assert_eq!(label.to_string(), "edge:1234:8-15");
        assert_ne!(Label::edge(1234, 16), Label::edge(1234, 32));
        assert_ne!(Label::edge(1234, 16), Label::edge(1235, 16));
    }

    #[test]
    fn crash_labels_are_stable_and_distinct() {
        let a = Label::crash("panic", "src/main.rs:10:5");
        assert!(a.is_crash());
        assert_eq!(a, Label::crash("panic", "src/main.rs:10:5"));
        assert_ne!(a, Label::crash("panic", "src/main.rs:11:5"));
        assert_ne!(a, Label::crash("timeout", "src/main.rs:10:5"));
        // No field can bleed into the next: the separator keeps ("ab","c") apart from ("a","bc").
        assert_ne!(Label::crash("ab", "c"), Label::crash("a", "bc"));
        assert_eq!(a.as_edge(), None);
    }

    #[test]
    fn comparison_progress_labels_are_apart_from_each_other_and_from_edges() {
        let site = 4321;
        let equal: Vec<Label> = (1..=255)
            .map(|count| Label::comparison_equal_count(site, count))
            .collect();
        // Counts in one hit-count bucket share a label; the buckets are the edges' eight.
        assert_eq!(equal[3], Label::comparison_equal_count(site, 7));
        let mut buckets = equal.clone();
        buckets.dedup();
        assert_eq!(buckets.len(), BUCKETS_PER_EDGE);
        let distance: Vec<Label> = (1..=64)
            .map(|bits| Label::comparison_distance(site, bits))
            .collect();
        let profile: Vec<Label> = (0..=64).map(|bits| Label::comparison(site, bits)).collect();
        let mut all: Vec<Label> = buckets
            .iter()
            .chain(&distance)
            .chain(&profile)
            .copied()
            .collect();
        all.extend([
            Label::comparison_equal_count(site + 1, 1),
            Label::edge(site, 1),
        ]);
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "two kinds of progress share a label");
        assert!(distance.iter().chain(&buckets).all(|l| l.is_comparison()));
        assert_eq!(equal[2].to_string(), "cmp:4321:equal:3");
        assert_eq!(distance[2].to_string(), "cmp:4321:distance<2^3");
        assert_eq!(Label::comparison(site, 17).to_string(), "cmp:4321:17");
    }

    #[test]
    fn collects_every_hit_edge_with_its_bucket_and_nothing_else() {
        // Across a 64-byte block boundary and into the remainder.
        let mut map = vec![0u8; 150];
        let hits = [
            (0, 1, 1),
            (7, 200, 128),
            (8, 2, 2),
            (20, 3, 4),
            (63, 5, 8),
            (64, 12, 16),
        ];
        let more = [
            (100, 31, 32),
            (101, 32, 64),
            (127, 127, 64),
            (128, 128, 128),
            (149, 16, 32),
        ];
        for &(edge, count, _) in hits.iter().chain(&more) {
            map[edge] = count;
        }
        let mut labels = Vec::new();
        collect_edge_labels(&map, &mut labels);
        let expected: Vec<Label> = hits
            .iter()
            .chain(&more)
            .map(|&(edge, _, classified)| Label::edge(edge, classified))
            .collect();
        assert_eq!(labels, expected);
    }
}
