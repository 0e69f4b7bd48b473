//! The run's best-per-label table: `labelfuzz-core`'s [`LabelTable`] over LibAFL's corpus ids,
//! kept in LibAFL's state so that it survives restarts.

use std::ops::{Deref, DerefMut};

use labelfuzz_core::table::LabelTable;
use libafl::corpus::CorpusId;
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};

/// The best-per-label table of a run, as state metadata. (A type of this crate, so that LibAFL's
/// metadata map can hold it.)
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CorpusTable(LabelTable<CorpusId>);

impl_serdeany!(CorpusTable);

impl Deref for CorpusTable {
    type Target = LabelTable<CorpusId>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for CorpusTable {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}
