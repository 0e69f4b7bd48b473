//! Input-to-state replacement through variable-length integer encodings: formats store sizes,
//! counts and ids in 7-bit groups (xz's Block Header sizes and filter ids, protobuf, WebAssembly,
//! DWARF), so the value a program compares is in the input neither as little- nor as big-endian
//! bytes, and a replacement of the encoded value changes the input's length whenever the two
//! values' encodings differ in length.

use libafl::inputs::BytesInput;
use libafl::mutators::{I2SRandReplace, MutationResult, Mutator};
use libafl::observers::{CmpValues, CmpValuesMetadata};
use libafl::state::{HasMaxSize, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::Rand;
use libafl_bolts::Named;

/// The encodings tried, in this order.
const ENCODINGS: [Varint; 2] = [Varint::Leb128, Varint::Vlq];

/// A variable-length integer encoding of 7 bits a byte, the high bit set on every byte but the
/// last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Varint {
    /// Lowest group first (LEB128: xz, protobuf, WebAssembly, DWARF).
    Leb128,
    /// Highest group first (MIDI's and ASN.1's VLQ).
    Vlq,
}

impl Varint {
    /// `value` in this encoding, at its shortest (readers reject padded encodings).
    fn encode(self, mut value: u64) -> Vec<u8> {
        let mut groups = Vec::with_capacity(10);
        loop {
            groups.push((value & 0x7f) as u8);
            value >>= 7;
            if value == 0 {
                break;
            }
        }
        if self == Varint::Vlq {
            groups.reverse();
        }
        let last = groups.len() - 1;
        for group in &mut groups[..last] {
            *group |= 0x80;
        }
        groups
    }
}

/// A compared value as the input holds it, variable-length encoded, and the value the program
/// compared it with in the same encoding: a mutant writes `wanted` in place of `seen`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct EncodedOperand {
    /// The encoding found in the input.
    pub seen: Vec<u8>,
    /// The encoding of the other side of the comparison.
    pub wanted: Vec<u8>,
}

/// The encoded operands of the scheduled entry's traced run, for [`InputToStateReplace`].
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EncodedOperandsMetadata {
    /// The operands, as [`encoded_operands`] keeps them.
    pub list: Vec<EncodedOperand>,
}

libafl_bolts::impl_serdeany!(EncodedOperandsMetadata);

/// The most encoded operands kept per corpus entry. A small value's one-byte encoding occurs in
/// many inputs by chance: operands found as one byte come after those found as more.
pub const MAX_ENCODED_OPERANDS: usize = 32;

/// For the integer comparisons of `unfound` (none of whose sides occurs in the input as plain
/// bytes), the encodings of one side that `holds` says occur in the input, paired with the other
/// side's; at most [`MAX_ENCODED_OPERANDS`], those found as more than one byte first.
pub fn encoded_operands(
    unfound: &[CmpValues],
    holds: impl Fn(&[u8]) -> bool,
) -> Vec<EncodedOperand> {
    let mut seen_pairs = std::collections::HashSet::new();
    let mut found = Vec::new();
    for value in unfound {
        let (a, b) = match *value {
            CmpValues::U16((a, b, _)) => (a.into(), b.into()),
            CmpValues::U32((a, b, _)) => (a.into(), b.into()),
            CmpValues::U64((a, b, _)) => (a, b),
            CmpValues::U8(_) | CmpValues::Bytes(_) => continue,
        };
        'encodings: for encoding in ENCODINGS {
            for (seen, wanted) in [(a, b), (b, a)] {
                // One byte reads the same in both encodings, and LEB128 was looked for first.
                if encoding == Varint::Vlq && seen < 0x80 {
                    continue;
                }
                let operand = EncodedOperand {
                    seen: encoding.encode(seen),
                    wanted: encoding.encode(wanted),
                };
                if holds(&operand.seen) {
                    if seen_pairs.insert(operand.clone()) {
                        found.push(operand);
                    }
                    break 'encodings;
                }
            }
        }
    }
    // Stable: the order of the run within each kind.
    found.sort_by_key(|operand| operand.seen.len() == 1);
    found.truncate(MAX_ENCODED_OPERANDS);
    found
}

/// Input-to-state replacement of plain comparison operands ([`I2SRandReplace`], from
/// [`CmpValuesMetadata`]) and of encoded ones (from [`EncodedOperandsMetadata`]), each picked as
/// often as its share of the two lists.
#[derive(Debug, Default)]
pub struct InputToStateReplace {
    plain: I2SRandReplace,
}

impl InputToStateReplace {
    /// A replacement mutator over both lists.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl Named for InputToStateReplace {
    fn name(&self) -> &std::borrow::Cow<'static, str> {
        static NAME: std::borrow::Cow<'static, str> =
            std::borrow::Cow::Borrowed("InputToStateReplace");
        &NAME
    }
}

impl<S: HasMetadata + HasRand + HasMaxSize> Mutator<BytesInput, S> for InputToStateReplace {
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let plain = state
            .metadata_map()
            .get::<CmpValuesMetadata>()
            .map_or(0, |m| m.list.len());
        let encoded = state
            .metadata_map()
            .get::<EncodedOperandsMetadata>()
            .map_or(0, |m| m.list.len());
        let Some(total) = std::num::NonZero::new(plain + encoded) else {
            return Ok(MutationResult::Skipped);
        };
        let pick = state.rand_mut().below(total);
        if pick < plain {
            return self.plain.mutate(state, input);
        }
        // Drawn before the operand is borrowed from the state, so that it need not be cloned.
        let start = state.rand_mut().below_or_zero(input.as_ref().len());
        let operand = state
            .metadata_map()
            .get::<EncodedOperandsMetadata>()
            .and_then(|m| m.list.get(pick - plain))
            .ok_or_else(|| Error::empty("no encoded operand"))?;
        Ok(if replace_from(input.as_mut(), operand, start) {
            MutationResult::Mutated
        } else {
            MutationResult::Skipped
        })
    }

    fn post_exec(
        &mut self,
        _state: &mut S,
        _new_corpus_id: Option<libafl::corpus::CorpusId>,
    ) -> Result<(), Error> {
        Ok(())
    }
}

