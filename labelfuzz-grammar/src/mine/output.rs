//! Mined rules written as a grammar in labelfuzz's JSON format, with names from the functions.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::induce::{Item, Rules};

/// One rule of the written grammar and what supports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleSupport {
    /// Its nonterminal, as written (`<parse_object>`).
    pub nonterminal: String,
    /// The alternative, as written in the JSON.
    pub alternative: String,
    /// How many parse-tree nodes it matched.
    pub nodes: usize,
    /// How many target runs checked its generalisations.
    pub checks: usize,
}

/// Nonterminal names for the rules' functions, classes and repetitions.
struct Names {
    functions: Vec<(String, String)>,
    classes: Vec<String>,
    repeats: Vec<String>,
}

/// A function's name as it goes inside a nonterminal's brackets: characters other than
/// letters, digits, `_` and `:` become `_` (Rust paths keep their `::`).
fn bare_name(function: &str) -> String {
    function
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `<name>` with `suffix` before the `>`: `<digits+>`, `<whitespace?>`.
fn suffixed(name: &str, suffix: char) -> String {
    format!("{}{suffix}>", &name[..name.len() - 1])
}

impl Names {
    fn new(rules: &Rules) -> Names {
        let mut taken: HashSet<String> = HashSet::new();
        let mut unique = |base: String| {
            let mut name = format!("<{base}>");
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = format!("<{base}{n}>");
                n += 1;
            }
            name
        };
        let functions = rules
            .nonterminals
            .iter()
            .map(|(function, _)| (function.clone(), unique(bare_name(function))))
            .collect();
        let classes = rules
            .classes
            .iter()
            .map(|(owner, _)| unique(format!("{}-chars", bare_name(owner))))
            .collect();
        let repeats = rules
            .repeats
            .iter()
            .map(|(owner, _)| unique(format!("{}-more", bare_name(owner))))
            .collect();
        Names {
            functions,
            classes,
            repeats,
        }
    }

    fn function(&self, name: &str) -> &str {
        self.functions
            .iter()
            .find(|(function, _)| function == name)
            .map_or("<start>", |(_, symbol)| symbol.as_str())
    }

    /// The nonterminal of a non-byte item.
    fn of(&self, item: &Item) -> String {
        match item {
            Item::Class { class, many: false } => self.classes[*class].clone(),
            Item::Class { class, many: true } => suffixed(&self.classes[*class], '+'),
            Item::Call(function) => self.function(function).to_owned(),
            Item::Repeat(index) => self.repeats[*index].clone(),
            Item::Optional(inner) => suffixed(&self.of(inner), '?'),
            // An optional byte: named by its code, which any byte has.
            Item::Byte(b) => format!("<byte-{b:02x}>"),
        }
    }
}

/// A JSON string token for text (as `{"text": …}` when it looks like a nonterminal). Bytes
/// above 127 become the characters U+0080–U+00FF: the format's text is Unicode.
fn text_token(bytes: &[u8]) -> String {
    let text: String = bytes.iter().map(|&b| char::from(b)).collect();
    let quoted = serde_json::Value::String(text.clone()).to_string();
    if text.starts_with('<') && text.ends_with('>') {
        format!("{{\"text\": {quoted}}}")
    } else {
        quoted
    }
}

fn symbol_token(name: &str) -> String {
    serde_json::Value::String(name.to_owned()).to_string()
}

/// A class as the format's `chars`: ranges of three or more, a literal `-` last.
fn class_text(members: &[u8]) -> String {
    let mut out = String::new();
    let plain: Vec<u8> = members.iter().copied().filter(|&b| b != b'-').collect();
    let mut i = 0;
    while i < plain.len() {
        let mut j = i;
        while j + 1 < plain.len() && plain[j + 1] == plain[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            let _ = write!(out, "{}-{}", char::from(plain[i]), char::from(plain[j]));
            i = j + 1;
        } else {
            out.push(char::from(plain[i]));
            i += 1;
        }
    }
    if members.contains(&b'-') {
        out.push('-');
    }
    out
}

