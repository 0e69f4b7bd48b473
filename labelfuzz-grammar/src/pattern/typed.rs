//! Typed patterns: a byte pattern restated on the `Debug` form an `Arbitrary` target sees.
//!
//! A typed target decodes its bytes into a value (`Vec<Op>`), so `\x01 ? ? ? \x00 ? \x01 …` says
//! little; `[Push(_), Push(_), Add]` says which fields and elements may take any value. No new
//! executions are spent: the byte generalization's variants (each differing from the reproducer
//! in one byte, or in the length of a run) are decoded and printed with `{:?}`, and each is
//! compared with the reproducer's form. The smallest value of that form containing every
//! difference is the part the variant regenerated; a part whose regenerations (nearly) all still
//! showed the crash label may take any value (`_`), one whose regenerations lost it must stay as
//! it is, and a list to whose end elements could be added or removed ends in `..`. Parts no
//! variant changed stay as they are.
//!
//! The `Debug` form is read as what derived and standard `Debug` impls print: words (names,
//! numbers), string and character literals, `(…)`, `[…]`, `{…}` with comma-separated items and
//! `name: value` fields. A form that does not read so gets no typed pattern.

use serde::{Deserialize, Serialize};

use super::Settings;

/// How a typed target prints an input: its decoded value's `Debug` form, `None` when the input
/// does not decode.
pub type DebugForm = fn(&[u8]) -> Option<String>;

/// A failure pattern stated on the `Debug` form of a typed reproducer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypedPattern {
    /// The pattern: the reproducer's `Debug` form with `_` for parts that may take any value and
    /// `..` where a list may grow.
    pub text: String,
    /// The reproducer's `Debug` form.
    pub reproducer: String,
    /// Variants whose `Debug` form differed from the reproducer's (the evidence).
    pub variants: usize,
}

impl std::fmt::Display for TypedPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A token of a `Debug` form.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// A name, number or other run of characters that are not punctuation.
    Word(String),
    /// A string or character literal, quotes and escapes included.
    Literal(String),
    /// One of `( ) [ ] { } , :`.
    Punct(char),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Word(w) | Token::Literal(w) => w.clone(),
            Token::Punct(c) => c.to_string(),
        }
    }
}

/// Splits a `Debug` form into tokens (`None` for an unterminated literal).
fn tokenize(text: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut rest = text.trim_start();
    while let Some(c) = rest.chars().next() {
        let length = if c == '"' || c == '\'' {
            literal_length(rest, c)?
        } else if is_punct(rest) {
            1
        } else {
            word_length(rest)
        };
        let (token, tail) = rest.split_at(length);
        tokens.push(if c == '"' || c == '\'' {
            Token::Literal(token.to_string())
        } else if is_punct(token) {
            Token::Punct(c)
        } else {
            Token::Word(token.to_string())
        });
        rest = tail.trim_start();
    }
    Some(tokens)
}

/// Whether `text` starts with punctuation: a bracket, a comma, or a colon that is not half of
/// a path's `::`.
fn is_punct(text: &str) -> bool {
    text.starts_with(['(', ')', '[', ']', '{', '}', ','])
        || (text.starts_with(':') && !text.starts_with("::"))
}

/// The length of the literal opening `text` with `quote`, escapes and quotes included.
fn literal_length(text: &str, quote: char) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            _ if c == quote => return Some(at + c.len_utf8()),
            _ => {}
        }
    }
    None
}

/// The length of the word opening `text`: up to whitespace, a quote or punctuation (a path's
/// `::` belongs to the word).
fn word_length(text: &str) -> usize {
    let mut at = 0;
    while let Some(c) = text[at..].chars().next() {
        let path = text[at..].starts_with("::");
        if !path && (c.is_whitespace() || c == '"' || c == '\'' || is_punct(&text[at..])) {
            break;
        }
        at += if path { 2 } else { c.len_utf8() };
    }
    at
}

/// A part of the reproducer's form that a variant can regenerate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// A value: tokens `start..end`.
    Value { start: usize, end: usize },
    /// The end of the list (or tuple, or map) whose opening bracket is at `open` and closing one
    /// at `close`: elements added there.
    Tail { open: usize, close: usize },
}

/// The reproducer's form, read: its tokens and the parts they make up.
#[derive(Debug)]
struct Form {
    tokens: Vec<Token>,
    parts: Vec<Part>,
}

impl Form {
    /// Reads `text` (`None` if it is not shaped like a `Debug` form).
    fn read(text: &str) -> Option<Form> {
        let tokens = tokenize(text)?;
        let mut parts = Vec::new();
        let end = read_item(&tokens, 0, &mut parts)?;
        if end != tokens.len() || tokens.is_empty() {
            return None;
        }
        parts.push(Part::Value { start: 0, end });
        Some(Form { tokens, parts })
    }

