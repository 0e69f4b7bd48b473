//! What CmpLog keeps of a traced run: its distinct, useful comparison operands, capped per corpus
//! entry, and the bounded cache of the operands of recently scheduled entries.

use libafl::corpus::CorpusId;

/// The most comparison operands kept per corpus entry. A parser such as SQLite's logs tens of
/// thousands of comparisons per run, mostly the same ones again; kept whole they cost over a
/// megabyte per entry, gigabytes for a corpus.
pub const MAX_TRACED_OPERANDS: usize = 256;

/// The distinct entries of `logged` that input-to-state replacement can use on `input`, without
/// comparisons whose two sides are equal already (replacing one by the other changes nothing)
/// or neither of whose sides occurs in `input` (the only place a mutant writes); when more than
/// `cap` remain, `cap` of them spread evenly over the run, so that the comparisons of late
/// parsing stages are kept too. Each comparison comes with its narrower shape, if any
/// ([`narrower_shapes`]). A target's own set-up compares constants with constants on every run
/// (opening SQLite's database thousands of times): capped before this filter, they crowded out
/// the few comparisons that read the input.
#[must_use]
pub fn distinct_operands(
    logged: Vec<libafl::observers::CmpValues>,
    input: &[u8],
    cap: usize,
) -> Vec<libafl::observers::CmpValues> {
    let occurrences = Occurrences::of(input);
    let kept: Vec<_> = distinct(logged.into_iter().flat_map(narrower_shapes).collect())
        .into_iter()
        .filter(|value| occurrences.can_replace(value))
        .collect();
    if kept.len() <= cap {
        return kept;
    }
    let step = kept.len() as f64 / cap as f64;
    (0..cap)
        .map(|i| kept[(i as f64 * step) as usize].clone())
        .collect()
}

/// Which byte pairs an input holds, to tell quickly whether a comparison's operand occurs in it.
struct Occurrences<'a> {
    input: &'a [u8],
    bytes: [bool; 256],
    /// One bit per adjacent byte pair `(a, b)`, at `a << 8 | b`.
    pairs: Vec<u64>,
}

impl<'a> Occurrences<'a> {
    fn of(input: &'a [u8]) -> Self {
        let mut bytes = [false; 256];
        let mut pairs = vec![0u64; 65_536 / 64];
        for &b in input {
            bytes[usize::from(b)] = true;
        }
        for pair in input.windows(2) {
            let key = usize::from(pair[0]) << 8 | usize::from(pair[1]);
            pairs[key / 64] |= 1 << (key % 64);
        }
        Occurrences {
            input,
            bytes,
            pairs,
        }
    }

    /// Whether `pattern` (two bytes or more) occurs in the input.
    fn holds(&self, pattern: &[u8]) -> bool {
        let key = usize::from(pattern[0]) << 8 | usize::from(pattern[1]);
        self.pairs[key / 64] & (1 << (key % 64)) != 0
            && self.input.windows(pattern.len()).any(|w| w == pattern)
    }

    /// Whether `a` or `b`, integers `width` bytes wide, occurs in the input in either byte order.
    fn holds_a_side(&self, a: u64, b: u64, width: usize) -> bool {
        [a, b].iter().any(|v| {
            self.holds(&v.to_le_bytes()[..width]) || self.holds(&v.to_be_bytes()[8 - width..])
        })
    }

    /// Whether input-to-state replacement finds a side of `value` in the input, in either byte
    /// order for integers (byte strings are kept: their prefixes are searched too).
    fn can_replace(&self, value: &libafl::observers::CmpValues) -> bool {
        use libafl::observers::CmpValues;
        match *value {
            CmpValues::U8((a, b, _)) => self.bytes[usize::from(a)] || self.bytes[usize::from(b)],
            CmpValues::U16((a, b, _)) => self.holds_a_side(a.into(), b.into(), 2),
            CmpValues::U32((a, b, _)) => self.holds_a_side(a.into(), b.into(), 4),
            CmpValues::U64((a, b, _)) => self.holds_a_side(a, b, 8),
            CmpValues::Bytes(_) => true,
        }
    }
}

