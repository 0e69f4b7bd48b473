//! The seed's arithmetic expressions, parsed by recursive descent: the Rust twin of
//! `fuzzers/mine/expr.c`, a subject for grammar mining (`cargo labelfuzz mine`). Invalid input
//! is rejected (`Corpus::Reject`), which is what mining counts as not accepted.
//!
//! ```text
//! expr    = term {("+" | "-") term}
//! term    = factor {("*" | "/") factor}
//! factor  = ("+" | "-") factor | "(" expr ")" | integer ["." integer]
//! integer = digit {digit}
//! ```

#![no_main]

use labelfuzz::Corpus;

/// Nesting deeper than this is rejected (a stack overflow is not what is mined).
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    input: &'a [u8],
    at: usize,
    depth: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.at).copied()
    }

    fn integer(&mut self) -> bool {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at > start
    }

    fn factor(&mut self) -> bool {
        match self.peek() {
            Some(b'+' | b'-') => {
                self.at += 1;
                self.factor()
            }
            Some(b'(') => {
                self.at += 1;
                if !self.expr() || self.peek() != Some(b')') {
                    return false;
                }
                self.at += 1;
                true
            }
            _ => {
                if !self.integer() {
                    return false;
                }
                if self.peek() == Some(b'.') {
                    self.at += 1;
                    return self.integer();
                }
                true
            }
        }
    }

    fn term(&mut self) -> bool {
        if !self.factor() {
            return false;
        }
        while matches!(self.peek(), Some(b'*' | b'/')) {
            self.at += 1;
            if !self.factor() {
                return false;
            }
        }
        true
    }

    fn expr(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return false;
        }
        let mut ok = self.term();
        while ok && matches!(self.peek(), Some(b'+' | b'-')) {
            self.at += 1;
            ok = self.term();
        }
        self.depth -= 1;
        ok
    }
}

labelfuzz::fuzz_target!(|data: &[u8]| -> Corpus {
    let mut cursor = Cursor {
        input: data,
        at: 0,
        depth: 0,
    };
    if cursor.expr() && cursor.at == data.len() {
        Corpus::Keep
    } else {
        Corpus::Reject
    }
});
