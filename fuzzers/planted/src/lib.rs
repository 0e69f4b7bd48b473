//! The bundled default target: a tiny "parser" with three planted bugs at three sites.
//!
//! Each bug is reached one comparison at a time, which is how coverage guides a fuzzer, and each
//! has one shortlex-minimal reproducer (the tests assert labelfuzz finds exactly these):
//! - `FUZZ`: a magic word, checked byte by byte → panics in `magic`;
//! - `B\x00\xff`: a tag `B`, any byte, then `0xff` → index out of bounds in `tagged`;
//! - `+\x01\xff`: a `+` record whose two bytes overflow a `u8` sum → overflow in `sum`.
//!
//!
//! One more branch is a label no fuzzer finds by itself: `sesame!!` opens it, because its hash
//! (not its bytes) is compared. Tests give it as a seed and watch it travel to other runs.
//!
//! The code lives in a library so that the benchmark can run the very same code under libFuzzer.

/// Runs all three checks on `data`.
pub fn run(data: &[u8]) {
    magic(data);
    tagged(data);
    std::hint::black_box(sum(data));
    sealed(data);
}

/// FNV-1a, 64 bits.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut i = 0;
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u64).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// Covers one more edge when the first eight bytes hash like `sesame!!`. Comparing hashes hides
/// the bytes from input-to-state mutations, so only an input that already has them gets in.
fn sealed(data: &[u8]) {
    const SESAME: u64 = fnv1a(b"sesame!!");
    if data.len() >= 8 && fnv1a(&data[..8]) == std::hint::black_box(SESAME) {
        opened();
    }
}

#[inline(never)]
fn opened() {
    std::hint::black_box(());
}

/// Panics on the word `FUZZ`, read one byte at a time as a parser would.
fn magic(data: &[u8]) {
    for (i, &expected) in b"FUZZ".iter().enumerate() {
        // Without black_box LLVM merges the adjacent byte compares into one wide compare
        // (MergeICmps), and coverage would no longer see the word being matched byte by byte.
        if std::hint::black_box(data.get(i)) != Some(&expected) {
            return;
        }
    }
    panic!("planted: magic word");
}

/// Indexes a table by the third byte after a `B` tag: `0xff` is past its end.
fn tagged(data: &[u8]) {
    const TABLE: [u8; 255] = [7; 255];
    if data.len() >= 3 && data[0] == b'B' {
        let index = usize::from(data[2]);
        if index > 127 {
            let _ = std::hint::black_box(TABLE[index]);
        }
    }
}

/// Adds the two bytes after a `+`: overflow checks are on in fuzz builds.
fn sum(data: &[u8]) -> u8 {
    if data.len() >= 3 && data[0] == b'+' {
        let (a, b) = (std::hint::black_box(data[1]), std::hint::black_box(data[2]));
        return a + b;
    }
    0
}
