//! The bounded cache of what the CmpLog stage kept of recently scheduled entries' traced runs.

use libafl::corpus::CorpusId;

use super::operands::KeptOperands;
use super::varint::EncodedOperand;

/// The memory the traced operands of recently scheduled corpus entries may take, in bytes. A
/// count of entries was not enough: with up to 512 operands of 72 bytes an entry (a SQL
/// parser has that many), two thousand entries take up to 72 MiB, and a grammar run's process
/// grew toward that over its first hour as more and more of its corpus was scheduled once.
pub const TRACED_BYTES: usize = 16 << 20;

/// What the CmpLog stage keeps of one corpus entry's traced run: the colorized copy of the entry
/// it traced, which its mutants start from (empty without colorization: they start from the
/// entry itself), and the comparison operands kept for it.
#[derive(Debug, Default)]
pub(crate) struct Traced {
    /// The colorized copy that was traced (empty: the entry itself).
    pub(crate) base: Vec<u8>,
    /// Its operands, as [`super::distinct_operands`] keeps them.
    pub(crate) operands: KeptOperands,
}

impl Traced {
    /// What it takes in the cache.
    fn bytes(&self) -> usize {
        let encoded: usize = self
            .operands
            .encoded
            .iter()
            .map(|operand| {
                std::mem::size_of::<EncodedOperand>() + operand.seen.len() + operand.wanted.len()
            })
            .sum();
        std::mem::size_of_val(&self.operands.plain[..])
            + encoded
            + self.base.len()
            + std::mem::size_of::<(CorpusId, Traced)>()
    }
}

/// The traced runs of the most recently scheduled corpus entries, newest last, within
/// [`TRACED_BYTES`]. A linear search over the ids per scheduled input costs nothing next to the
/// executions the stage runs.
#[derive(Debug, Default)]
pub(crate) struct TracedCache {
    entries: std::collections::VecDeque<(CorpusId, Traced)>,
    bytes: usize,
}

impl TracedCache {
    /// The traced run kept for `id`, taken out of the cache (the caller puts it back, newest).
    pub(crate) fn take(&mut self, id: CorpusId) -> Option<Traced> {
        let position = self.entries.iter().position(|(entry, _)| *entry == id)?;
        let (_, traced) = self.entries.remove(position)?;
        self.bytes -= traced.bytes();
        Some(traced)
    }

    /// Keeps `traced` as `id`'s, dropping the oldest entries beyond [`TRACED_BYTES`].
    pub(crate) fn put(&mut self, id: CorpusId, mut traced: Traced) {
        traced.operands.plain.shrink_to_fit();
        traced.operands.encoded.shrink_to_fit();
        traced.base.shrink_to_fit();
        self.bytes += traced.bytes();
        self.entries.push_back((id, traced));
        while self.bytes > TRACED_BYTES {
            let Some((_, oldest)) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= oldest.bytes();
        }
    }
}

#[cfg(test)]
mod tests {
    use libafl::observers::CmpValues;

    use super::*;
    use crate::stages::operands::MAX_TRACED_OPERANDS;

    #[test]
    fn the_traced_cache_keeps_the_most_recent_entries_within_its_memory() {
        let mut cache = TracedCache::default();
        let list = || Traced {
            base: vec![0; 64],
            operands: KeptOperands {
                plain: vec![CmpValues::U8((1, 2, false)); MAX_TRACED_OPERANDS],
                encoded: Vec::new(),
            },
        };
        let fit = TRACED_BYTES / list().bytes();
        for i in 0..3 * fit {
            cache.put(CorpusId(i), list());
            // The first entry is scheduled again and again: it stays.
            let first = cache.take(CorpusId(0)).expect("the first entry is kept");
            cache.put(CorpusId(0), first);
        }
        assert_eq!(cache.entries.len(), fit);
        assert!(cache.bytes <= TRACED_BYTES);
        assert!(cache.take(CorpusId(1)).is_none(), "old entries leave");
        assert!(cache.take(CorpusId(3 * fit - 1)).is_some());
    }
}
