//! The CmpLog stage: input-to-state mutants from the operands of the comparisons a traced run
//! logged (what is kept of them: [`super::operands`]).

use libafl::corpus::HasCurrentCorpusId;
use libafl::executors::ExitKind;
use libafl::inputs::BytesInput;
use libafl::mutators::Mutator;
use libafl::observers::{CmpValuesMetadata, Observer};
use libafl::stages::Stage;
use libafl::{Error, Evaluator, ExecutesInput, HasMetadata};
use libafl_bolts::tuples::Handle;

use super::colorize::Colorizer;
use super::operands::{distinct_operands, KeptOperands, MAX_TRACED_OPERANDS};
use super::traced::{Traced, TracedCache};
use super::varint::EncodedOperandsMetadata;
use super::{load_current_into, HavocStage};
use crate::consider::{FuzzState, ObservedExecutor};
use crate::feedback::EdgesObserver;
use crate::gates::{passed_gates, Gate, Gates};
use crate::learned_tokens::LearnedTokens;

/// Input-to-state replacement (LibAFL's CmpLog): runs the scheduled input once with comparison
/// logging on (colorized first, [`super::colorize`], unless that is off), then tries mutants
/// that write the logged operands of its comparisons into the input
/// ([`super::InputToStateReplace`]), stopping at the first improvement. This is how
/// magic numbers, multi-byte keywords and the wide compares LLVM merges byte checks into are
/// passed: expansions add one byte at a time and see no edge until the whole value matches.
pub struct CmpLogStage<M> {
    observer: libafl_targets::CmpLogObserver,
    mutants: HavocStage<M>,
    traced: BytesInput,
    cache: TracedCache,
    /// Traced runs since the map's pages were last given back.
    traces_since_release: u32,
    /// Whether comparisons of transformed input values are tried too
    /// ([`super::operands::distinct_operands`]).
    transforms: bool,
    /// Colorizes each entry before its traced run (None: traces the entry as it is).
    colorizer: Option<Colorizer>,
    /// Whether each traced entry's gates are recorded for repairing its mutants
    /// ([`super::gates`]).
    find_gates: bool,
    /// The gates of the last traced input, when `find_gates`.
    last_gates: Vec<Gate>,
}

/// Traced runs between two releases of the CmpLog map's pages. Every row a traced run touched
/// stays resident until then (the map is LibAFL's static, 50 MiB; a grammar-mode client kept
/// 39 MiB of it after an hour). Given back after every traced run, the pages are faulted and
/// zeroed again by the next: 12 % of a JSON fuzzer's time went to the kernel. Every 256th run
/// bounds the map to the rows of 256 traces at a 256th of that cost.
const TRACES_BETWEEN_RELEASES: u32 = 256;

impl<M> std::fmt::Debug for CmpLogStage<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmpLogStage")
            .field("iterations", &self.mutants.iterations)
            .finish_non_exhaustive()
    }
}

impl<M> CmpLogStage<M> {
    /// Traces each scheduled input, then tries up to `mutants.iterations` replacement mutants
    /// (0 turns the stage off, tracing included); with `transforms`, also for comparisons of
    /// scaled or offset input values.
    #[must_use]
    pub fn new(mutants: HavocStage<M>, transforms: bool) -> Self {
        CmpLogStage {
            // The operands are read by `traced_operands`, not by LibAFL's full-map scan.
            observer: libafl_targets::CmpLogObserver::new("cmplog", false),
            mutants,
            traced: BytesInput::new(Vec::new()),
            cache: TracedCache::default(),
            traces_since_release: 0,
            transforms,
            colorizer: None,
            find_gates: false,
            last_gates: Vec::new(),
        }
    }

    /// Records the gates each traced entry passes, for the havoc stage to repair its mutants
    /// with ([`super::gates`]).
    #[must_use]
    pub fn with_gates(mut self, find_gates: bool) -> Self {
        self.find_gates = find_gates;
        self
    }

    /// Colorizes each entry before its traced run, reading paths from the observer `edges`
    /// (`None`: traces entries as they are).
    #[must_use]
    pub fn with_colorization(mut self, edges: Option<Handle<EdgesObserver>>) -> Self {
        self.colorizer = edges.map(Colorizer::new);
        self
    }
}

