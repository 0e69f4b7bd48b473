//! Tokens learned from the target's comparisons: the operands a traced run compared the input
//! against that look like keywords, magic numbers or strings, kept as a dictionary the run
//! writes to `learned.dict` (libFuzzer prints a "recommended dictionary", AFL++ keeps its auto
//! extras), for `--dict` in later runs.
//!
//! The run itself does not mutate with them: measured on zlib, libpng and lcms (600 s, one
//! seed, the benchmark's coverage yardstick), havoc's token mutations and an appended random
//! token with these tokens ended 1 to 3 % behind the same engine without them.

use libafl::observers::CmpValues;
use libafl_bolts::ToSlice;

/// The most tokens a fuzzing process learns. A large target compares against thousands of
/// distinct values; the first ones found are those of the shallow parsing stages.
pub const MAX_LEARNED_TOKENS: usize = 1024;

/// The longest learned token (the widest operand a byte-string comparison logs).
pub const MAX_TOKEN_LEN: usize = 32;

/// The tokens a fuzzing process has learned, in the order found (kept in the state, so a
/// restarted process goes on from them).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LearnedTokens {
    tokens: Vec<Vec<u8>>,
}

libafl_bolts::impl_serdeany!(LearnedTokens);

impl LearnedTokens {
    /// The tokens, in the order they were learned.
    #[must_use]
    pub fn tokens(&self) -> &[Vec<u8>] {
        &self.tokens
    }

    /// Whether there is room for more.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.tokens.len() >= MAX_LEARNED_TOKENS
    }

    /// Adds the new ones among `candidates` while there is room; how many were added.
    pub fn learn(&mut self, candidates: Vec<Vec<u8>>) -> usize {
        // At most 1024 short tokens, searched once per traced corpus entry: a scan is cheap.
        let mut added = 0;
        for token in candidates {
            if self.is_full() {
                break;
            }
            if !self.tokens.contains(&token) {
                self.tokens.push(token);
                added += 1;
            }
        }
        added
    }
}

/// The token candidates among the operands of one traced run of `input`: both sides of
/// byte-string comparisons (up to a NUL, as `strcmp` reads them), and integer operands of two or
/// more bytes that are not in the input already, in both byte orders. Values that are mostly
/// padding (two 0x00 or 0xff bytes in a row), one byte repeated, or a single byte are left out:
/// they are small numbers and masks, which expansions and havoc reach anyway.
#[must_use]
pub fn candidates(operands: &[CmpValues], input: &[u8]) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    for operand in operands {
        match operand {
            CmpValues::U8(_) => {}
            CmpValues::U16((a, b, a_is_const)) => {
                for v in sides(u64::from(*a), u64::from(*b), *a_is_const) {
                    offer_integer(&mut found, input, v, 2);
                }
            }
            CmpValues::U32((a, b, a_is_const)) => {
                for v in sides(u64::from(*a), u64::from(*b), *a_is_const) {
                    offer_integer(&mut found, input, v, 4);
                }
            }
            CmpValues::U64((a, b, a_is_const)) => {
                for v in sides(*a, *b, *a_is_const) {
                    offer_integer(&mut found, input, v, 8);
                }
            }
            CmpValues::Bytes((a, b)) => {
                for side in [a.to_slice(), b.to_slice()] {
                    let end = side.iter().position(|&c| c == 0).unwrap_or(side.len());
                    offer(&mut found, input, &side[..end]);
                }
            }
        }
    }
    found
}

/// Adds `bytes` to `found` if it is token-like, new, and not in the input already.
fn offer(found: &mut Vec<Vec<u8>>, input: &[u8], bytes: &[u8]) {
    if is_token_like(bytes) && !contains(input, bytes) && !found.iter().any(|t| t == bytes) {
        found.push(bytes.to_vec());
    }
}

