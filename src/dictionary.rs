//! Dictionaries in the libFuzzer/AFL format (`-dict=FILE`, `-x FILE`, `--dict FILE`): one
//! quoted token a line, optionally named (`kw_select="SELECT"`, AFL's `name@level = ` too), with
//! `\\`, `\"` and `\xNN` escapes; blank lines and `#` comments are skipped. The tokens go to the
//! havoc stage's token mutations, which insert them into inputs or overwrite bytes with them.

use std::path::Path;

use crate::error::LabelfuzzError;

/// Reads the tokens of a dictionary file; an error names the file, the line and what is wrong.
pub fn read_dictionary(path: &Path) -> Result<Vec<Vec<u8>>, LabelfuzzError> {
    let bytes = std::fs::read(path).map_err(|e| LabelfuzzError::io("read dictionary", path, e))?;
    parse_dictionary(&bytes).map_err(|(line, why)| {
        LabelfuzzError::Usage(format!("dictionary {} line {line}: {why}", path.display()))
    })
}

/// The tokens of a dictionary's text, or the first bad line's number (from 1) and what is
/// wrong with it.
pub fn parse_dictionary(text: &[u8]) -> Result<Vec<Vec<u8>>, (usize, String)> {
    let mut tokens = Vec::new();
    for (index, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = raw.trim_ascii();
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let token = parse_line(line).map_err(|why| (index + 1, why))?;
        if !token.is_empty() && !tokens.contains(&token) {
            tokens.push(token);
        }
    }
    Ok(tokens)
}

fn parse_line(line: &[u8]) -> Result<Vec<u8>, String> {
    let quote = line
        .iter()
        .position(|&b| b == b'"')
        .ok_or("expected a quoted token, e.g. \"GET\" or name=\"GET\"")?;
    // What comes before the quote is a name (`kw=`, AFL's `kw@2 = `), which no one reads.
    let body = &line[quote + 1..];
    let mut token = Vec::new();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                return if body[i + 1..].is_empty() {
                    Ok(token)
                } else {
                    Err("text after the closing quote".into())
                };
            }
            b'\\' => {
                match body.get(i + 1) {
                    Some(b'\\') => token.push(b'\\'),
                    Some(b'"') => token.push(b'"'),
                    Some(b'x') => {
                        let hex = body
                            .get(i + 2..i + 4)
                            .and_then(|h| std::str::from_utf8(h).ok())
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or("`\\x` needs two hex digits")?;
                        token.push(hex);
                        i += 2;
                    }
                    _ => return Err("unknown escape (use \\\\, \\\" or \\xNN)".into()),
                }
                i += 2;
            }
            byte => {
                token.push(byte);
                i += 1;
            }
        }
    }
    Err("no closing quote".into())
}

/// `tokens` as a dictionary file that [`parse_dictionary`] (and libFuzzer, AFL++) read back:
/// one quoted token a line, bytes outside printable ASCII as `\xNN`.
#[must_use]
pub fn format_dictionary<'a>(tokens: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut text = String::new();
    for token in tokens {
        text.push('"');
        text.push_str(&escape_bytes(token));
        text.push_str("\"\n");
    }
    text
}

/// `bytes` as libFuzzer writes them in dictionaries and crash reports: printable ASCII as it
/// is, `"` and `\` escaped with a backslash, every other byte as `\xNN`.
#[must_use]
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &byte in bytes {
        match byte {
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            b' '..=b'~' => text.push(char::from(byte)),
            _ => text.push_str(&format!("\\x{byte:02x}")),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_dictionary_reads_back() {
        let tokens: Vec<&[u8]> = vec![b"SELECT", b"\x89PNG\r\n", b"a\"b\\c", b"\x00\xff"];
        let text = format_dictionary(tokens.iter().copied());
        assert_eq!(
            text,
            "\"SELECT\"\n\"\\x89PNG\\x0d\\x0a\"\n\"a\\\"b\\\\c\"\n\"\\x00\\xff\"\n"
        );
        assert_eq!(parse_dictionary(text.as_bytes()).unwrap(), tokens);
    }

    #[test]
    fn libfuzzer_and_afl_dictionaries_parse() {
        let text =
            b"# keywords\n\nkw1=\"SELECT\"\n\"\\x00\\xffAB\"\nhdr@2=\"a\\\"b\\\\\"\n\"SELECT\"\n";
        assert_eq!(
            parse_dictionary(text).unwrap(),
            vec![
                b"SELECT".to_vec(),
                b"\x00\xffAB".to_vec(),
                b"a\"b\\".to_vec()
            ]
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        for (text, line, needle) in [
            (&b"\"ok\"\nSELECT\n"[..], 2, "quoted token"),
            (&b"\"open\n"[..], 1, "no closing quote"),
            (&b"\"\\x4\"\n"[..], 1, "two hex digits"),
            (&b"\"a\" b\n"[..], 1, "after the closing quote"),
            (&b"\"\\q\"\n"[..], 1, "unknown escape"),
        ] {
            let (at, why) = parse_dictionary(text).unwrap_err();
            assert_eq!(at, line, "{why}");
            assert!(why.contains(needle), "{why}");
        }
        // Names as libFuzzer and AFL++ accept them.
        assert_eq!(
            parse_dictionary(b"kw = \"x\"\nmy-kw@1=\"y\"\n").unwrap(),
            vec![b"x".to_vec(), b"y".to_vec()]
        );
        // Not UTF-8 is fine: tokens are bytes.
        assert_eq!(parse_dictionary(b"\"\xff\"").unwrap(), vec![vec![0xff]]);
    }
}