impl<E, EM, M, S, Z> Stage<E, EM, S, Z> for CmpLogStage<M>
where
    E: ObservedExecutor,
    M: Mutator<BytesInput, S>,
    S: FuzzState + HasCurrentCorpusId,
    Z: Evaluator<E, EM, BytesInput, S> + ExecutesInput<E, EM, BytesInput, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        if self.mutants.iterations == 0 || state.stop_requested() {
            return Ok(());
        }
        // Tracing resets a 34 MB comparison map: do it once per corpus entry and keep the
        // operands of recent entries. They move (not copy) into the state for the mutants, and
        // back.
        let id = state
            .current_corpus_id()?
            .ok_or_else(|| Error::empty("no corpus entry is scheduled"))?;
        let known = self.cache.take(id);
        let traced = match known {
            Some(traced) => traced,
            None => {
                load_current_into(state, self.traced.as_mut())?;
                if let Some(colorizer) = &mut self.colorizer {
                    let colored = colorizer.colorize(
                        fuzzer,
                        executor,
                        state,
                        manager,
                        self.traced.as_ref(),
                    )?;
                    *self.traced.as_mut() = colored;
                }
                let list = self.trace(fuzzer, executor, state, manager)?;
                if !self.last_gates.is_empty() {
                    let gates = Gates(std::mem::take(&mut self.last_gates));
                    state.current_testcase_mut()?.add_metadata(gates);
                }
                Traced {
                    // Without colorization the mutants start from the entry itself: no copy.
                    base: if self.colorizer.is_some() {
                        self.traced.as_ref().to_vec()
                    } else {
                        Vec::new()
                    },
                    operands: list,
                }
            }
        };
        let traced = if traced.operands.plain.is_empty() && traced.operands.encoded.is_empty() {
            traced
        } else {
            state.metadata_or_insert_with(CmpValuesMetadata::new).list = traced.operands.plain;
            state
                .metadata_or_insert_with(EncodedOperandsMetadata::default)
                .list = traced.operands.encoded;
            if traced.base.is_empty() {
                self.mutants.perform(fuzzer, executor, state, manager)?;
            } else {
                self.mutants
                    .perform_colored(&traced.base, fuzzer, executor, state, manager)?;
            }
            Traced {
                base: traced.base,
                operands: KeptOperands {
                    plain: std::mem::take(&mut state.metadata_mut::<CmpValuesMetadata>()?.list),
                    encoded: std::mem::take(
                        &mut state.metadata_mut::<EncodedOperandsMetadata>()?.list,
                    ),
                },
            }
        };
        self.cache.put(id, traced);
        Ok(())
    }
}

impl<M> CmpLogStage<M> {
    /// Runs `self.traced` with comparison logging on and returns the operands worth trying
    /// (none when the run did not end normally); learns token-like operands on the way.
    fn trace<E, EM, S, Z>(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<KeptOperands, Error>
    where
        E: ObservedExecutor,
        S: FuzzState,
        Z: ExecutesInput<E, EM, BytesInput, S>,
    {
        self.observer.pre_exec(state, &self.traced)?;
        let exit_kind = fuzzer.execute_input(state, executor, manager, &self.traced)?;
        self.observer.post_exec(state, &self.traced, &exit_kind)?;
        self.last_gates.clear();
        let list = if exit_kind == ExitKind::Ok {
            if self.find_gates {
                self.last_gates =
                    passed_gates(&traced_sites(GATE_EXECUTIONS), self.traced.as_ref());
            }
            let operands = traced_operands();
            learn_tokens(state, &operands, self.traced.as_ref());
            distinct_operands(
                operands,
                self.traced.as_ref(),
                MAX_TRACED_OPERANDS,
                self.transforms,
            )
        } else {
            KeptOperands::default()
        };
        self.traces_since_release += 1;
        if self.traces_since_release >= TRACES_BETWEEN_RELEASES {
            release_traced_map();
            self.traces_since_release = 0;
        }
        Ok(list)
    }
}

/// Adds the token-like operands of a traced run of `input` to the run's learned tokens (while
/// there is room).
fn learn_tokens<S: HasMetadata>(
    state: &mut S,
    operands: &[libafl::observers::CmpValues],
    input: &[u8],
) {
    let learned = state.metadata_or_insert_with(LearnedTokens::default);
    if !learned.is_full() {
        learned.learn(crate::learned_tokens::candidates(operands, input));
    }
}

/// The comparison sites a traced run hit, over LibAFL's CmpLog map: LibAFL reads the operands
/// through this view, which lists only the sites with hits, found by scanning the map's headers
/// a word at a time. LibAFL's own reader visits all 65 536 sites through the map's accessors,
/// which costs more than a fast target's execution; after each restart a process traces again.
struct HitSites<'a> {
    map: &'a libafl_targets::CmpLogMap,
    hit: Vec<usize>,
}