/// Offers `value`'s `width` bytes in little- and big-endian order, unless the input holds
/// either: then the comparison has its operand there already.
fn offer_integer(found: &mut Vec<Vec<u8>>, input: &[u8], value: u64, width: usize) {
    let little = &value.to_le_bytes()[..width];
    let big: Vec<u8> = little.iter().rev().copied().collect();
    if !contains(input, little) && !contains(input, &big) {
        offer(found, input, little);
        offer(found, input, &big);
    }
}

/// The operands worth learning: the constant alone when the comparison has one (the other side
/// is what the input computed), else both.
fn sides(a: u64, b: u64, a_is_const: bool) -> impl Iterator<Item = u64> {
    std::iter::once(a).chain((!a_is_const).then_some(b))
}

/// At least two bytes, not one byte repeated, no padding run (two 0x00 or two 0xff in a row).
fn is_token_like(bytes: &[u8]) -> bool {
    bytes.len() >= 2
        && bytes.len() <= MAX_TOKEN_LEN
        && bytes.iter().any(|&b| b != bytes[0])
        && !bytes
            .windows(2)
            .any(|w| (w[0] == 0 && w[1] == 0) || (w[0] == 0xff && w[1] == 0xff))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.len() <= haystack.len() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// A byte-string operand as CmpLog logs it, for tests.
#[cfg(test)]
pub(crate) fn logged_bytes(text: &[u8]) -> libafl::observers::CmplogBytes {
    let mut buf = [0; 32];
    buf[..text.len()].copy_from_slice(text);
    libafl::observers::CmplogBytes::from_buf_and_len(buf, u8::try_from(text.len()).unwrap())
}

#[cfg(test)]
mod tests {
    use super::{logged_bytes as bytes, *};

    #[test]
    fn keywords_magic_numbers_and_strings_are_learned_in_both_byte_orders() {
        let operands = [
            // `if (read_u32(p) == 0x474e5089)`, constant first: the PNG signature's start.
            CmpValues::U32((0x474e_5089, 0x4141_4141, true)),
            CmpValues::Bytes((bytes(b"AAAAA"), bytes(b"BEGIN\0garbage"))),
        ];
        let learned = candidates(&operands, b"AAAAA");
        assert_eq!(
            learned,
            vec![b"\x89PNG".to_vec(), b"GNP\x89".to_vec(), b"BEGIN".to_vec(),],
            "the constant in both orders; the input's own side is not news; a string ends at NUL"
        );
    }

    #[test]
    fn small_numbers_masks_repeats_and_what_the_input_holds_are_not_tokens() {
        let operands = [
            CmpValues::U8((b'a', b'b', false)),
            CmpValues::U32((3, 7, false)),
            CmpValues::U64((u64::MAX, 0xffff_0000, false)),
            CmpValues::U16((0x4141, 0x4242, false)),
            CmpValues::U32((u32::from_le_bytes(*b"GET "), 0x0102, true)),
        ];
        assert!(candidates(&operands, b"xxGET yy").is_empty());
    }

    #[test]
    fn learning_stops_at_the_cap_and_counts_only_new_tokens() {
        let mut learned = LearnedTokens::default();
        assert_eq!(learned.learn(vec![b"GET".to_vec(), b"GET".to_vec()]), 1);
        // A restored state goes on from the tokens it had: no token comes twice.
        let mut restored: LearnedTokens =
            postcard::from_bytes(&postcard::to_allocvec(&learned).unwrap()).unwrap();
        assert_eq!(restored.learn(vec![b"GET".to_vec(), b"PUT".to_vec()]), 1);
        let many = (0..2 * MAX_LEARNED_TOKENS)
            .map(|i| format!("t{i}").into_bytes())
            .collect();
        restored.learn(many);
        assert!(restored.is_full());
        assert_eq!(restored.tokens().len(), MAX_LEARNED_TOKENS);
        assert_eq!(&restored.tokens()[..2], &[b"GET".to_vec(), b"PUT".to_vec()]);
    }
}
