//! The crash table: one reproducer per crash label, the simplest seen, always on disk.
//!
//! A crash record is written to `OUT/crashes/` the moment it is found or improved — before a
//! signal handler restarts the process — so no crash that was reported is ever lost.

use std::collections::BTreeMap;
use std::path::Path;

use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};

use crate::crash::{CrashInfo, CrashKind};
use crate::error::LabelfuzzError;
use crate::gates::Gate;
use crate::labels::Label;
use crate::order::is_simpler;
use crate::output::OutputDir;
use crate::pattern::Pattern;

/// The error for a reproducer that could not be written to `OUT/` (a full disk, a read-only
/// directory): the crash is kept elsewhere — a copy in the temporary directory, and its bytes in
/// the message when they are few — so that it is not lost.
fn not_saved(error: LabelfuzzError, info: &CrashInfo, file: &str, bytes: &[u8]) -> LabelfuzzError {
    /// Inputs up to this long are shown in the message.
    const SHOWN: usize = 256;
    let name = file.rsplit('/').next().unwrap_or(file);
    let copy = std::env::temp_dir().join(format!("labelfuzz-{}-{name}", std::process::id()));
    let kept = match std::fs::write(&copy, bytes) {
        Ok(()) => format!("a copy is in {}", copy.display()),
        Err(e) => format!("no copy either ({}: {e})", copy.display()),
    };
    let shown = if bytes.len() <= SHOWN {
        let escaped: String = bytes
            .iter()
            .flat_map(|b| std::ascii::escape_default(*b))
            .map(char::from)
            .collect();
        format!("; its {} bytes are \"{escaped}\"", bytes.len())
    } else {
        String::new()
    };
    LabelfuzzError::CrashNotSaved(format!(
        "{error}: the crash ({} {}) is not saved in the output directory; {kept}{shown}",
        info.kind, info.location
    ))
}

/// The best reproducer of one crash label.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CrashRecord {
    /// The crash label.
    pub label: Label,
    /// What happened and where.
    pub info: CrashInfo,
    /// The simplicity key of the reproducer (for byte inputs, the reproducer).
    pub key: Vec<u8>,
    /// The reproducer's file, relative to the output directory.
    pub file: String,
    /// The reproducer's length in bytes.
    pub len: usize,
    /// The reproducer's bytes as written, to write again if the file goes missing (None in a
    /// state saved before they were kept).
    #[serde(default)]
    pub bytes: Option<Vec<u8>>,
    /// Seconds from the start of the run to the first input showing this label.
    pub first_found_secs: f64,
    /// Executions from the start of the run to the first input showing this label.
    pub first_found_execs: u64,
    /// True once the reproducer went through every shrink pass to a fixpoint.
    #[serde(default)]
    pub shrunk: bool,
    /// The abstract failure pattern of a shrunk reproducer of this label, once found: the
    /// newest one's, or an earlier one's until a simpler reproducer's is found (a run that ends
    /// in between keeps a pattern).
    #[serde(default)]
    pub pattern: Option<Pattern>,
    /// The key of the reproducer [`CrashRecord::pattern`] generalizes.
    #[serde(default)]
    pub pattern_of: Vec<u8>,
    /// Other crash labels whose patterns and this one's match each other's reproducers: the
    /// same bug reached another way.
    #[serde(default)]
    pub same_bug_as: Vec<Label>,
    /// The gates (checksums, lengths) watched when a reproducer was found: its shrink repairs
    /// them ([`crate::gates`]).
    #[serde(default)]
    pub gates: Vec<Gate>,
}

/// The crash label of the last failing execution, kept in the state so that it survives the
/// restart a signal or timeout causes (the pattern stage reads it after one of its variants
/// ended the process).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct LastCrash(pub Option<Label>);

impl_serdeany!(LastCrash);

fn is_slow_kind(kind: &CrashKind) -> bool {
    matches!(kind, CrashKind::Timeout | CrashKind::Oom)
}

