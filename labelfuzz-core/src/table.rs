//! The best-per-label table: for every label, the single simplest input seen to show it.
//!
//! The table is the corpus. An input enters when it is the best for at least one label and
//! leaves when the last label it held passes to a simpler input. Edge labels live in a dense
//! array indexed by (edge, bucket) so that checking an execution costs one load per label;
//! any other label goes to a hash map.

use serde::{Deserialize, Serialize};

use crate::labels::{Label, LabelMap};
use crate::order::is_simpler;

/// One input that is best for at least one label; `Id` names where the input itself is stored
/// (the engine's corpus id).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry<Id> {
    /// The input's simplicity key (for byte inputs, the input itself).
    pub key: Vec<u8>,
    /// Where the input is stored.
    pub corpus_id: Id,
    /// How many labels this entry is currently best for.
    holds: u32,
}

impl<Id> Entry<Id> {
    /// How many labels this entry is currently best for.
    #[must_use]
    pub fn holds(&self) -> u32 {
        self.holds
    }
}

/// What [`LabelTable::record`] changed.
#[derive(Debug, PartialEq, Eq)]
pub struct Recorded<Id> {
    /// Labels the new input now holds (new or taken over).
    pub improved: Vec<Label>,
    /// Stored inputs that no longer hold any label and must leave the store (among them the
    /// new input's own id when its labels joined an entry with the same key).
    pub evicted: Vec<Id>,
}

impl<Id> Default for Recorded<Id> {
    fn default() -> Self {
        Recorded {
            improved: Vec::new(),
            evicted: Vec::new(),
        }
    }
}

/// The best-per-label table over inputs stored under ids of type `Id`. (The engine keeps it in
/// LibAFL's state, so that it survives restarts.)
#[derive(Debug, Serialize, Deserialize)]
pub struct LabelTable<Id> {
    /// Edge labels: `dense[label.dense_index()]` is the entry slot plus one (0 = no input yet).
    dense: Vec<u32>,
    /// Every other label: its entry slot.
    sparse: LabelMap<u32>,
    /// Every label that has a best input, in order of discovery (for uniform random choice).
    present: Vec<Label>,
    /// Entry slots; `None` marks a free slot.
    entries: Vec<Option<Entry<Id>>>,
    /// Free slots for reuse.
    free: Vec<u32>,
    /// Evicted ids the engine has not removed from its store yet.
    pending_evictions: Vec<Id>,
    /// Total bytes of all live entries.
    bytes: usize,
}

impl<Id> Default for LabelTable<Id> {
    fn default() -> Self {
        LabelTable {
            dense: Vec::new(),
            sparse: LabelMap::default(),
            present: Vec::new(),
            entries: Vec::new(),
            free: Vec::new(),
            pending_evictions: Vec::new(),
            bytes: 0,
        }
    }
}

impl<Id: Copy> LabelTable<Id> {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn slot_of(&self, label: Label) -> Option<u32> {
        match label.dense_index() {
            Some(i) => match self.dense.get(i) {
                Some(&s) if s != 0 => Some(s - 1),
                _ => None,
            },
            None => self.sparse.get(&label).copied(),
        }
    }

    fn set_slot(&mut self, label: Label, slot: u32) {
        match label.dense_index() {
            Some(i) => {
                if i >= self.dense.len() {
                    self.dense.resize((i + 1).next_power_of_two(), 0);
                }
                self.dense[i] = slot + 1;
            }
            None => {
                self.sparse.insert(label, slot);
            }
        }
    }

    /// The current best entry for `label`.
    #[must_use]
    pub fn best(&self, label: Label) -> Option<&Entry<Id>> {
        self.slot_of(label)
            .and_then(|s| self.entries[s as usize].as_ref())
    }

    /// True when an input with simplicity key `key` showing `labels` would improve the table:
    /// some label is new, or `key` is simpler than that label's best.
    #[must_use]
    pub fn improves(&self, key: &[u8], labels: &[Label]) -> bool {
        labels.iter().any(|&label| match self.best(label) {
            None => true,
            Some(entry) => is_simpler(key, &entry.key),
        })
    }

    /// True when an input with simplicity key `key` showing `labels` reaches an edge no input
    /// has reached at any hit count, or is simpler than the best input of a label it shows.
    /// New hit counts of known edges and new comparison labels do not count: the bar for
    /// inputs that show many of those cheaply and cost much to keep and run (havoc's long runs,
    /// whose loops and byte tests count up into new buckets on every longer run).
    #[must_use]
    pub fn improves_by_new_edge_or_simpler(&self, key: &[u8], labels: &[Label]) -> bool {
        labels.iter().any(|&label| match self.best(label) {
            Some(entry) => is_simpler(key, &entry.key),
            None => label
                .as_edge()
                .is_some_and(|(edge, _)| !self.has_edge(edge)),
        })
    }

