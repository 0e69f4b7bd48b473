//! `FUZZER report OUT`: one self-contained `OUT/report.html` of a run, finished or still going.
//!
//! Everything comes from what the run writes: `summary.json` (figures and crash labels),
//! `stats.jsonl` (the time series), `corpus.json` (each corpus input and how many labels it is
//! best for), the reproducers beside them and, when `coverage` was run, `coverage/summary.json`.
//! The plots are inline SVG and the page carries its own style: it opens without a network.

pub mod plots;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::ToolError;
use crate::summary::Summary;
use plots::{line_plot, Series};

/// How many reproducer bytes the crash table shows.
const SHOWN_BYTES: usize = 256;
/// How many corpus inputs the corpus table lists (those best for the most labels first).
const SHOWN_CORPUS: usize = 200;

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

/// The first bytes of `bytes` in hex, sixteen to a line.
fn hex(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(SHOWN_BYTES)];
    let lines: Vec<String> = shown
        .chunks(16)
        .map(|chunk| {
            chunk
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let more = if bytes.len() > SHOWN_BYTES {
        "\n…"
    } else {
        ""
    };
    format!("{}{more}", lines.join("\n"))
}

/// A series of `field` from the time series lines.
fn series_of(lines: &[Value], name: &str, field: &str) -> Series {
    Series {
        name: name.to_string(),
        points: lines
            .iter()
            .filter_map(|line| Some((line["time"].as_f64()?, line[field].as_f64()?)))
            .collect(),
    }
}

/// One line per client of a multi-core run: its labels over time.
fn client_series(lines: &[Value]) -> Vec<Series> {
    let clients = lines
        .iter()
        .filter_map(|l| l["clients"].as_array().map(Vec::len))
        .max()
        .unwrap_or(0);
    (0..clients)
        .map(|client| Series {
            name: format!("client {client}"),
            points: lines
                .iter()
                .filter_map(|line| {
                    let time = line["time"].as_f64()?;
                    Some((time, line["clients"][client]["labels"].as_f64()?))
                })
                .collect(),
        })
        .collect()
}

/// Reads and parses a JSON file, if present and readable.
fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn figures(summary: &Summary) -> String {
    let rows = [
        ("executions", summary.executions.to_string()),
        ("time", format!("{:.0} s", summary.elapsed_secs)),
        ("exec/s", format!("{:.0}", summary.execs_per_sec)),
        ("labels", summary.labels.to_string()),
        ("edges", summary.edges.to_string()),
        (
            "corpus",
            format!(
                "{} inputs, {} bytes",
                summary.corpus.entries, summary.corpus.bytes
            ),
        ),
        ("crash labels", summary.crashes.len().to_string()),
        ("peak RSS", format!("{} MiB", summary.peak_rss_mb)),
        ("clients", summary.clients.to_string()),
    ];
    let mut html = String::from("<table id=\"figures\">");
    for (name, value) in rows {
        let _ = write!(
            html,
            "<tr><th>{name}</th><td class=\"{}\">{}</td></tr>",
            name.replace([' ', '/'], "-"),
            escape(&value)
        );
    }
    html.push_str("</table>");
    html
}

fn crash_table(out: &Path, summary: &Summary, fuzzer: Option<&Path>) -> String {
    if summary.crashes.is_empty() {
        return "<p id=\"crashes\">No crash found.</p>".to_string();
    }
    let mut html = String::from(
        "<table id=\"crashes\"><tr><th>kind</th><th>site</th><th>message</th><th>first \
         found</th><th>minimal reproducer</th></tr>",
    );
    for crash in &summary.crashes {
        let path = out.join(&crash.input);
        let bytes = std::fs::read(&path).unwrap_or_default();
        let rendered = std::fs::read(path.with_extension("rendered"))
            .or_else(|_| std::fs::read(format!("{}.rendered", path.display())))
            .ok()
            .map(|text| {
                format!(
                    "<div>sentence: <code>{}</code></div>",
                    escape(&String::from_utf8_lossy(&text))
                )
            })
            .unwrap_or_default();
        let mut pattern = crash.pattern.as_ref().map_or_else(String::new, |pattern| {
            format!(
                "<div>pattern: <code class=\"pattern\">{}</code> ({} executions)</div>",
                escape(pattern),
                crash.pattern_executions.unwrap_or(0)
            )
        });
        if let Some(typed) = &crash.typed_pattern {
            pattern.push_str(&format!(
                "<div>as the target reads it: <code class=\"pattern\">{}</code></div>",
                escape(typed)
            ));
        }
        let twins = if crash.same_bug_as.is_empty() {
            String::new()
        } else {
            format!(
                "<div>the same bug as: <code>{}</code></div>",
                escape(&crash.same_bug_as.join(", "))
            )
        };
        let replay = fuzzer.map_or_else(String::new, |exe| {
            format!(
                "<div>replay: <code>{} {}</code></div>",
                escape(&exe.display().to_string()),
                escape(&path.display().to_string())
            )
        });
        let _ = write!(
            html,
            "<tr class=\"crash\"><td>{}</td><td><code>{}</code></td><td class=\"message\">{}</td>\
             <td>{:.1} s, run {}</td><td><div>{} bytes, <code>{}</code></div>\
             <pre class=\"hex\">{}</pre><div>text: <code>{}</code></div>{rendered}{pattern}{twins}{replay}</td></tr>",
            escape(&crash.kind),
            escape(&crash.location),
            escape(&crash.message),
            crash.first_found_secs,
            crash.first_found_execs,
            crash.len,
            escape(&crash.input),
            hex(&bytes),
            escape(&bytes[..bytes.len().min(SHOWN_BYTES)].escape_ascii().to_string()),
        );
    }
    html.push_str("</table>");
    html
}

fn corpus_table(out: &Path) -> String {
    let mut entries: Vec<(String, u64, u64)> = read_json(&out.join("corpus.json"))
        .and_then(|index| index.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| {
            Some((
                e["file"].as_str()?.to_string(),
                e["len"].as_u64()?,
                e["labels"].as_u64()?,
            ))
        })
        .collect();
    if entries.is_empty() {
        return "<p id=\"corpus\">No corpus index yet.</p>".to_string();
    }
    entries.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
    let mut html = format!(
        "<p>{} inputs; the {} best for the most labels:</p><table id=\"corpus\">\
         <tr><th>input</th><th>bytes</th><th>labels it is best for</th><th>text</th></tr>",
        entries.len(),
        entries.len().min(SHOWN_CORPUS)
    );
    for (file, len, labels) in entries.iter().take(SHOWN_CORPUS) {
        let bytes = std::fs::read(out.join("corpus").join(file)).unwrap_or_default();
        let _ = write!(
            html,
            "<tr><td><code>{}</code></td><td>{len}</td><td>{labels}</td><td><code>{}</code></td></tr>",
            escape(file),
            escape(&bytes[..bytes.len().min(64)].escape_ascii().to_string())
        );
    }
    html.push_str("</table>");
    html
}

fn coverage_section(out: &Path) -> String {
    let Some(summary) = read_json(&out.join("coverage/summary.json")) else {
        return "<p>No source coverage yet (see the README's <code>coverage</code> command).</p>"
            .to_string();
    };
    let figure = |name: &str| {
        let part = &summary[name];
        format!(
            "<tr><th>{name}</th><td>{} of {} ({:.1}%)</td></tr>",
            part["covered"].as_u64().unwrap_or(0),
            part["count"].as_u64().unwrap_or(0),
            part["percent"].as_f64().unwrap_or(0.0)
        )
    };
    format!(
        "<table id=\"coverage\">{}{}{}</table><p><a href=\"coverage/index.html\">llvm-cov's \
         report, line by line</a></p>",
        figure("lines"),
        figure("branches"),
        figure("functions")
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;\
text-align:left;vertical-align:top}pre.hex{margin:4px 0;font-size:12px}td.message{white-space:pre-wrap}\
code{word-break:break-all}.error{color:#b00}";

/// Writes `OUT/report.html` for the run in `out` and returns its path; `fuzzer` (this
/// program) goes into each crash's replay command.
///
/// # Errors
/// When `out` holds no `summary.json` (not a labelfuzz output directory), or the page cannot
/// be written.
pub fn write_report(out: &Path, fuzzer: Option<&Path>) -> Result<PathBuf, ToolError> {
    let summary = Summary::read_file(&out.join("summary.json"))?;
    let lines = crate::series::read_series(&out.join("stats.jsonl"));
    let growth = line_plot(
        "growth",
        "Labels, edges and corpus inputs",
        "count",
        &[
            series_of(&lines, "labels", "labels"),
            series_of(&lines, "edges", "edges"),
            series_of(&lines, "corpus inputs", "corpus_entries"),
        ],
    );
    let speed = line_plot(
        "speed",
        "Executions per second",
        "exec/s",
        &[series_of(&lines, "exec/s", "execs_per_sec")],
    );
    let clients = client_series(&lines);
    let clients = if clients.is_empty() {
        String::new()
    } else {
        format!(
            "<h2>Clients</h2>{}",
            line_plot("clients", "Labels per client", "labels", &clients)
        )
    };
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>labelfuzz report: {title}</title><style>{STYLE}</style></head><body>\
         <h1>labelfuzz report: <code>{title}</code></h1>{figures}\
         <h2>Over time</h2>{growth}{speed}{clients}\
         <h2>Crash labels</h2>{crashes}<h2>Source coverage</h2>{coverage}\
         <h2>Corpus</h2>{corpus}</body></html>\n",
        title = escape(&out.display().to_string()),
        figures = figures(&summary),
        crashes = crash_table(out, &summary, fuzzer),
        coverage = coverage_section(out),
        corpus = corpus_table(out),
    );
    let path = out.join("report.html");
    std::fs::write(&path, page).map_err(|e| ToolError::io("write", &path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_bytes_shown_in_hex() {
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
        assert_eq!(hex(b"AB\x00"), "41 42 00");
        assert_eq!(hex(&[0u8; 17]).lines().count(), 2);
    }
}