/// All crash labels seen, kept as LibAFL state metadata so it survives restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CrashTable {
    records: BTreeMap<Label, CrashRecord>,
    /// Reproducers written again because their file was deleted or replaced during the run.
    #[serde(default)]
    rewritten: usize,
}

impl_serdeany!(CrashTable);

impl CrashTable {
    /// True when an input with simplicity key `key` crashing with `label` is a new crash label or
    /// a simpler reproducer of a known one.
    #[must_use]
    pub fn improves(&self, label: Label, key: &[u8]) -> bool {
        self.records
            .get(&label)
            .is_none_or(|record| is_simpler(key, &record.key))
    }

    /// Records `bytes` (simplicity key `key`) as the reproducer of `info` and writes it to disk.
    /// Returns true when the label was new.
    pub fn record(
        &mut self,
        out: &OutputDir,
        info: &CrashInfo,
        key: &[u8],
        bytes: &[u8],
        found_secs: f64,
        found_execs: u64,
    ) -> Result<bool, LabelfuzzError> {
        let label = info.label();
        let file = format!(
            "crashes/{}-{:016x}",
            info.file_prefix(),
            label.raw() & !(1 << 63)
        );
        if let Err(error) = out.write_reproducer(Path::new(&file), bytes) {
            return Err(not_saved(error, info, &file, bytes));
        }
        let new = !self.records.contains_key(&label);
        let record = self.records.entry(label).or_insert_with(|| CrashRecord {
            label,
            info: CrashInfo {
                message: info.described(),
                ..info.clone()
            },
            key: Vec::new(),
            file: file.clone(),
            len: 0,
            bytes: None,
            first_found_secs: found_secs,
            first_found_execs: found_execs,
            shrunk: false,
            pattern: None,
            pattern_of: Vec::new(),
            same_bug_as: Vec::new(),
            gates: Vec::new(),
        });
        record.shrunk = false;
        record.key = key.to_vec();
        record.len = bytes.len();
        record.bytes = Some(bytes.to_vec());
        if info.kind == crate::labels::CrashKind::Panic {
            // The stack of the reproducer on disk, for libFuzzer-shaped reports.
            record.info.frames.clone_from(&info.frames);
        }
        if info.kind == crate::labels::CrashKind::Panic || info.frames.is_empty() {
            // A panic's message may change with the input; a site's description does not.
            record.info.message.clone_from(&info.message);
        }
        Ok(new)
    }

    /// Keeps `gates` with the record of `label` (none: the gates it has stay).
    pub fn keep_gates(&mut self, label: Label, gates: &[Gate]) {
        if let Some(record) = self.records.get_mut(&label) {
            if !gates.is_empty() {
                record.gates = gates.to_vec();
            }
        }
    }

    /// A crash label whose reproducer still needs shrinking, with that reproducer's key; a slow
    /// one (see [`CrashTable::is_slow`]) only when `slow_too`.
    #[must_use]
    pub fn unshrunk(&self, slow_too: bool) -> Option<(Label, Vec<u8>)> {
        self.records
            .values()
            .find(|r| !r.shrunk && (slow_too || !is_slow_kind(&r.info.kind)))
            .map(|r| (r.label, r.key.clone()))
    }

    /// True when `label` is a timeout or an out-of-memory crash: every shrink candidate that
    /// still shows it costs a whole timeout (or a fill of memory) and a restart, so shrinking
    /// it draws on the [`crate::shrink_budget::SlowShrinkBudget`].
    #[must_use]
    pub fn is_slow(&self, label: Label) -> bool {
        self.records
            .get(&label)
            .is_some_and(|r| is_slow_kind(&r.info.kind))
    }

    /// A crash label whose shrunk reproducer has no pattern of its own yet, with that
    /// reproducer's key.
    /// Timeouts and out-of-memory crashes get none: every variant tried could cost a timeout.
    #[must_use]
    pub fn without_pattern(&self) -> Option<(Label, Vec<u8>)> {
        self.records
            .values()
            .find(|r| {
                r.shrunk
                    && (r.pattern.is_none() || r.pattern_of != r.key)
                    && !matches!(r.info.kind, CrashKind::Timeout | CrashKind::Oom)
            })
            .map(|r| (r.label, r.key.clone()))
    }

