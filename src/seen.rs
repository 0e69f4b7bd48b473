//! The "already run" filter of a fuzzing process: `labelfuzz-core`'s [`SeenFilter`] in memory
//! shared across the restarts of a supervisor's fuzzing processes, preloaded with the inputs
//! that ended earlier processes, and put in front of LibAFL's evaluation as its input filter.

use std::collections::BTreeSet;

use labelfuzz_core::seen::{words_for, SeenFilter, DEFAULT_MEMORY};
use libafl::fuzzer::InputFilter;
use libafl::inputs::HasTargetBytes;
use libafl::Error;
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};

pub use labelfuzz_core::seen::input_hash;

/// The shared filter memory of this process tree, once mapped.
static SHARED: std::sync::Mutex<Option<SharedWords>> = std::sync::Mutex::new(None);

/// A shared anonymous mapping, handed out once per process.
struct SharedWords {
    words: *mut u64,
    len: usize,
    taken_by: u32,
}

// SAFETY: the pointer is to a mapping that lives for the whole process; who may use it is
// decided under the mutex (one filter per process).
unsafe impl Send for SharedWords {}

/// Maps the filter's memory shared with the processes this one forks from now on (call it in a
/// supervisor, before it starts fuzzing processes). A fuzzing process that a crash ended leaves
/// what it ran in that memory: the next one does not run it all again, and the filter's pages
/// are not faulted in, zeroed and freed once per restart.
///
/// # Errors
/// When the memory cannot be mapped; fuzzing processes then use their own.
pub fn share_across_restarts() -> std::io::Result<()> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if shared.is_some() {
        return Ok(());
    }
    let len = words_for(DEFAULT_MEMORY);
    // SAFETY: a fresh anonymous mapping, never unmapped; zero-filled by the kernel.
    let pointer = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len * 8,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if pointer == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    *shared = Some(SharedWords {
        words: pointer.cast(),
        len,
        taken_by: 0,
    });
    Ok(())
}

/// The shared words, for the first filter of a process that inherited them.
fn take_shared() -> Option<&'static mut [u64]> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let region = shared.as_mut()?;
    let me = std::process::id();
    if region.taken_by == me {
        return None;
    }
    region.taken_by = me;
    // SAFETY: the mapping lives as long as the process, and each process takes it once, so
    // this is its only reference in this process; the supervisor that mapped it never
    // touches it, and it runs one fuzzing process at a time.
    Some(unsafe { std::slice::from_raw_parts_mut(region.words, region.len) })
}

/// The filter of a fuzzing process, with every input of `killed` pinned: in the memory its
/// supervisor shares with every process it restarts when [`share_across_restarts`] ran there
/// (what the previous processes ran is then remembered), otherwise the default size of its own.
#[must_use]
pub fn filter_for_fuzzing_process(killed: &KilledInputs) -> RunFilter {
    let mut seen = match take_shared() {
        Some(words) => SeenFilter::in_shared_words(words),
        None => SeenFilter::default(),
    };
    for hash in killed.hashes() {
        seen.pin(hash);
    }
    RunFilter(seen)
}

/// LibAFL's input filter over the seen filter: an input already run is not run again.
#[derive(Debug)]
pub struct RunFilter(pub SeenFilter);

impl<EM, I: HasTargetBytes, S> InputFilter<EM, I, S> for RunFilter {
    fn should_execute(
        &mut self,
        input: &I,
        _state: &mut S,
        _manager: &mut EM,
    ) -> Result<bool, Error> {
        Ok(!self.0.check_and_insert(&input.target_bytes()))
    }
}

/// Inputs that ended the process (a signal or a timeout), by [`input_hash`].
///
/// The filter itself is too large to carry across a restart, and without this an input that
/// kills the process would be proposed and run again after every restart, forever. This set is
/// state metadata (restored after a restart) and is loaded into the new process's filter.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KilledInputs {
    hashes: BTreeSet<u64>,
}

impl_serdeany!(KilledInputs);

impl KilledInputs {
    /// Remembers an input that ended the process.
    pub fn insert(&mut self, hash: u64) {
        self.hashes.insert(hash);
    }

    /// True when the input with this hash ended a process.
    #[must_use]
    pub fn contains(&self, hash: u64) -> bool {
        self.hashes.contains(&hash)
    }

    /// The remembered hashes.
    pub fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.hashes.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn killed_inputs_preload_a_new_filter() {
        let mut killed = KilledInputs::default();
        killed.insert(input_hash(b"A!"));
        let mut seen = filter_for_fuzzing_process(&killed).0;
        assert!(
            seen.check_and_insert(b"A!"),
            "a killing input is never run again"
        );
        assert!(!seen.check_and_insert(b"A?"));
    }

    #[test]
    fn a_shared_filter_remembers_what_an_ended_process_ran() {
        let _children = crate::TEST_CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        share_across_restarts().unwrap();
        // SAFETY: a plain fork in a test; the child only uses its filter and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let mut seen = filter_for_fuzzing_process(&KilledInputs::default()).0;
            let fresh = !seen.check_and_insert(b"run by the first process");
            // Ends like a crashed fuzzing process: no destructor, no unwinding.
            unsafe { libc::_exit(if fresh { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(child, &raw mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        let mut seen = filter_for_fuzzing_process(&KilledInputs::default()).0;
        assert_eq!(seen.memory(), DEFAULT_MEMORY);
        assert!(seen.check_and_insert(b"run by the first process"));
        assert!(!seen.check_and_insert(b"never run"));
        assert!(
            !filter_for_fuzzing_process(&KilledInputs::default())
                .0
                .is_shared(),
            "one shared filter per process"
        );
    }
}