    /// True when some input reached `edge`, at any hit count.
    fn has_edge(&self, edge: usize) -> bool {
        (0..8).any(|bucket| self.best(Label::edge(edge, 1 << bucket)).is_some())
    }

    /// Records an input stored at `corpus_id` with simplicity key `key` showing `labels`.
    ///
    /// The input becomes the best of every label it improves; inputs left holding no label are
    /// reported as evicted (and queued in [`LabelTable::take_pending_evictions`]). An input that
    /// improves nothing is not stored. An input whose key a live entry already has (the same
    /// bytes, run again with labels it did not show before) adds its labels to that entry, and
    /// `corpus_id` is evicted: one input, one entry.
    pub fn record(&mut self, key: &[u8], corpus_id: Id, labels: &[Label]) -> Recorded<Id> {
        let improved: Vec<Label> = labels
            .iter()
            .copied()
            .filter(|&l| match self.best(l) {
                None => true,
                Some(entry) => is_simpler(key, &entry.key),
            })
            .collect();
        let mut result = Recorded::default();
        if improved.is_empty() {
            return result;
        }
        // The same input as a live entry, showing labels that entry was not recorded with (an
        // input's labels can grow: comparison progress switched on mid-run, a target that is not
        // deterministic): the labels go to that entry, so that no input is kept twice, and the
        // new copy is evicted at once.
        let slot = match self.slot_with_key(key) {
            Some(slot) => {
                result.evicted.push(corpus_id);
                slot
            }
            None => self.allocate(Entry {
                key: key.to_vec(),
                corpus_id,
                holds: 0,
            }),
        };
        for &label in &improved {
            match self.slot_of(label) {
                None => self.present.push(label),
                Some(old) => {
                    let entry = self.entries[old as usize]
                        .as_mut()
                        .expect("a label points at a live entry");
                    entry.holds -= 1;
                    if entry.holds == 0 {
                        let gone = self.release(old);
                        result.evicted.push(gone.corpus_id);
                    }
                }
            }
            self.set_slot(label, slot);
            self.entries[slot as usize]
                .as_mut()
                .expect("just allocated")
                .holds += 1;
        }
        self.pending_evictions.extend(&result.evicted);
        result.improved = improved;
        result
    }

    /// The live entry whose key is `key`, if any (a scan: records are rare next to executions).
    fn slot_with_key(&self, key: &[u8]) -> Option<u32> {
        let slot = self
            .entries
            .iter()
            .position(|e| e.as_ref().is_some_and(|e| e.key == key))?;
        u32::try_from(slot).ok()
    }

    fn allocate(&mut self, entry: Entry<Id>) -> u32 {
        self.bytes += entry.key.len();
        match self.free.pop() {
            Some(slot) => {
                self.entries[slot as usize] = Some(entry);
                slot
            }
            None => {
                self.entries.push(Some(entry));
                u32::try_from(self.entries.len() - 1).expect("fewer than 2^32 entries")
            }
        }
    }

    fn release(&mut self, slot: u32) -> Entry<Id> {
        let entry = self.entries[slot as usize]
            .take()
            .expect("released slot was live");
        self.bytes -= entry.key.len();
        self.free.push(slot);
        entry
    }

    /// Ids evicted since the last call (the engine's scheduler removes them from the corpus
    /// when no stage is using them).
    pub fn take_pending_evictions(&mut self) -> Vec<Id> {
        std::mem::take(&mut self.pending_evictions)
    }

    /// Every label that has a best input.
    #[must_use]
    pub fn labels(&self) -> &[Label] {
        &self.present
    }

    /// The number of labels held.
    #[must_use]
    pub fn label_count(&self) -> usize {
        self.present.len()
    }

    /// The number of distinct edges among the labels.
    #[must_use]
    pub fn edge_count(&self) -> usize {
        let mut edges: Vec<usize> = self
            .present
            .iter()
            .filter_map(|l| l.as_edge().map(|(e, _)| e))
            .collect();
        edges.sort_unstable();
        edges.dedup();
        edges.len()
    }

    /// Live entries (the corpus).
    pub fn entries(&self) -> impl Iterator<Item = &Entry<Id>> {
        self.entries.iter().flatten()
    }

