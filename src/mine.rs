//! `FUZZER mine`: mines a grammar from the parser of a mining build (`LABELFUZZ_MINE=1`).
//!
//! Every input runs in a forked child (a crash or hang costs the child only) under the runtime's
//! recorder (`mine_trace.c`): which function invocation read each input byte last, and who
//! called whom. The child sends the record back through a pipe when the target accepted the
//! input: it returned without rejecting it (libFuzzer's `-1`), did not crash or time out, and
//! did not enter the function named with `--error`. `labelfuzz_grammar::mine` turns the
//! records into a grammar, asking the same question of every generalisation.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::fd::FromRawFd as _;
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::grammar::Grammar;
use labelfuzz_grammar::mine::{self as mining, Invocation, Trace};

/// One invocation as the runtime records it.
#[repr(C)]
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
struct RawNode {
    pc: usize,
    /// Where it was called from.
    site: usize,
    parent: u32,
}

/// What a child sends back about an input the target accepted.
#[derive(serde::Serialize, serde::Deserialize)]
struct Record {
    nodes: Vec<RawNode>,
    /// The node that read each input byte last (`NO_NODE`: none).
    owners: Vec<u32>,
    /// More invocations happened than the runtime had room for (the deepest are missing).
    overflowed: bool,
}

extern "C" {
    fn labelfuzz_mine_begin(
        data: *const u8,
        len: usize,
        owners: *mut u32,
        nodes: *mut RawNode,
        capacity: usize,
    );
    fn labelfuzz_mine_end(overflowed: *mut u8) -> usize;
    fn labelfuzz_mine_watch(start: usize, end: usize);
    fn labelfuzz_mine_take_error() -> u8;
}

/// Invocations recorded per execution at most.
const NODE_CAPACITY: usize = 1 << 20;
const NO_NODE: u32 = u32::MAX;
/// Marks an owner given by a one-byte read (`mine_trace.c`), not part of the node's index.
const READ_ALONE: u32 = 1 << 31;

/// `FUZZER mine [OPTIONS] [INPUTS]...`
#[derive(Debug, Parser)]
#[command(
    name = "FUZZER mine",
    about = "Mine a grammar from the target's parser (run a mining build: LABELFUZZ_MINE=1)"
)]
pub struct MineOptions {
    /// Inputs to mine from: a fuzzer's output directory (its corpus/), directories of sample
    /// files, or files.
    #[arg(value_name = "INPUT", default_value = "out")]
    pub inputs: Vec<PathBuf>,

    /// Where to write the grammar (default: OUT/mined.json for an output directory, which
    /// `--grammar mined` reads, else mined.json).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// A function the parser enters only for invalid input (its error path): inputs that
    /// enter it count as rejected.
    #[arg(long, value_name = "FUNCTION")]
    pub error: Option<String>,

    /// Seconds an input may run before it counts as rejected.
    #[arg(long, value_name = "SECS", default_value_t = 1)]
    pub timeout: u32,

    /// Inputs longer than this are left out.
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    pub max_len: usize,

    /// Inputs mined at most: from more, this many spread evenly over them from shortest to
    /// longest (mining runs the target for every merge it checks, and a long run's corpus has
    /// thousands of inputs that mostly repeat each other's structure).
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub max_inputs: usize,

    /// Sentences generated from the mined grammar to measure its precision (0: none).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub precision: usize,

    /// Print only the totals, not every rule with its support.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the target on inputs in forked children and symbolizes what they record.
struct Recorder<'t> {
    target: &'t mut dyn FnMut(&[u8]),
    timeout: u32,
    base: usize,
    names: HashMap<usize, String>,
    /// Records cut short for lack of room.
    overflows: usize,
    /// Target runs so far, and when the last progress line was printed.
    runs: usize,
    said: std::time::Instant,
}