impl<'a> HitSites<'a> {
    fn of(map: &'a libafl_targets::CmpLogMap) -> Self {
        // The map is `repr(C)` and starts with one 4-byte header a site (`hits: u16`, then
        // shape and kind): two headers a word, zero when the site was not hit since the reset.
        const HEADERS: usize = libafl_targets::CMPLOG_MAP_W;
        // SAFETY: the headers are the map's first HEADERS * 4 bytes, plain integers.
        let words = unsafe {
            std::slice::from_raw_parts(std::ptr::from_ref(map).cast::<u64>(), HEADERS / 2)
        };
        let mut hit = Vec::new();
        for (i, &word) in words.iter().enumerate() {
            if word & 0xffff != 0 {
                hit.push(2 * i);
            }
            if (word >> 32) & 0xffff != 0 {
                hit.push(2 * i + 1);
            }
        }
        HitSites { map, hit }
    }
}

impl std::fmt::Debug for HitSites<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HitSites").field("hit", &self.hit).finish()
    }
}

impl libafl::observers::CmpMap for HitSites<'_> {
    fn len(&self) -> usize {
        self.hit.len()
    }

    fn executions_for(&self, idx: usize) -> usize {
        self.map.executions_for(self.hit[idx])
    }

    fn usable_executions_for(&self, idx: usize) -> usize {
        self.map.usable_executions_for(self.hit[idx])
    }

    fn values_of(&self, idx: usize, execution: usize) -> Option<libafl::observers::CmpValues> {
        self.map.values_of(self.hit[idx], execution)
    }

    fn reset(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// Gives the pages of LibAFL's CmpLog map back to the kernel once a traced run was read. The
/// map is 50 MiB of zeroed static memory of which each traced run touches the rows of the sites
/// it hit; without this every row any entry ever hit stays resident, and a process's memory
/// grows with the comparison sites its corpus reaches (the static memory holding the map was
/// 39 MiB of a 137 MiB process after half an hour of SQLite's SQL grammar). Nothing reads the map between traced runs, and each traced run
/// starts from reset headers, so the zeroes the kernel maps back in change nothing.
fn release_traced_map() {
    // Only the address and size of the static are taken; nothing writes the map now.
    let map = std::ptr::addr_of_mut!(libafl_targets::CMPLOG_MAP);
    release_pages(map.cast(), std::mem::size_of::<libafl_targets::CmpLogMap>());
}

/// Drops the whole pages of zero-initialised private memory at `start..start + len`: the
/// kernel frees them and maps zeroes back on the next touch. The partial pages at the two ends
/// are kept (they may hold other data).
fn release_pages(start: *mut u8, len: usize) {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let first = (start as usize).next_multiple_of(page);
    let last = (start as usize + len) / page * page;
    if last > first {
        // SAFETY: the range lies inside the caller's region, whole pages only.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_DONTNEED,
            )
        };
    }
}

/// The operands of the comparisons the last traced run logged (LibAFL's filtering of loop
/// counters included).
fn traced_operands() -> Vec<libafl::observers::CmpValues> {
    // SAFETY: read after the traced run, while nothing writes the map.
    let map = unsafe { &*std::ptr::addr_of!(libafl_targets::CMPLOG_MAP) };
    let mut sites = HitSites::of(map);
    let mut metadata = CmpValuesMetadata::new();
    metadata.add_from(sites.hit.len(), &mut sites);
    metadata.list
}

/// The executions of a site read for gates: a checksum or a length is checked once or twice
/// a run, and a site logged more often is a loop's.
const GATE_EXECUTIONS: usize = 2;

/// The operands the last traced run logged, with their sites, at most `per_site` a site
/// (sites logged more often than that are left out).
fn traced_sites(per_site: usize) -> Vec<(usize, libafl::observers::CmpValues)> {
    use libafl::observers::CmpMap;
    // SAFETY: read after the traced run, while nothing writes the map.
    let map = unsafe { &*std::ptr::addr_of!(libafl_targets::CMPLOG_MAP) };
    let sites = HitSites::of(map);
    let mut logged = Vec::new();
    for (idx, &site) in sites.hit.iter().enumerate() {
        if sites.executions_for(idx) > per_site {
            continue;
        }
        for execution in 0..sites.usable_executions_for(idx) {
            if let Some(value) = sites.values_of(idx, execution) {
                logged.push((site, value));
            }
        }
    }
    logged
}

