//! What CmpLog keeps of a traced run: its distinct, useful comparison operands, capped per corpus
//! entry (the cache of recent entries' operands: [`super::traced`]).

use super::varint::{encoded_operands, EncodedOperand};

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
///
/// With `transforms`, a comparison neither of whose sides occurs in the input is tried once
/// more as a transform of an input value ([`Occurrences::untransformed`]); up to
/// [`MAX_TRANSFORMED_OPERANDS`] of those come after the others. Such comparisons are also looked
/// for variable-length encoded ([`super::varint::encoded_operands`]).
#[must_use]
pub fn distinct_operands(
    logged: Vec<libafl::observers::CmpValues>,
    input: &[u8],
    cap: usize,
    transforms: bool,
) -> KeptOperands {
    let occurrences = Occurrences::of(input);
    let (kept, unfound): (Vec<_>, Vec<_>) =
        distinct(logged.into_iter().flat_map(narrower_shapes).collect())
            .into_iter()
            .partition(|value| occurrences.can_replace(value));
    let mut plain = spread_evenly(kept, cap);
    let mut encoded = Vec::new();
    if transforms {
        let untransformed = unfound
            .iter()
            .filter_map(|value| occurrences.untransformed(value));
        plain.extend(
            distinct(untransformed.collect())
                .into_iter()
                .take(MAX_TRANSFORMED_OPERANDS),
        );
        encoded = encoded_operands(&unfound, |pattern| occurrences.holds_bytes(pattern));
    }
    KeptOperands { plain, encoded }
}

/// The comparison operands input-to-state replacement can use on one input.
#[derive(Debug, Default)]
pub struct KeptOperands {
    /// Operands the input holds as plain bytes (or as an arithmetic transform's), for LibAFL's
    /// replacement.
    pub plain: Vec<libafl::observers::CmpValues>,
    /// Operands the input holds variable-length encoded.
    pub encoded: Vec<EncodedOperand>,
}

/// The most comparisons kept per corpus entry that were found in the input only through an
/// arithmetic transform. Few comparisons need one (a length field stored divided by four, a
/// count stored minus one), and a small value's bytes occur in many inputs by chance.
pub const MAX_TRANSFORMED_OPERANDS: usize = 32;

/// `kept` if it has at most `cap` entries, else `cap` of them spread evenly over it.
fn spread_evenly(
    kept: Vec<libafl::observers::CmpValues>,
    cap: usize,
) -> Vec<libafl::observers::CmpValues> {
    if kept.len() <= cap {
        return kept;
    }
    let step = kept.len() as f64 / cap as f64;
    (0..cap)
        .map(|i| kept[(i as f64 * step) as usize].clone())
        .collect()
}

/// The multipliers of the transforms [`Occurrences::untransformed`] undoes: a stored count of
/// 2-, 4- or 8-byte units, or of bytes.
const TRANSFORM_FACTORS: [u64; 4] = [1, 2, 4, 8];

/// The largest offset, either way, of the transforms [`Occurrences::untransformed`] undoes: a
/// count stored minus one, a length that includes a header of a few bytes.
const TRANSFORM_MAX_OFFSET: u64 = 8;

