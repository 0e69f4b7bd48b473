//! A command interpreter that looks its commands up by hash, as SQLite looks up its keywords
//! (the Rust twin of `fuzzers/c_planted/hashed_commands.c`): no branch and no comparison shows a
//! fuzzer that an input is getting closer to a command's name, since the hash is compared
//! whole and its operands are not the input's bytes. The names are string literals of this
//! library, so the automatic dictionary has them.
//!   `drop-everything` → panics in `execute`

use std::hint::black_box;

/// The commands; the last one is the planted bug.
const COMMANDS: [&str; 3] = ["status", "rebuild-index", "drop-everything"];

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261_u32, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(16_777_619)
    })
}

#[inline(never)]
fn execute(command: usize) {
    if command == COMMANDS.len() - 1 {
        panic!("planted: drop-everything");
    }
}

/// Runs the command `input` names, if it names one.
pub fn run(input: &[u8]) {
    let hash = fnv1a(input);
    // black_box: the names' hashes are computed at run time from the literals, as a table
    // built at start-up would be, not folded into constants that leave no literal behind.
    for (index, name) in black_box(&COMMANDS).iter().enumerate() {
        if hash == fnv1a(name.as_bytes()) {
            execute(index);
        }
    }
}
