//! A fuzzing process killed outright — SIGKILL from a user or a script, the kernel's
//! out-of-memory killer — saves no state, and LibAFL's supervisor refuses to start another
//! ("Storing state in crashed fuzzer instance did not work") and aborts: one kill would end a
//! one-process run, or a core of a multi-core run, for good.
//!
//! So each fuzzing process, once it has taken over its state, leaves a fresh-start record in
//! the supervisor's state page (no state, with the manager's own restart information, as
//! LibAFL's out-of-memory-safe LLMP mode does on every event). A crash or timeout overwrites it
//! with the whole state, as before; a kill leaves it, and the supervisor starts a process that
//! finds no state: it starts again from what the output directory holds (corpus, reproducers),
//! as a resumed run does. A count of the processes each supervisor started, in memory it
//! shares with them, tells that start from the run's first one.

use libafl::events::{LlmpRestartingEventManager, SimpleRestartingEventManager};
use libafl::inputs::BytesInput;
use libafl::monitors::stats::ClientStats;
use libafl::monitors::NopMonitor;
use libafl::Error;
use libafl_bolts::shmem::{StdShMem, StdShMemProvider};

use crate::engine::State;

/// How many fuzzing processes a supervisor may start again after kills before the run stops:
/// a process killed on every start (a target that exhausts memory at once) would otherwise
/// restart for ever.
pub(crate) const MOST_KILLED_STARTS: u64 = 100;

pub(crate) use crate::process::{share_start_count, this_start, Start};

/// An event manager whose supervisor can be left a fresh-start record.
pub(crate) trait LeaveFreshStart {
    /// Leaves the record (see the module's documentation).
    ///
    /// # Errors
    /// LibAFL's, when the state page cannot be written.
    fn leave_fresh_start(&mut self) -> Result<(), Error>;
}

impl LeaveFreshStart
    for SimpleRestartingEventManager<BytesInput, NopMonitor, State, StdShMemProvider>
{
    fn leave_fresh_start(&mut self) -> Result<(), Error> {
        // The simple manager's restart information is its monitor's start time and client
        // figures; labelfuzz keeps its own (`summary.json`), so a fresh monitor's will do. (An
        // empty map is written the same whichever map type holds it.)
        let monitor_state = (
            libafl_bolts::current_time(),
            std::collections::HashMap::<libafl_bolts::ClientId, ClientStats>::new(),
        );
        self.staterestorer.reset();
        self.staterestorer.save(&(None::<State>, monitor_state))
    }
}

impl LeaveFreshStart
    for LlmpRestartingEventManager<(), BytesInput, State, StdShMem, StdShMemProvider>
{
    fn leave_fresh_start(&mut self) -> Result<(), Error> {
        // The client's LLMP connection, so that the next process takes it over.
        let description = self.inner.describe()?;
        self.staterestorer.reset();
        self.staterestorer.save(&(None::<State>, description))
    }
}