    /// Sets `label`'s pattern, and notes the other labels that are the same bug by `same`
    /// (called with the other record; true when the two patterns match each other's
    /// reproducers).
    pub fn set_pattern(
        &mut self,
        label: Label,
        pattern: Pattern,
        same: &mut dyn FnMut(&Pattern, &CrashRecord) -> bool,
    ) {
        let mut twins = Vec::new();
        for other in self.records.values() {
            if other.label != label && other.pattern.is_some() && same(&pattern, other) {
                twins.push(other.label);
            }
        }
        for twin in &twins {
            if let Some(other) = self.records.get_mut(twin) {
                if !other.same_bug_as.contains(&label) {
                    other.same_bug_as.push(label);
                }
            }
        }
        if let Some(record) = self.records.get_mut(&label) {
            record.pattern = Some(pattern);
            record.pattern_of.clone_from(&record.key);
            record.same_bug_as = twins;
        }
    }

    /// The record of `label`.
    #[must_use]
    pub fn get(&self, label: Label) -> Option<&CrashRecord> {
        self.records.get(&label)
    }

    /// Marks `label`'s reproducer as shrunk to a fixpoint.
    pub fn mark_shrunk(&mut self, label: Label) {
        if let Some(record) = self.records.get_mut(&label) {
            record.shrunk = true;
        }
    }

    /// Writes again every reproducer whose file was deleted, or replaced by something that
    /// is not a simpler reproducer (another client's improvement is one), during the run;
    /// returns the files written.
    ///
    /// # Errors
    /// When a reproducer cannot be written (a full disk, a read-only directory).
    pub fn put_back_reproducers(&mut self, out: &OutputDir) -> Result<Vec<String>, LabelfuzzError> {
        let mut written = Vec::new();
        for record in self.records.values() {
            let Some(bytes) = &record.bytes else {
                continue;
            };
            let path = out.root().join(&record.file);
            let on_disk = std::fs::read(&path).ok();
            if on_disk.as_ref() == Some(bytes)
                || on_disk.is_some_and(|other| is_simpler(&other, bytes))
            {
                continue;
            }
            out.write_reproducer(Path::new(&record.file), bytes)?;
            written.push(record.file.clone());
        }
        self.rewritten += written.len();
        Ok(written)
    }

    /// How many reproducers [`CrashTable::put_back_reproducers`] wrote again in this run.
    #[must_use]
    pub fn rewritten(&self) -> usize {
        self.rewritten
    }

    /// The records, by label.
    pub fn records(&self) -> impl Iterator<Item = &CrashRecord> {
        self.records.values()
    }

