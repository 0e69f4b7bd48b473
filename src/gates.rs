//! Gates: fields of an input that the program recomputes from the rest and compares, such as
//! a checksum or a length. A corpus entry that passes one (input-to-state wrote the right
//! value in) protects only its own bytes: almost every mutant of it changes what the field is
//! computed from, fails the comparison, and stops where the entry's parent stopped, so nothing
//! past the check is explored with anything but the entry's own content. zlib's round trip is
//! the example: every stream that reaches `compress2` carries an Adler-32 of its plaintext.
//!
//! An entry's gates are read from its traced run (the CmpLog stage): a comparison of two
//! computed values (neither side a constant) that came out equal, on a value of four or
//! eight bytes written exactly once in the input, little- or big-endian. A mutant of a gated
//! entry runs with the gates' comparisons watched (`labelfuzz_runtime::gate_watch`); if it
//! failed one, what the program computed there is written over the field and the repaired
//! mutant runs too. Its shrink candidates get the same repair ([`crate::consider`]), so an
//! entry behind a checksum shrinks as far as one without, and a crash found behind one keeps
//! the gates with its record ([`WatchedGates`]) for the shrink that resumes it after a restart.

use libafl::observers::CmpValues;
use serde::{Deserialize, Serialize};

/// Values below this are too common in inputs (lengths, counts, flags) to say where a field is.
const MIN_GATE_VALUE: u64 = 0x1_0000;

/// At most this many gates an entry (the sites one execution can watch): a format with many
/// derived fields would otherwise list every one.
pub const MAX_GATES: usize = labelfuzz_runtime::gate_watch::WATCHED_SITES;

/// One passed comparison of an entry: where the field is, how it is written, which
/// comparison site checks it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    /// The comparison site in LibAFL's CmpLog map.
    pub site: usize,
    /// The field's offset in the entry.
    pub offset: usize,
    /// The field's bytes in the entry (4 or 8 of them).
    pub bytes: Vec<u8>,
    /// Whether the field is written most significant byte first.
    pub big_endian: bool,
}

/// The gates a corpus entry passes (testcase metadata, set by its traced run).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Gates(pub Vec<Gate>);

libafl_bolts::impl_serdeany!(Gates);

/// Reads the gates of `input` from its traced run's comparisons, given as (site, operands),
/// in the order they were logged.
#[must_use]
pub fn passed_gates(logged: &[(usize, CmpValues)], input: &[u8]) -> Vec<Gate> {
    let mut gates: Vec<Gate> = Vec::new();
    for &(site, ref value) in logged {
        let Some(value) = equal_computed_value(value) else {
            continue;
        };
        if gates.iter().any(|g| g.site == site) {
            continue;
        }
        if let Some(gate) = field_of(site, value, input) {
            gates.push(gate);
            if gates.len() == MAX_GATES {
                break;
            }
        }
    }
    gates
}

/// The value of a comparison of two computed values that came out equal, when it is wide
/// enough to locate.
fn equal_computed_value(value: &CmpValues) -> Option<u64> {
    let (a, b) = match *value {
        CmpValues::U32((a, b, false)) => (u64::from(a), u64::from(b)),
        CmpValues::U64((a, b, false)) => (a, b),
        _ => return None,
    };
    (a == b && a >= MIN_GATE_VALUE).then_some(a)
}

/// The field holding `value` in `input`: its only occurrence as a 4-byte (when it fits) or
/// 8-byte integer of either byte order.
fn field_of(site: usize, value: u64, input: &[u8]) -> Option<Gate> {
    let mut found = None;
    for (bytes, big_endian) in encodings(value) {
        if !input.windows(bytes.len()).any(|w| w == &bytes[..]) {
            continue;
        }
        let offset = only_occurrence(input, &bytes)?;
        if found.is_some() {
            return None;
        }
        found = Some(Gate {
            site,
            offset,
            bytes,
            big_endian,
        });
    }
    found
}

