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

/// A function's name as a nonterminal: characters other than letters, digits, `_` and `:`
/// become `_` (Rust paths keep their `::`).
fn symbol_for(function: &str) -> String {
    let cleaned: String = function
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("<{cleaned}>")
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
            .map(|(function, _)| {
                let symbol = symbol_for(function);
                (
                    function.clone(),
                    unique(symbol[1..symbol.len() - 1].to_owned()),
                )
            })
            .collect();
        let trimmed = |owner: &str| {
            let symbol = symbol_for(owner);
            symbol[1..symbol.len() - 1].to_owned()
        };
        let classes = rules
            .class_owners
            .iter()
            .map(|owner| unique(format!("{}-chars", trimmed(owner))))
            .collect();
        let repeats = rules
            .repeats
            .iter()
            .map(|(owner, _)| unique(format!("{}-more", trimmed(owner))))
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

    /// The run nonterminal of class `class`: its name with `+` before the `>`.
    fn run(&self, class: usize) -> String {
        let name = &self.classes[class];
        format!("{}+>", &name[..name.len() - 1])
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

/// The token of a non-byte item.
fn item_token(names: &Names, item: &Item) -> String {
    match item {
        Item::Class { class, many: false } => symbol_token(&names.classes[*class]),
        Item::Class { class, many: true } => symbol_token(&names.run(*class)),
        Item::Call(function) => symbol_token(names.function(function)),
        Item::Repeat(index) => symbol_token(&names.repeats[*index]),
        Item::Optional(inner) => symbol_token(&optional_name(names, inner)),
        Item::Byte(b) => text_token(&[*b]),
    }
}

/// The nonterminal standing for `inner` or nothing: its name with `?` before the `>`.
fn optional_name(names: &Names, inner: &Item) -> String {
    let token = item_token(names, inner);
    let name: String = serde_json::from_str(&token).unwrap_or(token);
    if name.starts_with('<') && name.ends_with('>') {
        format!("{}?>", &name[..name.len() - 1])
    } else {
        format!("<{}?>", name.replace(|c: char| c.is_whitespace(), "_"))
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
                    let name = optional_name(&names, inner);
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
    for (class, members) in rules.classes.iter().enumerate() {
        let single = symbol_token(&names.classes[class]);
        let chars = serde_json::Value::String(class_text(members)).to_string();
        entries.push((
            names.classes[class].clone(),
            vec![format!("{{\"chars\": {chars}}}")],
        ));
        let run = symbol_token(&names.run(class));
        entries.push((
            names.run(class),
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
        assert_eq!(symbol_for("parse_object"), "<parse_object>");
        assert_eq!(
            symbol_for("serde_json::de::Deserializer<R>::parse_any"),
            "<serde_json::de::Deserializer_R_::parse_any>"
        );
    }
}