    /// The number of crash labels.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no crash was found.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash(kind: CrashKind, location: &str, message: &str) -> CrashInfo {
        CrashInfo {
            kind,
            location: location.into(),
            message: message.into(),
            frames: Vec::new(),
        }
    }

    fn panic_at(location: &str) -> CrashInfo {
        crash(CrashKind::Panic, location, "boom")
    }

    #[test]
    fn slow_crashes_wait_for_budget_before_they_are_shrunk() {
        let dir = std::env::temp_dir().join(format!("labelfuzz-slow-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = OutputDir::create(&dir).unwrap();
        let mut table = CrashTable::default();
        let hang = crash(CrashKind::Timeout, "", "");
        table.record(&out, &hang, b"slow", b"slow", 1.0, 1).unwrap();
        assert!(table.is_slow(hang.label()));
        assert_eq!(table.unshrunk(false), None);
        assert_eq!(table.unshrunk(true), Some((hang.label(), b"slow".to_vec())));
        let panic = panic_at("a.rs:1:1");
        table.record(&out, &panic, b"p", b"p", 2.0, 2).unwrap();
        assert!(!table.is_slow(panic.label()));
        assert_eq!(table.unshrunk(false), Some((panic.label(), b"p".to_vec())));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_file_per_label_replaced_by_simpler_reproducers() {
        let dir = std::env::temp_dir().join(format!("labelfuzz-crashes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = OutputDir::create(&dir).unwrap();
        let mut table = CrashTable::default();
        let a = panic_at("a.rs:1:1");
        assert!(table.improves(a.label(), b"xyz"));
        assert!(table.record(&out, &a, b"xyz", b"xyz", 0.5, 10).unwrap());
        assert!(!table.improves(a.label(), b"xyz"));
        assert!(!table.improves(a.label(), b"zzzz"));
        assert!(table.improves(a.label(), b"xy"));
        assert!(!table.record(&out, &a, b"xy", b"xy", 0.9, 20).unwrap());
        let b = panic_at("b.rs:2:2");
        table.record(&out, &b, b"q", b"q", 1.0, 30).unwrap();

        assert_eq!(table.len(), 2);
        let rec = table.records().find(|r| r.label == a.label()).unwrap();
        assert_eq!(rec.first_found_execs, 10, "first-found stays the first");
        assert_eq!(rec.len, 2);
        assert_eq!(std::fs::read(dir.join(&rec.file)).unwrap(), b"xy");
        assert_eq!(std::fs::read_dir(dir.join("crashes")).unwrap().count(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn crashes_whose_patterns_match_each_other_are_the_same_bug() {
        use crate::pattern::{BytePart, BytePattern};
        let dir = std::env::temp_dir().join(format!("labelfuzz-twins-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = OutputDir::create(&dir).unwrap();
        let mut table = CrashTable::default();
        let (a, b, c) = (
            panic_at("a.rs:1:1"),
            panic_at("b.rs:2:2"),
            panic_at("c.rs:3:3"),
        );
        for (info, input) in [(&a, &b"Bx"[..]), (&b, b"By"), (&c, b"C")] {
            table.record(&out, info, input, input, 0.0, 0).unwrap();
            table.mark_shrunk(info.label());
        }
        // `B ?` for the first two reproducers, `C` for the third.
        let starts_b = Pattern::Bytes(BytePattern {
            parts: vec![
                BytePart::Exact(b'B'),
                BytePart::Class {
                    class: crate::pattern::ByteClass::Any,
                    shown: 20,
                    tried: 20,
                },
            ],
            probes: 40,
            typed: None,
        });
        let exact_c = Pattern::Bytes(BytePattern {
            parts: vec![BytePart::Exact(b'C')],
            probes: 9,
            typed: None,
        });
        let mut same = |pattern: &Pattern, other: &CrashRecord| match pattern {
            Pattern::Bytes(p) => p.matches(&other.key),
            Pattern::Grammar(_) => false,
        };
        assert!(
            table.without_pattern().is_some(),
            "shrunk, without a pattern"
        );
        table.set_pattern(a.label(), starts_b.clone(), &mut same);
        table.set_pattern(c.label(), exact_c, &mut same);
        assert!(
            table.get(a.label()).unwrap().same_bug_as.is_empty(),
            "no other pattern yet"
        );
        table.set_pattern(b.label(), starts_b, &mut same);
        assert_eq!(table.get(b.label()).unwrap().same_bug_as, vec![a.label()]);
        assert_eq!(table.get(a.label()).unwrap().same_bug_as, vec![b.label()]);
        assert!(table.get(c.label()).unwrap().same_bug_as.is_empty());
        assert!(table.without_pattern().is_none());
        // A simpler reproducer needs a pattern of its own; the old one's stays until then.
        table.record(&out, &a, b"B", b"B", 1.0, 9).unwrap();
        table.mark_shrunk(a.label());
        assert_eq!(table.without_pattern(), Some((a.label(), b"B".to_vec())));
        assert!(table.get(a.label()).unwrap().pattern.is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