    /// The number of live entries.
    #[must_use]
    pub fn entry_count(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// Total bytes of the live entries.
    #[must_use]
    pub fn total_bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> usize {
        n
    }

    #[test]
    fn new_labels_are_improvements() {
        let mut table = LabelTable::new();
        let labels = [Label::edge(3, 1), Label::crash("panic", "x")];
        assert!(table.improves(b"abc", &labels));
        let rec = table.record(b"abc", id(0), &labels);
        assert_eq!(rec.improved, labels.to_vec());
        assert!(rec.evicted.is_empty());
        assert_eq!(table.best(labels[0]).unwrap().key, b"abc");
        assert_eq!(table.best(labels[1]).unwrap().corpus_id, id(0));
        assert!(!table.improves(b"abc", &labels));
        assert!(!table.improves(b"abd", &labels));
        assert_eq!(table.label_count(), 2);
    }

    #[test]
    fn only_new_edges_and_simpler_bests_pass_the_new_edge_bar() {
        let mut table = LabelTable::new();
        let (once, twice) = (Label::edge(4, 1), Label::edge(4, 2));
        let compared = Label::comparison_equal_count(9, 3);
        table.record(b"ab", id(0), &[once]);
        assert!(table.improves(b"abcdef", &[twice, compared]));
        assert!(
            !table.improves_by_new_edge_or_simpler(b"abcdef", &[twice, compared]),
            "another bucket of a known edge and a new comparison label"
        );
        assert!(table.improves_by_new_edge_or_simpler(b"abcdef", &[Label::edge(5, 1)]));
        assert!(table.improves_by_new_edge_or_simpler(b"aa", &[once, twice]));
        assert!(!table.improves_by_new_edge_or_simpler(b"ab", &[once]));
    }

    #[test]
    fn simpler_input_replaces_and_evicts_the_old_best() {
        let mut table = LabelTable::new();
        let a = Label::edge(1, 1);
        table.record(b"long", id(0), &[a]);
        assert!(table.improves(b"xyz", &[a]));
        let rec = table.record(b"xyz", id(1), &[a]);
        assert_eq!(rec.improved, vec![a]);
        assert_eq!(rec.evicted, vec![id(0)]);
        assert_eq!(table.take_pending_evictions(), vec![id(0)]);
        assert!(table.take_pending_evictions().is_empty());
        assert_eq!(table.entry_count(), 1);
        assert_eq!(table.total_bytes(), 3);
    }

    #[test]
    fn the_same_input_showing_new_labels_joins_its_entry() {
        let mut table = LabelTable::new();
        let (edge, comparison) = (Label::edge(1, 1), Label::comparison_equal_count(7, 1));
        table.record(b"ab", id(0), &[edge]);
        // The same bytes again, now with a comparison label (progress switched on mid-run).
        let rec = table.record(b"ab", id(1), &[edge, comparison]);
        assert_eq!(rec.improved, vec![comparison]);
        assert_eq!(rec.evicted, vec![id(1)], "the copy is evicted at once");
        assert_eq!(table.best(comparison).unwrap().corpus_id, id(0));
        assert_eq!(table.best(edge).unwrap().corpus_id, id(0));
        assert_eq!(table.entry_count(), 1);
        assert_eq!(table.total_bytes(), 2);
    }

    #[test]
    fn an_input_stays_while_it_holds_any_label() {
        let mut table = LabelTable::new();
        let (a, b) = (Label::edge(1, 1), Label::edge(2, 1));
        table.record(b"big", id(0), &[a, b]);
        let rec = table.record(b"s", id(1), &[a]);
        assert!(rec.evicted.is_empty(), "id 0 still holds b");
        assert_eq!(table.best(b).unwrap().corpus_id, id(0));
        let rec = table.record(b"t", id(2), &[b]);
        assert_eq!(rec.evicted, vec![id(0)]);
        assert_eq!(table.entry_count(), 2);
        assert_eq!(table.labels(), &[a, b]);
    }

    #[test]
    fn equal_length_keeps_the_lexicographically_smaller() {
        let mut table = LabelTable::new();
        let a = Label::edge(9, 4);
        table.record(b"b", id(0), &[a]);
        assert!(!table.improves(b"c", &[a]));
        assert!(table.improves(b"a", &[a]));
        table.record(b"a", id(1), &[a]);
        assert_eq!(table.best(a).unwrap().key, b"a");
    }

    #[test]
    fn non_improving_input_is_not_stored() {
        let mut table = LabelTable::new();
        let a = Label::edge(0, 1);
        table.record(b"", id(0), &[a]);
        let rec = table.record(b"zz", id(1), &[a]);
        assert_eq!(rec, Recorded::default());
        assert_eq!(table.entry_count(), 1);
    }

    #[test]
    fn slots_are_reused_after_eviction() {
        let mut table = LabelTable::new();
        let a = Label::edge(0, 1);
        for (n, key) in [&b"cccc"[..], b"ccc", b"cc", b"c"].iter().enumerate() {
            table.record(key, id(n), &[a]);
        }
        assert_eq!(table.entry_count(), 1);
        assert_eq!(table.entries.len(), 2, "freed slots are reused");
        assert_eq!(table.edge_count(), 1);
    }
}