/// Where `needle` occurs in `haystack`, when it occurs exactly once.
fn only_occurrence(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut at = haystack.windows(needle.len()).enumerate();
    let (offset, _) = at.find(|(_, w)| *w == needle)?;
    if at.any(|(_, w)| w == needle) {
        return None;
    }
    Some(offset)
}

/// The ways `value` can be written: 4 bytes when it fits (both orders), else 8.
fn encodings(value: u64) -> Vec<(Vec<u8>, bool)> {
    match u32::try_from(value) {
        Ok(v) if v.swap_bytes() == v => vec![(v.to_le_bytes().to_vec(), false)],
        Ok(v) => vec![
            (v.to_le_bytes().to_vec(), false),
            (v.to_be_bytes().to_vec(), true),
        ],
        Err(_) if value.swap_bytes() == value => vec![(value.to_le_bytes().to_vec(), false)],
        Err(_) => vec![
            (value.to_le_bytes().to_vec(), false),
            (value.to_be_bytes().to_vec(), true),
        ],
    }
}

impl Gate {
    /// Where `input` holds the value its run compared at this gate, and what the program
    /// computed there instead, when the comparison failed (`sides`: its operands). The field is
    /// found by the value compared rather than the entry's: a mutation may have moved it, and a
    /// shrink candidate's field holds what an earlier repair wrote. `None` when it passed, or
    /// when not exactly one side is written in the input as this gate's field is.
    #[must_use]
    pub fn failed_field(&self, input: &[u8], sides: (u64, u64)) -> Option<(usize, u64)> {
        let (a, b) = sides;
        if a == b {
            return None;
        }
        match (self.field_holding(input, a), self.field_holding(input, b)) {
            (Some(offset), None) => Some((offset, b)),
            (None, Some(offset)) => Some((offset, a)),
            _ => None,
        }
    }

    /// Writes `value` into the field at `offset` of `input`, in the gate's width and byte
    /// order. False when it does not fit there.
    pub fn write(&self, input: &mut [u8], offset: usize, value: u64) -> bool {
        let Some((bytes, width)) = self.encoded(value) else {
            return false;
        };
        let Some(field) = input.get_mut(offset..offset + width) else {
            return false;
        };
        field.copy_from_slice(&bytes[..width]);
        true
    }

    /// Where `input` holds `value` as this gate's field: at the entry's offset, else its only
    /// occurrence.
    fn field_holding(&self, input: &[u8], value: u64) -> Option<usize> {
        let (bytes, width) = self.encoded(value)?;
        let bytes = &bytes[..width];
        if input.get(self.offset..self.offset + width) == Some(bytes) {
            return Some(self.offset);
        }
        only_occurrence(input, bytes)
    }