    /// The part a variant with tokens `other` regenerated: the smallest one containing every
    /// token where the two differ (`None` when they do not differ).
    fn changed_part(&self, other: &[Token]) -> Option<usize> {
        let mine = &self.tokens;
        let prefix = mine.iter().zip(other).take_while(|(a, b)| a == b).count();
        if prefix == mine.len() && prefix == other.len() {
            return None;
        }
        let most = mine.len().min(other.len()) - prefix;
        let suffix = mine
            .iter()
            .rev()
            .zip(other.iter().rev())
            .take(most)
            .take_while(|(a, b)| a == b)
            .count();
        let (from, to) = (prefix, mine.len() - suffix);
        // Elements added at the end of a list, before its closing bracket. (Elements removed
        // change the list: that is the value around them.)
        let tail = self.parts.iter().position(|part| match *part {
            Part::Tail { open, close } => from == to && to == close && from > open,
            Part::Value { .. } => false,
        });
        if tail.is_some() {
            return tail;
        }
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(i, part)| match *part {
                Part::Value { start, end }
                    if start <= from
                        && to <= end
                        && (from < to || (start < from && from < end)) =>
                {
                    Some((end - start, i))
                }
                _ => None,
            })
            .min()
            .map(|(_, i)| i)
    }

    /// The form with free values as `_` and free list ends as `..`.
    fn render(&self, free: &[bool]) -> String {
        let mut out: Vec<Token> = Vec::new();
        let mut i = 0;
        while i < self.tokens.len() {
            // The outermost free value starting here.
            let value_end = self
                .parts
                .iter()
                .zip(free)
                .filter_map(|(part, &is_free)| match *part {
                    Part::Value { start, end } if is_free && start == i => Some(end),
                    _ => None,
                })
                .max();
            if let Some(end) = value_end {
                out.push(Token::Word("_".into()));
                i = end;
                continue;
            }
            let open_tail = self.parts.iter().zip(free).any(|(part, &is_free)| {
                matches!(*part, Part::Tail { close, .. } if is_free && close == i)
            });
            if open_tail {
                if !matches!(out.last(), Some(Token::Punct('(' | '[' | '{'))) {
                    out.push(Token::Punct(','));
                }
                out.push(Token::Word("..".into()));
            }
            out.push(self.tokens[i].clone());
            i += 1;
        }
        spaced(&out)
    }
}

/// Reads one item (tokens up to a `,` or a closing bracket at this depth) from `at`, noting its
/// parts; returns where it ends.
fn read_item(tokens: &[Token], mut at: usize, parts: &mut Vec<Part>) -> Option<usize> {
    while let Some(token) = tokens.get(at) {
        match token {
            Token::Punct(',' | ')' | ']' | '}') => break,
            Token::Punct(open @ ('(' | '[' | '{')) => {
                let close = match open {
                    '(' => ')',
                    '[' => ']',
                    _ => '}',
                };
                at = read_group(tokens, at, close, parts)?;
            }
            _ => at += 1,
        }
    }
    Some(at)
}

/// Reads a bracketed group opening at `open`, noting each item's value and the group's tail;
/// returns the index after its closing bracket.
fn read_group(tokens: &[Token], open: usize, close: char, parts: &mut Vec<Part>) -> Option<usize> {
    let mut at = open + 1;
    loop {
        if tokens.get(at) == Some(&Token::Punct(close)) {
            parts.push(Part::Tail { open, close: at });
            return Some(at + 1);
        }
        let start = at;
        let end = read_item(tokens, at, parts)?;
        if end == start {
            return None;
        }
        // `name: value` (a field, or a map's entry): the value is what may vary; a map's key
        // (a literal or number) may too.
        let value_start = match (&tokens[start], tokens.get(start + 1)) {
            (key, Some(Token::Punct(':'))) if start + 2 < end => {
                if !is_field_name(key) {
                    parts.push(Part::Value {
                        start,
                        end: start + 1,
                    });
                }
                start + 2
            }
            _ => start,
        };
        parts.push(Part::Value {
            start: value_start,
            end,
        });
        at = end;
        match tokens.get(at)? {
            Token::Punct(',') => at += 1,
            Token::Punct(c) if *c == close => {}
            _ => return None,
        }
    }
}

fn is_field_name(token: &Token) -> bool {
    matches!(token, Token::Word(w) if w.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

/// Tokens joined as `{:?}` spaces them: `a, b`, `name: value`, `Name { field: v }` (a struct's
/// braces are spaced, a map's `{k: v}` are not).
fn spaced(tokens: &[Token]) -> String {
    let mut text = String::new();
    // Whether each open brace is a struct's.
    let mut braces: Vec<bool> = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &tokens[p]);
        let in_struct = braces.last().copied().unwrap_or(false);
        let space = match (previous, token) {
            (None, _) => false,
            (Some(Token::Punct(',' | ':')), _) => true,
            (Some(Token::Punct('{')), Token::Punct('}')) => false,
            (Some(Token::Word(_)), Token::Punct('{')) => true,
            (Some(Token::Punct('{')), _) | (Some(_), Token::Punct('}')) => in_struct,
            _ => false,
        };
        if space {
            text.push(' ');
        }
        match token {
            Token::Punct('{') => braces.push(matches!(previous, Some(Token::Word(_)))),
            Token::Punct('}') => {
                braces.pop();
            }
            _ => {}
        }
        text.push_str(&token.text());
    }
    text
}

