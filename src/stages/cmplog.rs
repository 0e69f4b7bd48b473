//! The CmpLog stage: input-to-state mutants from the operands of the comparisons a traced run
//! logged, and the bounded cache of those operands.

use libafl::corpus::{CorpusId, HasCurrentCorpusId};
use libafl::executors::ExitKind;
use libafl::inputs::BytesInput;
use libafl::mutators::Mutator;
use libafl::observers::{CmpValuesMetadata, Observer};
use libafl::stages::Stage;
use libafl::{Error, Evaluator, ExecutesInput, HasMetadata};

use super::{load_current_into, HavocStage};
use crate::consider::{FuzzState, ObservedExecutor};
use crate::learned_tokens::LearnedTokens;

/// The most comparison operands kept per corpus entry. A parser such as SQLite's logs tens of
/// thousands of comparisons per run, mostly the same ones again; kept whole they cost over a
/// megabyte per entry, gigabytes for a corpus.
pub const MAX_TRACED_OPERANDS: usize = 256;

/// The distinct entries of `logged`, without comparisons whose two sides are equal already
/// (replacing one by the other changes nothing); when more than `cap` remain, `cap` of them spread
/// evenly over the run, so that the comparisons of late parsing stages are kept too. Each kept
/// comparison is followed by its narrower shape, if any ([`narrower_shapes`]).
#[must_use]
pub fn distinct_operands(
    logged: Vec<libafl::observers::CmpValues>,
    cap: usize,
) -> Vec<libafl::observers::CmpValues> {
    let kept = distinct(logged);
    let kept = if kept.len() <= cap {
        kept
    } else {
        let step = kept.len() as f64 / cap as f64;
        (0..cap)
            .map(|i| kept[(i as f64 * step) as usize].clone())
            .collect()
    };
    distinct(kept.into_iter().flat_map(narrower_shapes).collect())
}

/// `value`, and for a 64-bit comparison whose two sides fit 32 bits, the same comparison at 32
/// bits. C code compares 32-bit checksums and lengths in `unsigned long` or `size_t`: the operand
/// then has 4 bytes in the input, not 8, and only the narrower shape is found there (zlib's
/// Adler-32 check is a 64-bit comparison of a byte-swapped 32-bit value). A 16-bit shape of
/// 32-bit comparisons was tried too and left out: on lcms and libpng it cost branches (600 s,
/// seed 1: lcms 1981 with it, 2064 without).
#[must_use]
pub fn narrower_shapes(value: libafl::observers::CmpValues) -> Vec<libafl::observers::CmpValues> {
    use libafl::observers::CmpValues;
    let narrower = match value {
        CmpValues::U64((a, b, c)) => u32::try_from(a)
            .ok()
            .zip(u32::try_from(b).ok())
            .map(|(a, b)| CmpValues::U32((a, b, c))),
        _ => None,
    };
    std::iter::once(value).chain(narrower).collect()
}

