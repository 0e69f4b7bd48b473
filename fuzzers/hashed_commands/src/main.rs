//! The fuzz target of the hashed-command interpreter (its library holds the commands).

#![no_main]

labelfuzz::fuzz_target!(|data: &[u8]| {
    hashed_commands::run(data);
});
