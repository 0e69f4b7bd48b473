//! The one order that defines "better": shortlex.
//!
//! An input is simpler than another when it is shorter, or equally long and lexicographically
//! smaller. Every input type reduces itself to a *simplicity key* (a byte string) whose shortlex
//! order is the input's order, so the label table, the shrinker and the crash table work on any
//! input type without knowing it.

use std::borrow::Cow;
use std::cmp::Ordering;

/// Compares two sequences (simplicity keys, or grammar choice sequences) in shortlex order
/// (`Less` means `a` is simpler).
#[must_use]
pub fn shortlex<T: Ord>(a: &[T], b: &[T]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// True when `a` is strictly simpler than `b`.
#[must_use]
pub fn is_simpler<T: Ord>(a: &[T], b: &[T]) -> bool {
    shortlex(a, b) == Ordering::Less
}

/// An input type that can say how simple it is.
///
/// The key must be such that shortlex on keys is the intended order on inputs. For byte inputs the
/// key is the bytes themselves; for a sequence of fixed-width integers it is their big-endian
/// encoding, which preserves both the length order and the lexicographic order.
pub trait Simplicity {
    /// The byte string whose shortlex order is this input's order.
    fn simplicity_key(&self) -> Cow<'_, [u8]>;

    /// True when `self` is strictly simpler than `other`.
    fn is_simpler_than(&self, other: &Self) -> bool {
        is_simpler(&self.simplicity_key(), &other.simplicity_key())
    }
}

/// Byte inputs (`Vec<u8>`, and LibAFL's `BytesInput`, which is a `ValueInput<Vec<u8>>`): the key
/// is the bytes.
impl<T: AsRef<Vec<u8>>> Simplicity for T {
    fn simplicity_key(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorter_is_simpler_whatever_the_bytes() {
        assert!(is_simpler(b"\xff", b"\x00\x00"));
        assert!(is_simpler(b"", b"\x00"));
        assert!(!is_simpler(b"ab", b"a"));
    }

    #[test]
    fn equal_length_falls_back_to_lexicographic() {
        assert!(is_simpler(b"ab", b"ac"));
        assert!(is_simpler(b"\x00\xff", b"\x01\x00"));
        assert!(!is_simpler(b"b", b"a"));
    }

    #[test]
    fn nothing_is_simpler_than_itself() {
        assert!(!is_simpler(b"abc", b"abc"));
        assert_eq!(shortlex(b"abc", b"abc"), Ordering::Equal);
    }

    #[test]
    fn order_is_total_and_antisymmetric() {
        let inputs: [&[u8]; 6] = [b"", b"\x00", b"\xff", b"\x00\x00", b"a\x00", b"\x00a"];
        for a in inputs {
            for b in inputs {
                let ab = shortlex(a, b);
                assert_eq!(ab, shortlex(b, a).reverse());
                assert_eq!(ab == Ordering::Equal, a == b);
            }
        }
    }

    #[test]
    fn a_byte_input_key_is_its_bytes() {
        let a = b"ab".to_vec();
        let b = b"b".to_vec();
        assert!(b.is_simpler_than(&a));
        assert_eq!(&*a.simplicity_key(), b"ab");
    }
}