    /// `value` in the gate's width and byte order, in the first `width` bytes (`None`: wider
    /// than the field). An array: it is read for every watched run that reached the gate.
    fn encoded(&self, value: u64) -> Option<([u8; 8], usize)> {
        let width = self.bytes.len().min(8);
        if width < 8 && value >> (8 * width) != 0 {
            return None;
        }
        let mut bytes = [0u8; 8];
        if self.big_endian {
            bytes[..width].copy_from_slice(&value.to_be_bytes()[8 - width..]);
        } else {
            bytes[..width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
        Some((bytes, width))
    }
}

/// The gates the engine watches while it runs inputs (state metadata, set by
/// [`crate::consider::Considerer::watch_gates`]): a crash found meanwhile keeps them with its
/// record, so that the shrink resuming it after the restart a signal causes repairs too.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WatchedGates(pub Vec<Gate>);

libafl_bolts::impl_serdeany!(WatchedGates);

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream with a big-endian 4-byte checksum at its end, as zlib writes Adler-32.
    fn stream() -> Vec<u8> {
        let mut input = b"\x78\x01plain bytes".to_vec();
        input.extend_from_slice(&0x1a2b_3c4d_u32.to_be_bytes());
        input
    }

    #[test]
    fn an_equal_comparison_of_computed_values_marks_the_field_that_holds_the_value() {
        let logged = [
            (3, CmpValues::U32((0x1a2b_3c4d, 0x1a2b_3c4d, true))),
            (7, CmpValues::U8((1, 1, false))),
            (9, CmpValues::U64((0x1a2b_3c4d, 0x1a2b_3c4d, false))),
            (9, CmpValues::U64((0x1a2b_3c4d, 0x1a2b_3c4d, false))),
        ];
        let gates = passed_gates(&logged, &stream());
        assert_eq!(
            gates,
            vec![Gate {
                site: 9,
                offset: 13,
                bytes: vec![0x1a, 0x2b, 0x3c, 0x4d],
                big_endian: true,
            }],
            "the constant comparison and the byte one are not gates; a site counts once"
        );
    }

    #[test]
    fn unequal_small_or_ambiguous_values_are_not_gates() {
        let mut twice = stream();
        twice.extend_from_slice(&0x1a2b_3c4d_u32.to_be_bytes());
        let equal = CmpValues::U32((0x1a2b_3c4d, 0x1a2b_3c4d, false));
        assert!(passed_gates(&[(1, equal.clone())], &twice).is_empty());
        assert!(passed_gates(&[(1, CmpValues::U32((5, 5, false)))], b"\x05\0\0\0").is_empty());
        let unequal = CmpValues::U32((0x1a2b_3c4d, 0x1a2b_3c4e, false));
        assert!(passed_gates(&[(1, unequal)], &stream()).is_empty());
        assert!(passed_gates(&[(1, equal)], b"not in here").is_empty());
    }

    fn gate_of(input: &[u8], value: u32) -> Gate {
        passed_gates(&[(9, CmpValues::U32((value, value, false)))], input).remove(0)
    }

    #[test]
    fn a_mutant_gets_the_value_the_program_computed_where_its_field_moved_to() {
        let gate = gate_of(&stream(), 0x1a2b_3c4d);
        // Two bytes inserted before the field, and the content changed.
        let mut mutant = b"\x78\x01XXplain bytes!".to_vec();
        mutant.truncate(15);
        mutant.extend_from_slice(&0x1a2b_3c4d_u32.to_be_bytes());
        // The run compared the stored value with the new checksum, either way round.
        for sides in [(0x1a2b_3c4d, 0x0102_0304), (0x0102_0304, 0x1a2b_3c4d)] {
            assert_eq!(gate.failed_field(&mutant, sides), Some((15, 0x0102_0304)));
        }
        assert!(gate.write(&mut mutant, 15, 0x0102_0304));
        assert_eq!(&mutant[15..], &[1, 2, 3, 4]);
        // Passed, or another comparison at the site: nothing to write.
        assert_eq!(gate.failed_field(&mutant, (7, 7)), None);
        assert_eq!(gate.failed_field(&mutant, (5, 6)), None);
        // A later candidate holds the repaired value: found by what its run compared.
        let mut shorter = mutant[..4].to_vec();
        shorter.extend_from_slice(&mutant[15..]);
        assert_eq!(
            gate.failed_field(&shorter, (0x0102_0304, 0x0a0b_0c0d)),
            Some((4, 0x0a0b_0c0d))
        );
    }

    #[test]
    fn a_little_endian_field_is_written_back_little_endian() {
        let mut input = b"head".to_vec();
        input.extend_from_slice(&0x00aa_bbcc_u32.to_le_bytes());
        let gate = gate_of(&input, 0x00aa_bbcc);
        assert!(!gate.big_endian);
        let mut mutant = input.clone();
        mutant[0] = b'H';
        let (offset, computed) = gate
            .failed_field(&mutant, (0x0011_2233, 0x00aa_bbcc))
            .unwrap();
        assert!(gate.write(&mut mutant, offset, computed));
        assert_eq!(&mutant[4..], &0x0011_2233_u32.to_le_bytes());
        mutant[4..].copy_from_slice(b"gone");
        assert_eq!(
            gate.failed_field(&mutant, (0x0011_2233, 0x00aa_bbcc)),
            None,
            "overwritten: nothing to repair"
        );
        assert!(
            !gate.write(&mut mutant, 4, 1 << 40),
            "too wide for the field"
        );
    }
}