/// The token of an item.
fn item_token(names: &Names, item: &Item) -> String {
    match item {
        Item::Byte(b) => text_token(&[*b]),
        _ => symbol_token(&names.of(item)),
    }
}

fn alternative_json(names: &Names, items: &[Item]) -> String {
    let mut tokens = Vec::new();
    let mut text = Vec::new();
    for item in items {
        if let Item::Byte(b) = item {
            text.push(*b);
            continue;
        }
        if !text.is_empty() {
            tokens.push(text_token(&text));
            text.clear();
        }
        tokens.push(item_token(names, item));
    }
    if !text.is_empty() {
        tokens.push(text_token(&text));
    }
    format!("[{}]", tokens.join(", "))
}

/// The grammar's JSON text and the support of each rule.
pub fn write(rules: &Rules) -> (String, Vec<RuleSupport>) {
    let names = Names::new(rules);
    let mut entries: Vec<(String, Vec<String>)> = Vec::new();
    let mut support = Vec::new();
    let mut optionals: Vec<(String, String)> = Vec::new();
    for (function, alternatives) in &rules.nonterminals {
        let symbol = names.function(function).to_owned();
        let mut written = Vec::new();
        for alternative in alternatives {
            for item in &alternative.items {
                if let Item::Optional(inner) = item {
                    let name = names.of(item);
                    if !optionals.iter().any(|(n, _)| *n == name) {
                        optionals.push((name, item_token(&names, inner)));
                    }
                }
            }
            let json = alternative_json(&names, &alternative.items);
            support.push(RuleSupport {
                nonterminal: symbol.clone(),
                alternative: json.clone(),
                nodes: alternative.support,
                checks: alternative.checks,
            });
            written.push(json);
        }
        entries.push((symbol, written));
    }
    for (class, (_, members)) in rules.classes.iter().enumerate() {
        let single = symbol_token(&names.classes[class]);
        let chars = serde_json::Value::String(class_text(members)).to_string();
        entries.push((
            names.classes[class].clone(),
            vec![format!("{{\"chars\": {chars}}}")],
        ));
        let run = symbol_token(&suffixed(&names.classes[class], '+'));
        entries.push((
            suffixed(&names.classes[class], '+'),
            vec![format!("[{single}, {run}]"), format!("[{single}]")],
        ));
    }
    for (index, (_, unit)) in rules.repeats.iter().enumerate() {
        let once = alternative_json(&names, unit);
        let again = format!(
            "{}, {}]",
            &once[..once.len() - 1],
            symbol_token(&names.repeats[index])
        );
        entries.push((names.repeats[index].clone(), vec![again, once]));
    }
    for (name, inner) in optionals {
        entries.push((name, vec![format!("[{inner}]"), "[]".to_owned()]));
    }
    let mut json = String::from("{\n");
    for (k, (symbol, alternatives)) in entries.iter().enumerate() {
        let comma = if k + 1 < entries.len() { "," } else { "" };
        let _ = writeln!(
            json,
            "  {}: [\n    {}\n  ]{comma}",
            symbol_token(symbol),
            alternatives.join(",\n    ")
        );
    }
    json.push_str("}\n");
    (json, support)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_written_as_ranges_with_a_dash_last() {
        assert_eq!(class_text(b"0123456789"), "0-9");
        assert_eq!(class_text(b"+-01"), "+01-");
        assert_eq!(class_text(b"abcxz"), "a-cxz");
    }

    #[test]
    fn function_names_become_nonterminals() {
        let rules = Rules {
            nonterminals: vec![
                ("parse_object".into(), Vec::new()),
                (
                    "serde_json::de::Deserializer<R>::parse_any".into(),
                    Vec::new(),
                ),
            ],
            ..Rules::default()
        };
        let names = Names::new(&rules);
        assert_eq!(names.function("parse_object"), "<parse_object>");
        assert_eq!(
            names.function("serde_json::de::Deserializer<R>::parse_any"),
            "<serde_json::de::Deserializer_R_::parse_any>"
        );
    }
}
