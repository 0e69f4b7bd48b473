//! Reading a grammar from its JSON text (the format is in the module docs of [`super`]).

use std::collections::BTreeMap;

use super::{Grammar, GrammarError, Item, Rule, SymbolId, Token};

/// A nonterminal-shaped string: `<name>` with no whitespace.
fn looks_like_symbol(text: &str) -> bool {
    text.len() > 2
        && text.starts_with('<')
        && text.ends_with('>')
        && !text.chars().any(char::is_whitespace)
}

/// Expands a character class such as `a-z0-9_` into its characters.
fn class_chars(class: &str, symbol: &str) -> Result<Vec<char>, GrammarError> {
    let chars: Vec<char> = class.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            let (lo, hi) = (chars[i], chars[i + 2]);
            if lo > hi {
                return Err(GrammarError::Shape(format!(
                    "`{symbol}`: character range `{lo}-{hi}` is backwards"
                )));
            }
            out.extend(lo..=hi);
            i += 3;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    if out.is_empty() {
        return Err(GrammarError::Shape(format!(
            "`{symbol}`: empty character class"
        )));
    }
    Ok(out)
}

/// A token as written, before nonterminals are resolved.
enum RawItem {
    Text(String),
    Symbol(String),
}

/// A rule as written: tokens with their hooks.
type RawRule = Vec<(RawItem, Option<String>)>;

impl Grammar {
    /// Reads a grammar from its JSON text (format in the module docs).
    ///
    /// # Errors
    /// A [`GrammarError`] naming the rule at fault.
    pub fn from_json(text: &str) -> Result<Self, GrammarError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| GrammarError::Json(e.to_string()))?;
        let object = value.as_object().ok_or_else(|| {
            GrammarError::Shape("expected an object from nonterminals to alternatives".into())
        })?;
        let names: Vec<String> = object.keys().cloned().collect();
        let index: BTreeMap<&str, SymbolId> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut raw_rules: Vec<Vec<RawRule>> = Vec::new();
        for (name, alternatives) in object {
            let alternatives = alternatives.as_array().ok_or_else(|| {
                GrammarError::Shape(format!("`{name}`: expected a list of alternatives"))
            })?;
            if alternatives.is_empty() {
                return Err(GrammarError::Shape(format!("`{name}` has no alternatives")));
            }
            let mut rules = Vec::new();
            for alternative in alternatives {
                if let Some(class) = alternative.get("chars") {
                    let class = class.as_str().ok_or_else(|| {
                        GrammarError::Shape(format!("`{name}`: \"chars\" must be a string"))
                    })?;
                    for c in class_chars(class, name)? {
                        rules.push(vec![(RawItem::Text(c.to_string()), None)]);
                    }
                    continue;
                }
                let tokens = alternative.as_array().ok_or_else(|| {
                    GrammarError::Shape(format!(
                        "`{name}`: an alternative must be a list of tokens or {{\"chars\": ...}}"
                    ))
                })?;
                let mut rule = Vec::new();
                for token in tokens {
                    rule.push(Self::raw_token(token, name, &index)?);
                }
                rules.push(rule);
            }
            raw_rules.push(rules);
        }
        let start = *index.get("<start>").ok_or(GrammarError::NoStart)?;
        let mut rules = Vec::with_capacity(raw_rules.len());
        for (symbol, raw) in raw_rules.into_iter().enumerate() {
            let mut resolved = Vec::new();
            for raw_rule in raw {
                let mut tokens = Vec::new();
                for (item, hook) in raw_rule {
                    let item = match item {
                        RawItem::Text(text) => Item::Text(text.into_bytes()),
                        RawItem::Symbol(target) => match index.get(target.as_str()) {
                            Some(&id) => Item::Symbol(id),
                            None => {
                                return Err(GrammarError::Undefined {
                                    symbol: target,
                                    used_in: names[symbol].clone(),
                                })
                            }
                        },
                    };
                    tokens.push(Token { item, hook });
                }
                resolved.push(Rule { tokens, cost: 0 });
            }
            rules.push(resolved);
        }
        let mut grammar = Grammar {
            costs: vec![u32::MAX; names.len()],
            names,
            rules,
            start,
        };
        grammar.compute_costs()?;
        Ok(grammar)
    }

    fn raw_token(
        token: &serde_json::Value,
        name: &str,
        index: &BTreeMap<&str, SymbolId>,
    ) -> Result<(RawItem, Option<String>), GrammarError> {
        let bad = || {
            GrammarError::Shape(format!(
                "`{name}`: a token must be a string, {{\"text\": ...}} or {{\"symbol\": ...}}"
            ))
        };
        if let Some(text) = token.as_str() {
            let item = if index.contains_key(text) || looks_like_symbol(text) {
                RawItem::Symbol(text.to_string())
            } else {
                RawItem::Text(text.to_string())
            };
            return Ok((item, None));
        }
        let object = token.as_object().ok_or_else(bad)?;
        let hook = match object.get("hook") {
            None => None,
            Some(h) => Some(h.as_str().ok_or_else(bad)?.to_string()),
        };
        let item = match (object.get("text"), object.get("symbol")) {
            (Some(text), None) => RawItem::Text(text.as_str().ok_or_else(bad)?.to_string()),
            (None, Some(symbol)) => RawItem::Symbol(symbol.as_str().ok_or_else(bad)?.to_string()),
            _ => return Err(bad()),
        };
        Ok((item, hook))
    }
}