/// How often a mining run says how far it got.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl Recorder<'_> {
    /// The trace of `input` if the target accepts it.
    fn run(&mut self, input: &[u8]) -> Option<Trace> {
        self.runs += 1;
        if self.said.elapsed() >= PROGRESS_EVERY {
            self.said = std::time::Instant::now();
            eprintln!(
                "labelfuzz: mining: {} target runs so far ({} bytes in this one)",
                self.runs,
                input.len()
            );
        }
        let bytes = self.run_forked(input)?;
        let record: Record = postcard::from_bytes(&bytes).ok()?;
        self.overflows += usize::from(record.overflowed);
        let invocations = record
            .nodes
            .iter()
            .map(|node| Invocation {
                function: mining::sites::at_site(
                    &self.name(node.pc),
                    node.site.wrapping_sub(self.base),
                ),
                parent: (node.parent != NO_NODE).then_some(node.parent as usize),
            })
            .collect();
        let owners = record
            .owners
            .into_iter()
            .map(|owner| (owner != NO_NODE).then_some((owner & !READ_ALONE) as usize))
            .collect();
        let trace = Trace {
            input: input.to_vec(),
            invocations,
            owners,
        };
        Some(
            trace
                .without(|name| {
                    crate::signals::is_standard_library_function(mining::sites::function_of(name))
                })
                .with_unread_bytes_to_the_reader_before(),
        )
    }

    fn name(&mut self, pc: usize) -> String {
        let base = self.base;
        self.names
            .entry(pc)
            .or_insert_with(|| {
                crate::symbols::functions()
                    .function_at(pc.wrapping_sub(base))
                    .map_or_else(|| format!("fn_{pc:x}"), |f| f.name.to_owned())
            })
            .clone()
    }

    /// The child's record, if it accepted the input.
    fn run_forked(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) into a two-element array.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: the child only runs the target and writes to the pipe, then _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: in the child; closes our copy of the read end.
            unsafe { libc::close(fds[0]) };
            child(&mut *self.target, input, fds[1], self.timeout);
        }
        // SAFETY: the parent's copy of the write end is not needed.
        unsafe { libc::close(fds[1]) };
        if pid < 0 {
            // SAFETY: closes the read end we own.
            unsafe { libc::close(fds[0]) };
            return None;
        }
        // SAFETY: fds[0] is the read end we own; the File closes it.
        let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut bytes = Vec::new();
        let read = reader.read_to_end(&mut bytes);
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &raw mut status, 0) };
        let accepted = read.is_ok() && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        accepted.then_some(bytes)
    }
}

/// The forked child: records one run of the target and writes the record to `pipe`; exits 0
/// when the target accepted the input, 1 otherwise.
fn child(target: &mut dyn FnMut(&[u8]), input: &[u8], pipe: i32, timeout: u32) -> ! {
    // SAFETY: plain libc calls in the child: silence the target's output, bound its time.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::dup2(null, 2);
        }
        libc::alarm(timeout.max(1));
    }
    let data = input.to_vec();
    let mut owners = vec![NO_NODE; data.len()];
    // Uninitialised: pages the recording never reaches are never touched.
    let mut nodes: Vec<RawNode> = Vec::with_capacity(NODE_CAPACITY);
    let _ = crate::reject::take_rejected();
    // SAFETY: the buffers outlive the recording, which ends below.
    unsafe {
        labelfuzz_mine_begin(
            data.as_ptr(),
            data.len(),
            owners.as_mut_ptr(),
            nodes.as_mut_ptr(),
            nodes.capacity(),
        );
    }
    let returned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&data))).is_ok();
    let mut overflowed = 0u8;
    // SAFETY: ends the recording begun above.
    let count = unsafe { labelfuzz_mine_end(&raw mut overflowed) };
    // SAFETY: the runtime wrote the first `count` nodes (never more than the capacity).
    unsafe { nodes.set_len(count.min(nodes.capacity())) };
    // SAFETY: reads the runtime's flag.
    let erred = unsafe { labelfuzz_mine_take_error() } != 0;
    let accepted = returned && !crate::reject::take_rejected() && !erred;
    if accepted {
        let record = Record {
            nodes,
            owners,
            overflowed: overflowed != 0,
        };
        let out = postcard::to_allocvec(&record).unwrap_or_default();
        let mut written = 0;
        while written < out.len() {
            // SAFETY: writes from a live buffer to the pipe's write end.
            let n =
                unsafe { libc::write(pipe, out[written..].as_ptr().cast(), out.len() - written) };
            if n <= 0 {
                break;
            }
            written += n as usize;
        }
    }
    // SAFETY: ends the child without running the parent's exit handlers.
    unsafe { libc::_exit(i32::from(!accepted)) }
}

/// The inputs to mine from: an output directory's corpus, a directory's input files, or a
/// file (longer than `max_len`: left out, with a warning).
fn read_all(paths: &[PathBuf], max_len: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut inputs = Vec::new();
    for path in paths {
        if path.is_file() {
            inputs.push(
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
            );
            continue;
        }
        let corpus = path.join("corpus");
        let dir = if corpus.is_dir() { &corpus } else { path };
        inputs.extend(crate::output::read_inputs(dir, max_len).map_err(|e| e.to_string())?);
    }
    Ok(inputs)
}

/// Where the grammar goes by default: into the output directory mined, else the current one.
fn default_output(inputs: &[PathBuf]) -> PathBuf {
    match inputs.first() {
        Some(dir) if dir.join("corpus").is_dir() => mined_grammar_path(dir),
        _ => PathBuf::from("mined.json"),
    }
}

/// The grammar `--grammar mined` means for a run writing to `output_dir`.
#[must_use]
pub fn mined_grammar_path(output_dir: &Path) -> PathBuf {
    output_dir.join("mined.json")
}