/// Replaces the first occurrence of `operand.seen` at or after `start` (else the first before
/// it) by `operand.wanted`, moving what follows when their lengths differ; whether there was one.
fn replace_from(bytes: &mut Vec<u8>, operand: &EncodedOperand, start: usize) -> bool {
    let width = operand.seen.len();
    if width == 0 || bytes.len() < width {
        return false;
    }
    let starts = bytes.len() - width + 1;
    let found = (start.min(starts)..starts)
        .chain(0..start.min(starts))
        .find(|&at| bytes[at..at + width] == operand.seen[..]);
    let Some(at) = found else {
        return false;
    };
    bytes.splice(at..at + width, operand.wanted.iter().copied());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_encoded_shortest_in_seven_bit_groups_both_ways() {
        assert_eq!(Varint::Leb128.encode(0), [0]);
        assert_eq!(Varint::Leb128.encode(0x7f), [0x7f]);
        assert_eq!(Varint::Leb128.encode(0x80), [0x80, 0x01]);
        assert_eq!(Varint::Leb128.encode(624_485), [0xe5, 0x8e, 0x26]);
        assert_eq!(Varint::Vlq.encode(0x80), [0x81, 0x00]);
        assert_eq!(Varint::Vlq.encode(0x0fff_ffff), [0xff, 0xff, 0xff, 0x7f]);
        assert_eq!(Varint::Leb128.encode(u64::MAX).len(), 10);
    }

    #[test]
    fn a_compared_value_found_encoded_is_paired_with_the_other_side_encoded() {
        // An xz Block Header states a compressed size of 300 (LEB128 ac 02); the decoder
        // counted 5000 bytes and compared the two.
        let input = [0x02, 0x40, 0xac, 0x02, 0x21, 0x01];
        let holds = |pattern: &[u8]| input.windows(pattern.len()).any(|w| w == pattern);
        let logged = [
            CmpValues::U64((5000, 300, false)),
            CmpValues::U64((5000, 300, false)),
            CmpValues::U32((0x1234_5678, 0x9abc, false)),
            CmpValues::U8((1, 2, false)),
        ];
        let found = encoded_operands(&logged, holds);
        assert_eq!(
            found,
            [EncodedOperand {
                seen: vec![0xac, 0x02],
                wanted: vec![0x88, 0x27],
            }]
        );
    }

    #[test]
    fn one_byte_pairs_come_after_multi_byte_ones_within_the_cap() {
        let input: Vec<u8> = (0..=0x7f).chain([0xac, 0x02]).collect();
        let holds = |pattern: &[u8]| input.windows(pattern.len()).any(|w| w == pattern);
        let mut logged: Vec<CmpValues> = (0..40u32)
            .map(|v| CmpValues::U32((v, v + 1000, false)))
            .collect();
        logged.push(CmpValues::U32((300, 7, false)));
        let found = encoded_operands(&logged, holds);
        assert_eq!(found.len(), MAX_ENCODED_OPERANDS);
        assert_eq!(found[0].seen, [0xac, 0x02], "the multi-byte pair first");
        assert!(found[1..].iter().all(|operand| operand.seen.len() == 1));
    }

    #[test]
    fn a_replacement_of_another_length_moves_what_follows() {
        let operand = EncodedOperand {
            seen: vec![0xac, 0x02],
            wanted: vec![0x05],
        };
        let mut bytes = vec![1, 0xac, 0x02, 9, 0xac, 0x02];
        assert!(replace_from(&mut bytes, &operand, 3));
        assert_eq!(
            bytes,
            [1, 0xac, 0x02, 9, 0x05],
            "the occurrence at or after 3"
        );
        assert!(replace_from(&mut bytes, &operand, 4));
        assert_eq!(bytes, [1, 0x05, 9, 0x05], "wrapped around to the first");
        assert!(!replace_from(&mut bytes, &operand, 0));
    }

    #[test]
    fn the_mutator_writes_encoded_operands_and_plain_ones() {
        use libafl::HasMetadata;
        let mut state = libafl::state::NopState::<BytesInput>::new();
        state.metadata_map_mut().insert(CmpValuesMetadata {
            list: vec![CmpValues::U32((0x0403_0201, 0x0d0c_0b0a, false))],
        });
        state.metadata_map_mut().insert(EncodedOperandsMetadata {
            list: vec![EncodedOperand {
                seen: vec![0xac, 0x02],
                wanted: vec![0x88, 0x27, 0x01],
            }],
        });
        let input = BytesInput::new(vec![0xfd, 0xac, 0x02, 1, 2, 3, 4]);
        let mut replace = InputToStateReplace::new();
        let (mut encoded, mut plain) = (false, false);
        for _ in 0..64 {
            let mut mutant = input.clone();
            if replace.mutate(&mut state, &mut mutant).unwrap() == MutationResult::Mutated {
                encoded |= mutant.as_ref()[..] == [0xfd, 0x88, 0x27, 0x01, 1, 2, 3, 4];
                plain |= mutant.as_ref()[..] == [0xfd, 0xac, 0x02, 0x0a, 0x0b, 0x0c, 0x0d];
            }
        }
        assert!(encoded && plain);
    }
}