/// The distinct entries of `logged` with unequal sides, in order.
fn distinct(logged: Vec<libafl::observers::CmpValues>) -> Vec<libafl::observers::CmpValues> {
    use libafl::observers::CmpValues;
    use libafl_bolts::ToSlice;
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for value in logged {
        // (width, sides, is_const, bytes), and whether the two sides are equal already.
        let (key, same_sides): ((u8, u64, u64, bool, Vec<u8>), bool) = match &value {
            CmpValues::U8((a, b, c)) => ((1, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U16((a, b, c)) => ((2, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U32((a, b, c)) => ((4, (*a).into(), (*b).into(), *c, Vec::new()), a == b),
            CmpValues::U64((a, b, c)) => ((8, *a, *b, *c, Vec::new()), a == b),
            CmpValues::Bytes((a, b)) => {
                let (a, b) = (a.to_slice(), b.to_slice());
                let both = [a, b].concat();
                ((0, a.len() as u64, b.len() as u64, false, both), *a == *b)
            }
        };
        if !same_sides && seen.insert(key) {
            kept.push(value);
        }
    }
    kept
}

/// The memory the traced operands of recently scheduled corpus entries may take, in bytes. A
/// count of entries was not enough: with up to 512 operands of 72 bytes an entry (a SQL
/// parser has that many), two thousand entries take up to 72 MiB, and a grammar run's process
/// grew toward that over its first hour as more and more of its corpus was scheduled once.
pub const TRACED_BYTES: usize = 16 << 20;

/// The traced comparison operands of the most recently scheduled corpus entries, newest last,
/// within [`TRACED_BYTES`]. A linear search over the ids per scheduled input costs nothing next
/// to the executions the stage runs.
#[derive(Debug, Default)]
struct TracedCache {
    entries: std::collections::VecDeque<(CorpusId, Vec<libafl::observers::CmpValues>)>,
    bytes: usize,
}

/// What one entry's operands take in the cache.
fn traced_bytes(list: &[libafl::observers::CmpValues]) -> usize {
    std::mem::size_of_val(list) + std::mem::size_of::<(CorpusId, Vec<u8>)>()
}

impl TracedCache {
    fn take(&mut self, id: CorpusId) -> Option<Vec<libafl::observers::CmpValues>> {
        let position = self.entries.iter().position(|(entry, _)| *entry == id)?;
        let (_, list) = self.entries.remove(position)?;
        self.bytes -= traced_bytes(&list);
        Some(list)
    }

    fn put(&mut self, id: CorpusId, mut list: Vec<libafl::observers::CmpValues>) {
        list.shrink_to_fit();
        self.bytes += traced_bytes(&list);
        self.entries.push_back((id, list));
        while self.bytes > TRACED_BYTES {
            let Some((_, oldest)) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= traced_bytes(&oldest);
        }
    }
}

/// Input-to-state replacement (LibAFL's CmpLog): runs the scheduled input once with comparison
/// logging on, then tries mutants that write the logged operands of its comparisons into the
/// input ([`libafl::mutators::I2SRandReplace`]), stopping at the first improvement. This is how
/// magic numbers, multi-byte keywords and the wide compares LLVM merges byte checks into are
/// passed: expansions add one byte at a time and see no edge until the whole value matches.
pub struct CmpLogStage<M> {
    observer: libafl_targets::CmpLogObserver,
    mutants: HavocStage<M>,
    traced: BytesInput,
    cache: TracedCache,
    /// Traced runs since the map's pages were last given back.
    traces_since_release: u32,
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
    /// (0 turns the stage off, tracing included).
    #[must_use]
    pub fn new(mutants: HavocStage<M>) -> Self {
        CmpLogStage {
            // The operands are read by `traced_operands`, not by LibAFL's full-map scan.
            observer: libafl_targets::CmpLogObserver::new("cmplog", false),
            mutants,
            traced: BytesInput::new(Vec::new()),
            cache: TracedCache::default(),
            traces_since_release: 0,
        }
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
        let list = match known {
            Some(list) => list,
            None => {
                load_current_into(state, self.traced.as_mut())?;
                self.observer.pre_exec(state, &self.traced)?;
                let exit_kind = fuzzer.execute_input(state, executor, manager, &self.traced)?;
                self.observer.post_exec(state, &self.traced, &exit_kind)?;
                let list = if exit_kind == ExitKind::Ok {
                    let operands = traced_operands();
                    learn_tokens(state, &operands, self.traced.as_ref());
                    distinct_operands(operands, MAX_TRACED_OPERANDS)
                } else {
                    Vec::new()
                };
                self.traces_since_release += 1;
                if self.traces_since_release >= TRACES_BETWEEN_RELEASES {
                    release_traced_map();
                    self.traces_since_release = 0;
                }
                list
            }
        };
        let list = if list.is_empty() {
            list
        } else {
            state.metadata_or_insert_with(CmpValuesMetadata::new).list = list;
            self.mutants.perform(fuzzer, executor, state, manager)?;
            std::mem::take(&mut state.metadata_mut::<CmpValuesMetadata>()?.list)
        };
        self.cache.put(id, list);
        Ok(())
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

#[cfg(test)]
mod tests {
    use libafl::observers::CmpValues;

    use super::*;
    use crate::learned_tokens::logged_bytes as bytes;

    #[test]
    fn traced_operands_are_distinct_useful_and_capped() {
        let logged = vec![
            CmpValues::U32((7, 9, false)),
            CmpValues::U32((7, 9, true)),
            CmpValues::U64((7, 9, false)),
            CmpValues::U8((5, 5, false)),
            CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            CmpValues::Bytes((bytes(b"same"), bytes(b"same"))),
        ];
        let kept = distinct_operands(logged.clone(), 10);
        assert_eq!(
            kept,
            vec![
                CmpValues::U32((7, 9, false)),
                CmpValues::U32((7, 9, true)),
                CmpValues::U64((7, 9, false)),
                CmpValues::Bytes((bytes(b"SELECT"), bytes(b"SELEC"))),
            ],
            "the same comparison once (the U64's 32-bit shape is the U32); equal sides never"
        );
        assert_eq!(distinct_operands(logged, 2).len(), 2);
        let many: Vec<CmpValues> = (0..10_000u32)
            .map(|i| CmpValues::U32((i << 16, (i + 1) << 16, false)))
            .collect();
        let kept = distinct_operands(many, MAX_TRACED_OPERANDS);
        assert_eq!(kept.len(), MAX_TRACED_OPERANDS);
        // Spread over the whole run, not only its first comparisons.
        assert!(matches!(kept.last(), Some(CmpValues::U32((a, _, _))) if *a > 9_000 << 16));
    }

    #[test]
    fn a_wide_comparison_of_narrow_values_is_also_tried_narrow() {
        // zlib's Adler-32 check: a byte-swapped 32-bit value compared in 64 bits.
        let shapes = narrower_shapes(CmpValues::U64((0x0102_0304, 0x0a0b_0c0d, false)));
        assert_eq!(
            shapes,
            [
                CmpValues::U64((0x0102_0304, 0x0a0b_0c0d, false)),
                CmpValues::U32((0x0102_0304, 0x0a0b_0c0d, false)),
            ]
        );
        assert_eq!(narrower_shapes(CmpValues::U64((1 << 40, 2, true))).len(), 1);
        assert_eq!(narrower_shapes(CmpValues::U32((80, 443, true))).len(), 1);
        // The 32-bit shape is what input-to-state replacement finds in the input: the four
        // checksum bytes, stored big-endian (read as a little-endian word and swapped by zlib),
        // are fixed in one mutation.
        let input = BytesInput::new(vec![0x78, 0x01, 0x01, 0x02, 0x03, 0x04]);
        let mut state = libafl::state::NopState::<BytesInput>::new();
        state.metadata_map_mut().insert(CmpValuesMetadata {
            list: vec![shapes[1].clone()],
        });
        let mut replace = libafl::mutators::I2SRandReplace;
        let mut fixed = false;
        for _ in 0..64 {
            let mut mutant = input.clone();
            if replace.mutate(&mut state, &mut mutant).unwrap()
                == libafl::mutators::MutationResult::Mutated
            {
                fixed |= mutant.as_ref()[..] == [0x78, 0x01, 0x0a, 0x0b, 0x0c, 0x0d];
            }
        }
        assert!(fixed);
    }

    #[test]
    fn traced_operands_come_from_the_sites_that_were_hit() {
        use libafl::observers::CmpMap;
        use libafl_targets::{CMPLOG_ENABLED, CMPLOG_MAP, CMPLOG_MAP_W};
        // SAFETY: this test alone uses the CmpLog map; the logging calls are LibAFL's own.
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
        // SAFETY: this test alone uses the CmpLog map; the callbacks are labelfuzz's own.
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

    #[test]
    fn the_traced_cache_keeps_the_most_recent_entries_within_its_memory() {
        let mut cache = TracedCache::default();
        let list = || vec![CmpValues::U8((1, 2, false)); MAX_TRACED_OPERANDS];
        let fit = TRACED_BYTES / traced_bytes(&list());
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