#[cfg(test)]
mod tests {
    use libafl::observers::CmpValues;

    use super::*;

    /// Held by each test that writes the process's one CmpLog map: run in parallel, one test's
    /// reset wiped the other's logged operands.
    static CMPLOG_MAP_USER: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn traced_operands_come_from_the_sites_that_were_hit() {
        use libafl::observers::CmpMap;
        use libafl_targets::{CMPLOG_ENABLED, CMPLOG_MAP, CMPLOG_MAP_W};
        let _map = CMPLOG_MAP_USER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // SAFETY: this test alone uses the CmpLog map while it holds the lock; the logging
        // calls are LibAFL's own.
        unsafe {
            (*std::ptr::addr_of_mut!(CMPLOG_MAP)).reset().unwrap();
            CMPLOG_ENABLED = 1;
            libafl_targets::__libafl_targets_cmplog_instructions(5, 4, 7, 9);
            libafl_targets::__libafl_targets_cmplog_instructions(CMPLOG_MAP_W - 1, 8, 1 << 40, 3);
            libafl_targets::__libafl_targets_cmplog_instructions(CMPLOG_MAP_W - 1, 8, 1 << 41, 3);
            CMPLOG_ENABLED = 0;
        }
        assert_eq!(
            traced_operands(),
            vec![
                CmpValues::U32((7, 9, false)),
                CmpValues::U64((1 << 40, 3, false)),
                CmpValues::U64((1 << 41, 3, false)),
            ]
        );
    }

    #[test]
    fn the_comparison_callbacks_log_operands_only_while_tracing() {
        use libafl::observers::CmpMap;
        use libafl_targets::{CMPLOG_ENABLED, CMPLOG_MAP};
        extern "C" {
            fn __sanitizer_cov_trace_const_cmp4(a: u32, b: u32);
            fn __sanitizer_cov_trace_cmp2(a: u16, b: u16);
        }
        let _map = CMPLOG_MAP_USER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // SAFETY: this test alone uses the CmpLog map while it holds the lock; the callbacks are
        // labelfuzz's own.
        unsafe {
            (*std::ptr::addr_of_mut!(CMPLOG_MAP)).reset().unwrap();
            __sanitizer_cov_trace_const_cmp4(0xdead_beef, 1);
            CMPLOG_ENABLED = 1;
            __sanitizer_cov_trace_const_cmp4(0x1234_5678, 2);
            __sanitizer_cov_trace_cmp2(7, 9);
            CMPLOG_ENABLED = 0;
            __sanitizer_cov_trace_cmp2(11, 12);
        }
        let mut logged = traced_operands();
        logged.sort_by_key(|v| format!("{v:?}"));
        assert_eq!(
            logged,
            vec![
                CmpValues::U16((7, 9, false)),
                CmpValues::U32((0x1234_5678, 2, true)),
            ],
            "the constant side is marked, and nothing is logged outside a traced run"
        );
    }

    #[test]
    fn released_pages_leave_memory_and_read_as_zeroes() {
        const PAGES: usize = 64;
        let page = 4096;
        // SAFETY: a private anonymous mapping of this test's own, unmapped at the end.
        let region = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGES * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(region, libc::MAP_FAILED);
        let bytes = region.cast::<u8>();
        let resident = || {
            let mut vec = [0u8; PAGES];
            // SAFETY: mincore over the mapping, one byte a page.
            assert_eq!(
                unsafe { libc::mincore(region, PAGES * page, vec.as_mut_ptr()) },
                0
            );
            vec.iter().filter(|&&b| b & 1 == 1).count()
        };
        // SAFETY: inside the mapping.
        unsafe { std::ptr::write_bytes(bytes, 0xab, PAGES * page) };
        assert_eq!(resident(), PAGES);
        // From the middle of the first page to the middle of the last: the two partial pages
        // are kept, the 62 whole ones go.
        // SAFETY: inside the mapping.
        release_pages(unsafe { bytes.add(page / 2) }, (PAGES - 1) * page);
        assert_eq!(resident(), 2);
        // SAFETY: inside the mapping.
        unsafe {
            assert_eq!(
                *bytes.add(page / 2),
                0xab,
                "the partial first page keeps its data"
            );
            assert_eq!(*bytes.add(page * 10), 0, "a released page reads as zeroes");
            assert_eq!(libc::munmap(region, PAGES * page), 0);
        }
    }
}