/// `value`, and for a 64-bit comparison whose two sides fit 32 bits, the same comparison at 32
/// bits. C code compares 32-bit checksums and lengths in `unsigned long` or `size_t`: the operand
/// then has 4 bytes in the input, not 8, and only the narrower shape is found there (zlib's
/// Adler-32 check is a 64-bit comparison of a byte-swapped 32-bit value). A 16-bit shape of
/// 32-bit comparisons was tried too and left out: on lcms and libpng it cost branches (600 s,
/// seed 1: lcms 1981 with it, 2064 without).
#[must_use]
pub fn narrower_shapes(value: libafl::observers::CmpValues) -> Vec<libafl::observers::CmpValues> {
    use libafl::observers::CmpValues;
    let narrower = match value {
        CmpValues::U64((a, b, c)) => u32::try_from(a)
            .ok()
            .zip(u32::try_from(b).ok())
            .map(|(a, b)| CmpValues::U32((a, b, c))),
        _ => None,
    };
    std::iter::once(value).chain(narrower).collect()
}

/// The distinct entries of `logged` with unequal sides, in order.
fn distinct(logged: Vec<libafl::observers::CmpValues>) -> Vec<libafl::observers::CmpValues> {
    use libafl::observers::CmpValues;
    use libafl_bolts::ToSlice;
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for value in logged {
        // (width, sides, is_const, bytes), and whether the two sides are equal already.
        let (key, same_sides): ((u8, u64, u64, bool, Vec<u8>), bool) = match &value {
            CmpValues::U8((a, b, c)) => ((1, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U16((a, b, c)) => ((2, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U32((a, b, c)) => ((4, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U64((a, b, c)) => ((8, *a, *b, *c, Vec::new()), a == b),
            CmpValues::Bytes((a, b)) => {
                let (a, b) = (a.to_slice(), b.to_slice());
                let both = [a, b].concat();
                ((0, a.len() as u64, b.len() as u64, false, both), *a == *b)
            }
        };
        if !same_sides && seen.insert(key) {
            kept.push(value);
        }
    }
    kept
}

/// The memory the traced operands of recently scheduled corpus entries may take, in bytes. A
/// count of entries was not enough: with up to 512 operands of 72 bytes an entry (a SQL
/// parser has that many), two thousand entries take up to 72 MiB, and a grammar run's process
/// grew toward that over its first hour as more and more of its corpus was scheduled once.
pub const TRACED_BYTES: usize = 16 << 20;

/// The traced comparison operands of the most recently scheduled corpus entries, newest last,
/// within [`TRACED_BYTES`]. A linear search over the ids per scheduled input costs nothing next
/// to the executions the stage runs.
#[derive(Debug, Default)]
pub(crate) struct TracedCache {
    entries: std::collections::VecDeque<(CorpusId, Vec<libafl::observers::CmpValues>)>,
    bytes: usize,
}

/// What one entry's operands take in the cache.
fn traced_bytes(list: &[libafl::observers::CmpValues]) -> usize {
    std::mem::size_of_val(list) + std::mem::size_of::<(CorpusId, Vec<u8>)>()
}

impl TracedCache {
    /// The operands kept for `id`, taken out of the cache (the caller puts them back, newest).
    pub(crate) fn take(&mut self, id: CorpusId) -> Option<Vec<libafl::observers::CmpValues>> {
        let position = self.entries.iter().position(|(entry, _)| *entry == id)?;
        let (_, list) = self.entries.remove(position)?;
        self.bytes -= traced_bytes(&list);
        Some(list)
    }

    /// Keeps `list` as `id`'s operands, dropping the oldest entries beyond [`TRACED_BYTES`].
    pub(crate) fn put(&mut self, id: CorpusId, mut list: Vec<libafl::observers::CmpValues>) {
        list.shrink_to_fit();
        self.bytes += traced_bytes(&list);
        self.entries.push_back((id, list));
        while self.bytes > TRACED_BYTES {
            let Some((_, oldest)) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= traced_bytes(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use libafl::inputs::BytesInput;
    use libafl::mutators::Mutator;
    use libafl::observers::{CmpValues, CmpValuesMetadata};
    use libafl::HasMetadata;

    use super::*;
    use crate::learned_tokens::logged_bytes as bytes;

    #[test]
    fn traced_operands_are_distinct_useful_and_capped() {
        let logged = vec![
            CmpValues::U32((7, 9, false)),
            CmpValues::U32((7, 9, true)),
            CmpValues::U64((7, 9, false)),
            CmpValues::U8((5, 5, false)),
            CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            CmpValues::Bytes((bytes(b"same"), bytes(b"same"))),
        ];
        let input = [1, 7, 0, 0, 0, 0, 0, 0, 0, 2];
        let kept = distinct_operands(logged.clone(), &input, 10);
        assert_eq!(
            kept,
            vec![
                CmpValues::U32((7, 9, false)),
                CmpValues::U32((7, 9, true)),
                CmpValues::U64((7, 9, false)),
                CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            ],
            "the same comparison once (the U64's 32-bit shape is the U32); equal sides never"
        );
        assert_eq!(distinct_operands(logged, &input, 2).len(), 2);
        let many: Vec<CmpValues> = (0..10_000u32)
            .map(|i| CmpValues::U32((i << 16, (i + 1) << 16, false)))
            .collect();
        let every_value: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i << 16).to_le_bytes())
            .collect();
        let kept = distinct_operands(many, &every_value, MAX_TRACED_OPERANDS);
        assert_eq!(kept.len(), MAX_TRACED_OPERANDS);
        // Spread over the whole run, not only its first comparisons.
        assert!(matches!(kept.last(), Some(CmpValues::U32((a, _, _))) if *a > 9_000 << 16));
    }

    #[test]
    fn comparisons_the_input_does_not_hold_are_left_out_before_the_cap() {
        // A set-up comparing constants on every run, then one comparison of an input byte.
        let mut logged: Vec<CmpValues> = (0..1_000u32)
            .map(|i| CmpValues::U32((0x4000_0000 + i, 0x5000_0000, true)))
            .collect();
        logged.push(CmpValues::U8((b'A', b'E', false)));
        logged.push(CmpValues::U16((0x4e45, 0x1234, true)));
        let kept = distinct_operands(logged, b"ADD EN", 4);
        assert_eq!(
            kept,
            vec![
                CmpValues::U8((b'A', b'E', false)),
                CmpValues::U16((0x4e45, 0x1234, true)),
            ],
            "the input's comparisons survive the cap; 0x4e45 is EN little-endian"
        );
        let big_endian = distinct_operands(
            vec![CmpValues::U32((0x0102_0304, 9, false))],
            &[1, 2, 3, 4],
            4,
        );
        assert_eq!(big_endian.len(), 1, "either byte order counts");
    }

    #[test]
    fn a_wide_comparison_of_narrow_values_is_also_tried_narrow() {
        // zlib's Adler-32 check: a byte-swapped 32-bit value compared in 64 bits.
        let shapes = narrower_shapes(CmpValues::U64((0x0102_0304, 0x0a0b_0c0d, false)));
        assert_eq!(
            shapes,
            [
                CmpValues::U64((0x0102_0304, 0x0a0b_0c0d, false)),
                CmpValues::U32((0x0102_0304, 0x0a0b_0c0d, false)),
            ]
        );
        assert_eq!(narrower_shapes(CmpValues::U64((1 << 40, 2, true))).len(), 1);
        assert_eq!(narrower_shapes(CmpValues::U32((80, 443, true))).len(), 1);
        // The 32-bit shape is what input-to-state replacement finds in the input: the four
        // checksum bytes, stored big-endian (read as a little-endian word and swapped by zlib),
        // are fixed in one mutation.
        let input = BytesInput::new(vec![0x78, 0x01, 0x01, 0x02, 0x03, 0x04]);
        let mut state = libafl::state::NopState::<BytesInput>::new();
        state.metadata_map_mut().insert(CmpValuesMetadata {
            list: vec![shapes[1].clone()],
        });
        let mut replace = libafl::mutators::I2SRandReplace;
        let mut fixed = false;
        for _ in 0..64 {
            let mut mutant = input.clone();
            if replace.mutate(&mut state, &mut mutant).unwrap()
                == libafl::mutators::MutationResult::Mutated
            {
                fixed |= mutant.as_ref()[..] == [0x78, 0x01, 0x0a, 0x0b, 0x0c, 0x0d];
            }
        }
        assert!(fixed);
    }

    #[test]
    fn the_traced_cache_keeps_the_most_recent_entries_within_its_memory() {
        let mut cache = TracedCache::default();
        let list = || vec![CmpValues::U8((1, 2, false)); MAX_TRACED_OPERANDS];
        let fit = TRACED_BYTES / traced_bytes(&list());
        for i in 0..3 * fit {
            cache.put(CorpusId(i), list());
            // The first entry is scheduled again and again: it stays.
            let first = cache.take(CorpusId(0)).expect("the first entry is kept");
            cache.put(CorpusId(0), first);
        }
        assert_eq!(cache.entries.len(), fit);
        assert!(cache.bytes <= TRACED_BYTES);
        assert!(cache.take(CorpusId(1)).is_none(), "old entries leave");
        assert!(cache.take(CorpusId(3 * fit - 1)).is_some());
    }
}