/// `x` as `v · factor + offset` (or `v · factor − offset` when `minus`): `v`, if it exists
/// without wrapping around.
fn undo_transform(x: u64, factor: u64, offset: u64, minus: bool) -> Option<u64> {
    let scaled = if minus {
        x.checked_add(offset)?
    } else {
        x.checked_sub(offset)?
    };
    (scaled % factor == 0).then_some(scaled / factor)
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

    /// Whether `pattern` (one byte or more) occurs in the input.
    fn holds_bytes(&self, pattern: &[u8]) -> bool {
        match pattern {
            [] => false,
            [byte] => self.bytes[usize::from(*byte)],
            _ => self.holds(pattern),
        }
    }

    /// Whether `a` or `b`, integers `width` bytes wide, occurs in the input in either byte order.
    fn holds_a_side(&self, a: u64, b: u64, width: usize) -> bool {
        [a, b].iter().any(|v| {
            self.holds(&v.to_le_bytes()[..width]) || self.holds(&v.to_be_bytes()[8 - width..])
        })
    }

    /// Whether `v`, an integer `width` bytes wide, occurs in the input in either byte order.
    fn holds_value(&self, v: u64, width: usize) -> bool {
        (width == 8 || v >> (8 * width) == 0)
            && (self.holds(&v.to_le_bytes()[..width]) || self.holds(&v.to_be_bytes()[8 - width..]))
    }

    /// For a 32- or 64-bit comparison neither of whose sides occurs in the input: the same
    /// comparison on the input value `v` one side is an affine transform of (`v · m ± k`, `m`
    /// in [`TRANSFORM_FACTORS`], `k` up to [`TRANSFORM_MAX_OFFSET`]), against the value whose
    /// transform is the other side, so that input-to-state replacement can write it. A
    /// format's reader often checks a field only after scaling it: xz compares its index's
    /// size with `(backward_size + 1) · 4`, the footer storing `backward_size`. The first
    /// transform found wins, smallest factor and offset first; a 64-bit comparison's value is
    /// also looked for in 4 bytes (the field is often 32 bits, widened before the arithmetic).
    /// The result is `(target, v, true)`: marked constant on the side to write, so that
    /// LibAFL's replacement only ever writes `target` over `v`.
    fn untransformed(
        &self,
        value: &libafl::observers::CmpValues,
    ) -> Option<libafl::observers::CmpValues> {
        use libafl::observers::CmpValues;
        let (a, b, width) = match *value {
            CmpValues::U32((a, b, _)) => (a.into(), b.into(), 4),
            CmpValues::U64((a, b, _)) => (a, b, 8),
            _ => return None,
        };
        for factor in TRANSFORM_FACTORS {
            for offset in 0..=TRANSFORM_MAX_OFFSET {
                for minus in [false, true] {
                    if (minus || factor == 1) && offset == 0 {
                        continue;
                    }
                    for (seen, wanted) in [(a, b), (b, a)] {
                        let (Some(v), Some(target)) = (
                            undo_transform(seen, factor, offset, minus),
                            undo_transform(wanted, factor, offset, minus),
                        ) else {
                            continue;
                        };
                        if let (Ok(v), Ok(target)) = (u32::try_from(v), u32::try_from(target)) {
                            if self.holds_value(v.into(), 4) {
                                return Some(CmpValues::U32((target, v, true)));
                            }
                        } else if width == 8 && self.holds_value(v, 8) {
                            return Some(CmpValues::U64((target, v, true)));
                        }
                    }
                }
            }
        }
        None
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
        let kept = distinct_operands(logged.clone(), &input, 10, true).plain;
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
        assert_eq!(distinct_operands(logged, &input, 2, true).plain.len(), 2);
        let many: Vec<CmpValues> = (0..10_000u32)
            .map(|i| CmpValues::U32((i << 16, (i + 1) << 16, false)))
            .collect();
        let every_value: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i << 16).to_le_bytes())
            .collect();
        let kept = distinct_operands(many, &every_value, MAX_TRACED_OPERANDS, true).plain;
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
        let kept = distinct_operands(logged, b"ADD EN", 4, false).plain;
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
            false,
        )
        .plain;
        assert_eq!(big_endian.len(), 1, "either byte order counts");
    }

    #[test]
    fn a_comparison_of_a_scaled_input_value_is_written_unscaled() {
        // xz's stream footer: the index's size (8 bytes for an empty index) is compared with
        // `(backward_size + 1) * 4`, the footer holding `backward_size` as 4 bytes.
        let backward_size: u64 = 0x5a5a_5a5a;
        let logged = vec![CmpValues::U64((8, (backward_size + 1) * 4, false))];
        let footer = [0xfd, 0x37, 0x5a, 0x5a, 0x5a, 0x5a, 0x00, 0x04, b'Y', b'Z'];
        assert_eq!(
            distinct_operands(logged.clone(), &footer, 4, false).plain,
            [],
            "neither side is in the input"
        );
        let kept = distinct_operands(logged, &footer, 4, true).plain;
        assert_eq!(kept, [CmpValues::U32((1, 0x5a5a_5a5a, true))]);
        let mut state = libafl::state::NopState::<BytesInput>::new();
        state
            .metadata_map_mut()
            .insert(CmpValuesMetadata { list: kept });
        let mut replace = libafl::mutators::I2SRandReplace;
        let mut fixed = false;
        for _ in 0..64 {
            let mut mutant = BytesInput::new(footer.to_vec());
            if replace.mutate(&mut state, &mut mutant).unwrap()
                == libafl::mutators::MutationResult::Mutated
            {
                fixed |= mutant.as_ref()[2..6] == [1, 0, 0, 0];
            }
        }
        assert!(fixed, "the footer's field is set to 1, which scales to 8");
    }

    #[test]
    fn transforms_are_undone_both_ways_and_only_where_the_value_occurs() {
        let occurrences = Occurrences::of(&[9, 0x10, 0x20, 0x30, 0x40, 9]);
        // A count stored minus one, compared with 0x200: write 0x1ff.
        assert_eq!(
            occurrences.untransformed(&CmpValues::U32((0x4030_2011, 0x200, true))),
            Some(CmpValues::U32((0x1ff, 0x4030_2010, true)))
        );
        // The other side is the transformed one (big-endian in the input, a length of 2-byte
        // units plus a 3-byte header).
        assert_eq!(
            occurrences.untransformed(&CmpValues::U32((0x2b, 0x1020_3040 * 2 + 3, false))),
            Some(CmpValues::U32((0x14, 0x1020_3040, true)))
        );
        // No value of the input scales to either side.
        assert_eq!(
            occurrences.untransformed(&CmpValues::U32((0x9999_9999, 0x201, false))),
            None
        );
        assert_eq!(
            occurrences.untransformed(&CmpValues::U16((0x2011, 0x30, false))),
            None,
            "two-byte values occur by chance too often to be worth it"
        );
        assert_eq!(undo_transform(3, 4, 5, false), None, "no wrapping around");
        assert_eq!(undo_transform(u64::MAX, 1, 1, true), None);
        assert_eq!(undo_transform(13, 4, 3, true), Some(4));
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
}
