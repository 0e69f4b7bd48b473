//! A tiny stack machine with planted bugs, fuzzed by the cargo-fuzz targets in `fuzz/`.

use std::sync::atomic::{AtomicBool, Ordering};

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Pushes a value.
    Push(u8),
    /// Adds the two top values.
    Add,
    /// Drops the top value.
    Pop,
}

/// Runs `ops`; returns the top of the stack.
///
/// Planted bug: `Add` sums in `u8`, so two large values overflow (a panic under
/// overflow checks, which fuzz builds have).
pub fn execute(ops: &[Op]) -> Option<u8> {
    let mut stack = Vec::new();
    for op in ops {
        match *op {
            Op::Push(v) => stack.push(v),
            Op::Add => {
                let (a, b) = (stack.pop()?, stack.pop()?);
                stack.push(a + b);
            }
            Op::Pop => {
                stack.pop()?;
            }
        }
    }
    stack.last().copied()
}

/// Parses a text program: `p<digit>` pushes, `+` adds, `.` pops.
///
/// Planted bug: a program that starts with `p9+` indexes past the end of its lookahead.
pub fn parse(text: &[u8]) -> Vec<Op> {
    if let [b'p', b'9', b'+', rest @ ..] = text {
        let lookahead = [Op::Push(9), Op::Add];
        return vec![lookahead[rest.len() + 2]];
    }
    let mut ops = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'p' if i + 1 < text.len() && text[i + 1].is_ascii_digit() => {
                ops.push(Op::Push(text[i + 1] - b'0'));
                i += 1;
            }
            b'+' => ops.push(Op::Add),
            b'.' => ops.push(Op::Pop),
            _ => {}
        }
        i += 1;
    }
    ops
}

static STRICT: AtomicBool = AtomicBool::new(false);

/// Turns on strict mode (a fuzz target's `init:` does).
pub fn set_strict() {
    STRICT.store(true, Ordering::Relaxed);
}

/// Checks a header line. Planted bug: in strict mode, `!!` aborts the check with a panic.
pub fn check_header(line: &[u8]) -> bool {
    if STRICT.load(Ordering::Relaxed) && line.starts_with(b"!!") {
        panic!("strict mode rejects '!!'");
    }
    line.first() == Some(&b'#')
}