/// `FUZZER mine ARGS`: returns the exit status (0 mined, 2 error).
pub fn command(args: &[std::ffi::OsString], target: &mut dyn FnMut(&[u8])) -> i32 {
    let mut argv = vec![std::ffi::OsString::from("mine")];
    argv.extend_from_slice(args);
    let options = match MineOptions::try_parse_from(argv) {
        Ok(options) => options,
        Err(e) => e.exit(),
    };
    match mine(&options, target) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("labelfuzz: error: {message}");
            2
        }
    }
}

fn mine(options: &MineOptions, target: &mut dyn FnMut(&[u8])) -> Result<(), String> {
    let base = crate::symbols::executable_base();
    if let Some(function) = &options.error {
        let (start, end) = crate::symbols::functions()
            .range_of(function)
            .ok_or_else(|| format!("--error: no function `{function}` in this executable"))?;
        // SAFETY: sets the runtime's watched range.
        unsafe { labelfuzz_mine_watch(base + start, base + end) };
    }
    let mut recorder = Recorder {
        target,
        timeout: options.timeout,
        base,
        names: HashMap::new(),
        overflows: 0,
        runs: 0,
        said: std::time::Instant::now(),
    };
    let all = read_all(&options.inputs, options.max_len)?;
    let inputs = spread_sample(all.clone(), options.max_inputs);
    if inputs.len() < all.len() {
        println!(
            "mining from {} of {} inputs, from shortest to longest (--max-inputs)",
            inputs.len(),
            all.len()
        );
    }
    let traces: Vec<Trace> = inputs
        .iter()
        .filter_map(|input| recorder.run(input))
        .collect();
    if traces.iter().all(|trace| trace.invocations.is_empty()) {
        return Err(format!(
            "none of {} inputs was accepted with a recorded parse (is this a mining build? \
             build it with LABELFUZZ_MINE=1)",
            inputs.len()
        ));
    }
    println!("mining from {} of {} inputs", traces.len(), inputs.len());
    let mut accepts = |input: &[u8]| recorder.run(input);
    let mined = mining::mine(&traces, &mut accepts).map_err(|e| e.to_string())?;
    let output = options
        .output
        .clone()
        .unwrap_or_else(|| default_output(&options.inputs));
    write_atomically(&output, mined.json.as_bytes())?;
    if !options.quiet {
        print_support(&mined.support);
    }
    println!("checks: {} target runs", mined.checks);
    if recorder.overflows > 0 {
        println!(
            "note: {} runs made more than {NODE_CAPACITY} calls; their deepest calls are left out",
            recorder.overflows
        );
    }
    if options.precision > 0 {
        let accepted = precision(&mined.grammar, options.precision, &mut recorder);
        println!(
            "precision: {accepted} of {} generated sentences accepted ({:.1}%)",
            options.precision,
            100.0 * accepted as f64 / options.precision as f64
        );
    }
    println!("grammar: {}", output.display());
    Ok(())
}

/// At most `most` of `inputs`: all of them when they are few enough, else that many spread
/// evenly over them in shortlex order, the shortest and the longest included.
fn spread_sample(mut inputs: Vec<Vec<u8>>, most: usize) -> Vec<Vec<u8>> {
    if inputs.len() <= most {
        return inputs;
    }
    inputs.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
    if most <= 1 {
        inputs.truncate(most);
        return inputs;
    }
    let last = inputs.len() - 1;
    (0..most)
        .map(|i| inputs[i * last / (most - 1)].clone())
        .collect()
}

/// Each rule with the parse-tree nodes it matched and the target runs that checked it.
fn print_support(support: &[mining::RuleSupport]) {
    println!("{:>7} {:>7}  rule", "nodes", "checks");
    for rule in support {
        println!(
            "{:>7} {:>7}  {} -> {}",
            rule.nodes, rule.checks, rule.nonterminal, rule.alternative
        );
    }
}

/// How many of `count` sentences generated from `grammar` the target accepts.
fn precision(grammar: &Grammar, count: usize, recorder: &mut Recorder<'_>) -> usize {
    mining::sentences(grammar, count, 1, 12)
        .iter()
        .filter(|sentence| recorder.run_forked(sentence).is_some())
        .count()
}

/// Writes `bytes` to `path` through a temporary file and a rename: never a partial grammar.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temporary = path.with_extension("json.partial");
    std::fs::write(&temporary, bytes)
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::spread_sample;

    #[test]
    fn a_sample_spreads_from_the_shortest_input_to_the_longest() {
        let inputs: Vec<Vec<u8>> = (0..10u8)
            .rev()
            .map(|n| vec![b'a'; usize::from(n)])
            .collect();
        let sample = spread_sample(inputs.clone(), 4);
        let lengths: Vec<usize> = sample.iter().map(Vec::len).collect();
        assert_eq!(lengths, [0, 3, 6, 9]);
        assert_eq!(
            spread_sample(inputs.clone(), 10).len(),
            10,
            "few enough: all"
        );
        assert_eq!(spread_sample(inputs, 1), [Vec::<u8>::new()]);
    }
}