/// States a reproducer's pattern on its `Debug` form (`reproducer`), from the byte
/// generalization's variants as `(their Debug form, whether they still showed the crash
/// label)`. `None` when the form does not read as a `Debug` form.
#[must_use]
pub fn generalize_typed<'v>(
    reproducer: &str,
    variants: impl IntoIterator<Item = (&'v str, bool)>,
    settings: &Settings,
) -> Option<TypedPattern> {
    let form = Form::read(reproducer)?;
    let mut shown = vec![0u32; form.parts.len()];
    let mut lost = vec![0u32; form.parts.len()];
    let mut differing = 0;
    for (text, still_fails) in variants {
        let Some(tokens) = tokenize(text) else {
            continue;
        };
        let Some(part) = form.changed_part(&tokens) else {
            continue;
        };
        differing += 1;
        if still_fails {
            shown[part] += 1;
        } else {
            lost[part] += 1;
        }
    }
    // As for bytes: enough regenerations, and few enough of them losing the label.
    let support = (settings.trials / 4).max(2);
    let free: Vec<bool> = shown
        .iter()
        .zip(&lost)
        .map(|(&s, &l)| {
            s >= support && f64::from(l) <= f64::from(s + l) * (1.0 - settings.min_share)
        })
        .collect();
    Some(TypedPattern {
        text: form.render(&free),
        reproducer: spaced(&form.tokens),
        variants: differing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(reproducer: &str, variants: &[(&str, bool)]) -> String {
        generalize_typed(reproducer, variants.iter().copied(), &Settings::DEFAULT)
            .expect("a Debug form")
            .text
    }

    fn times(variant: &'static str, shown: bool, n: usize) -> Vec<(&'static str, bool)> {
        vec![(variant, shown); n]
    }

    #[test]
    fn forms_read_and_print_as_debug_prints_them() {
        for text in [
            "[Push(3), Push(200), Add]",
            "Config { name: \"a, b\", level: Some(-1.5e3), tags: {\"x\": 'y'} }",
            "(1, [], Unit, std::num::Wrapping(2))",
            "Empty {}",
        ] {
            let form = Form::read(text).unwrap();
            assert_eq!(spaced(&form.tokens), text);
            assert_eq!(form.render(&vec![false; form.parts.len()]), text);
        }
        assert!(Form::read("[1, 2").is_none());
        assert!(Form::read("\"open").is_none());
    }

    #[test]
    fn values_whose_regenerations_fail_alike_become_holes() {
        let mut variants = Vec::new();
        for v in ["Push(7)", "Push(9)", "Push(12)"] {
            let text: &'static str = Box::leak(format!("[{v}, Push(200), Add]").into_boxed_str());
            variants.extend(times(text, true, 3));
        }
        // The second value must stay large.
        variants.extend(times("[Push(3), Push(4), Add]", false, 5));
        // Another operation in the last place loses the crash.
        variants.extend(times("[Push(3), Push(200), Pop]", false, 5));
        assert_eq!(
            pattern("[Push(3), Push(200), Add]", &variants),
            "[Push(_), Push(200), Add]"
        );
    }

    #[test]
    fn whole_elements_fields_and_list_ends_generalize() {
        let mut variants = Vec::new();
        // The first element may be any operation.
        variants.extend(times("[Pop, Add]", true, 6));
        // Elements may follow.
        variants.extend(times("[Push(9), Add, Pop]", true, 6));
        assert_eq!(pattern("[Push(9), Add]", &variants), "[_, Add, ..]");
        // Removing the last element is a change of the list, not of its end.
        variants.extend(times("[Push(9)]", false, 6));
        assert_eq!(pattern("[Push(9), Add]", &variants), "[_, Add, ..]");

        let fields = times("Op { code: 4, len: 9 }", true, 6);
        assert_eq!(
            pattern("Op { code: 4, len: 0 }", &fields),
            "Op { code: 4, len: _ }"
        );
    }

    #[test]
    fn a_few_lucky_variants_or_unchanged_forms_prove_nothing() {
        let variants = [
            ("[Push(7), Add]", true),
            ("[Push(3), Add]", true),
            ("[Push(3), Add]", false),
        ];
        assert_eq!(pattern("[Push(3), Add]", &variants), "[Push(3), Add]");
        assert!(generalize_typed("not (closed", [], &Settings::DEFAULT).is_none());
    }
}
