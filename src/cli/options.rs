//! The fuzzer's flags, each defined once with its help text: clap's parser, `--help` and the
//! README's copy of it all come from this struct.

use std::path::PathBuf;

use clap::Parser;

/// labelfuzz: keeps the simplest input for every label and shrinks every crash to its minimum.
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(
    version,
    about,
    after_help = "Subcommands: `reduce [flags] FILE...` runs the files, shrinks every crash \
                  they show to its minimum (in grammar mode with the grammar reducer), prints it \
                  and stops. `report [DIR]` writes DIR/report.html (default out), a \
                  self-contained page of the run's plots, crash labels and corpus.\n\
                  Every libFuzzer flag is accepted in its -name=value form; the ones that have a \
                  meaning here are named in [libFuzzer: ...] above, the others are ignored with \
                  a warning.\n\
                  Exit status: 0 when no crash was found, 1 when one was, 2 on a usage or I/O \
                  error."
)]
pub struct Options {
    /// Directories of seed inputs (optional: the run starts from the empty input). Given only
    /// files, as libFuzzer does, the fuzzer runs each once and reports (as with --replay).
    #[arg(value_name = "CORPUS_DIR")]
    pub corpus: Vec<PathBuf>,

    /// Output directory: corpus/, crashes/ and summary.json go here (default `out`). Without
    /// it, as with libFuzzer, new corpus inputs are also added to the first corpus directory
    /// and reproducers copied to the current directory.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Stop after this many seconds (a crash's unfinished shrink may add about 10 s).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_time: Option<u64>,

    /// Stop after this many executions (a crash's unfinished shrink may add about 10 s).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: Option<u64>,

    /// Random seed (default: from the clock).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Per-execution timeout in milliseconds; a slower execution is a `timeout` crash label.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,

    /// Longest input to try, in bytes.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = positive_usize)]
    pub max_len: usize,

    /// LibAFL havoc mutants tried per scheduled input, after its expansions (0: expand/shrink
    /// only).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub havoc: usize,

    /// Input-to-state mutants per scheduled input (LibAFL's CmpLog): one run logs the operands
    /// of the target's comparisons, then mutants write them into the input (0: off).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub cmplog: usize,

    /// Input-to-state through arithmetic and encodings (1: on, 0: off): a comparison neither of
    /// whose values is in the input is also tried as a scaled or offset input value (`v·m ± k`,
    /// m up to 8, k up to 8), as a format's length field stored in 4-byte units or minus one,
    /// and as a variable-length integer (LEB128 or VLQ: xz's sizes, protobuf, WebAssembly).
    #[arg(long, value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub cmplog_transforms: u8,

    /// Colorization for input-to-state (1: on, 0: off): before an entry's traced run, its bytes
    /// that can change without changing its path are made random, so that the bytes a
    /// comparison read occur once and a mutant writes the other operand there (at most 256
    /// executions an entry, once). Off by default, as chosen by the ablation bench
    /// (docs/benchmark.md).
    #[arg(long, value_name = "0|1", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub cmplog_colorize: u8,

    /// Checksum and length repair (1: on, 0: off): an entry's traced run marks the fields the
    /// program recomputes and compares (a checksum, a length: equal 4- or 8-byte values, one
    /// of them written once in the input); each havoc or input-to-state mutant of that entry
    /// runs with those comparisons watched, and one that failed a check runs again with the
    /// value the program computed written in, so that what lies past the check sees the
    /// mutant's content; so do the shrink candidates of what such a mutant found, so that it
    /// shrinks as far as an input without a checksum.
    #[arg(long, value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub cmplog_repair: u8,

    /// Executions each crash label's pattern may cost: after its reproducer is shrunk, parts of
    /// it are regenerated at random to find which can be anything (`B ? \xff`,
    /// `((<expr>))`); written to `crashes/<file>.pattern` and `summary.json` (0: off).
    #[arg(long, value_name = "N", default_value_t = crate::pattern::Settings::DEFAULT.budget)]
    pub pattern_budget: usize,

    /// Make only inputs of printable ASCII and whitespace.
    #[arg(long)]
    pub only_ascii: bool,

    /// Silence the target: 1 closes its stdout, 2 its stderr, 3 both; the fuzzer's own lines
    /// still reach stderr.
    #[arg(long, value_name = "MASK", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub close_fd_mask: u8,

    /// Comparisons are labels too, per operand bits matched:
    /// magic values are approached a bit at a time, at some cost in speed.
    #[arg(long)]
    pub use_value_profile: bool,

    /// Comparison progress as labels (0: off, 1: on, 2: on once the run's edges stall): per
    /// comparison site, how many times its operands came out equal and how close they came, so
    /// a counter nearing its constant or a check satisfied once more is kept like a new edge.
    /// 2 by default: on from the start, it was ahead where edges had run dry and behind where
    /// they still came (the ablation bench, docs/benchmark.md). A stall is marked in the output
    /// directory (`edges-stalled`), so a resumed run keeps comparison progress on.
    #[arg(long, value_name = "0|1|2", default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub cmp_progress: u8,

    /// Regular runs among the expansions (1: on, 0: off): after the random run, a run of one
    /// repeated byte and the input twice over, the long regular data that compressors and
    /// table readers need. Off by default, as chosen by the ablation bench (docs/benchmark.md).
    #[arg(long, value_name = "0|1", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub regular_runs: u8,

    /// Long runs in havoc (0: off, 1: on, 2: on once the run's edges stall): a mutation that
    /// inserts 17 to 4096 copies of one byte, or writes them over the input, where LibAFL's own
    /// change at most 16 bytes; the long regular fields of compressed blocks and sized tables,
    /// as AFL++'s havoc makes them (after its first ten minutes). 2 by default, as chosen by the
    /// ablation bench (docs/benchmark.md): from the stall, ahead on zlib and lz4 and level
    /// elsewhere; from the start, slow long inputs cost xz a sixth of its branches.
    #[arg(long, value_name = "0|1|2", default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub long_runs: u8,

    /// Charge slow inputs for their time (1: on, 0: off): a label whose best input runs slower
    /// per execution than the run's average is fuzzed only in proportion, so that each input
    /// gets a like share of the time rather than of the picks (AFL++'s performance score).
    #[arg(long, value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub charge_exec_time: u8,

    /// End each coverage shrink after 2 s, or 1/50 of the run's time so far if longer, when its
    /// executions are slow (10 times the run's mean or more), keeping what it reached (1: on,
    /// 0: off): on a target with slow inputs (lcms), one input's shrink can otherwise hold a
    /// ten-minute run for minutes. On by default, as chosen by the ablation bench
    /// (docs/benchmark.md).
    #[arg(long, value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub shrink_budget: u8,

    /// Progress lines in libFuzzer's format (`#N NEW cov: … ft: … corp: …`), for tools that
    /// parse them: cov is edges, ft is labels.
    #[arg(long)]
    pub libfuzzer_progress: bool,

    /// Crash reports and exit statuses in libFuzzer's shape, for CI tools that read them
    /// (`==PID== ERROR: libFuzzer: …`, a sanitizer-style stack, `SUMMARY:`, `Test unit written
    /// to`, `Base64:`; 77 for a crash, 70 for a timeout, 71 for out of memory). On whenever any
    /// flag is given in libFuzzer's `-name=value` form.
    #[arg(long)]
    pub libfuzzer_report: bool,

    /// Exit status for a crash in libFuzzer-shaped reporting.
    #[arg(long, value_name = "N", default_value_t = 77)]
    pub error_exitcode: i32,

    /// Exit status for a timeout in libFuzzer-shaped reporting.
    #[arg(long, value_name = "N", default_value_t = 70)]
    pub timeout_exitcode: i32,

    /// Memory limit in MiB: an execution that grows the process's resident memory past it is an
    /// `oom` crash (0: no limit).
    #[arg(long, value_name = "MB", default_value_t = 2048)]
    pub rss_limit_mb: usize,

    /// Grammar mode: inputs are choice sequences (one choice per byte) that this JSON grammar
    /// renders into what the target sees; reproducers get a `.rendered` file beside them.
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,

    /// With --grammar: rewrite the grammar so that it never produces an input matching this
    /// crash pattern (a `crashes/*.pattern` file, or an output directory for all of its
    /// patterns): a long run stops re-finding known bugs. Repeatable.
    #[arg(long, value_name = "PATTERN", requires = "grammar")]
    pub avoid: Vec<PathBuf>,

    /// With --grammar: rewrite the grammar so that every input it produces matches this crash
    /// pattern (a `crashes/*.pattern` file): a regression generator for one bug.
    #[arg(
        long,
        value_name = "PATTERN_FILE",
        requires = "grammar",
        conflicts_with = "avoid"
    )]
    pub only: Option<PathBuf>,

    /// A dictionary in the libFuzzer/AFL format (`name="token"` lines; AFL's `-x`): havoc
    /// mutants insert its tokens and overwrite bytes with them.
    #[arg(short = 'x', long, value_name = "FILE")]
    pub dict: Vec<PathBuf>,

    /// The automatic dictionary (1: on, 0: off): the tokens `labelfuzz-cc` or `cargo
    /// labelfuzz` took from the string literals of the code they instrumented (keywords,
    /// names, the SQL a library runs on itself) join havoc's token mutations, as AFL++'s LTO
    /// mode does with its autodictionary (not in grammar mode).
    #[arg(long, value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub auto_dict: u8,

    /// Also write every crash reproducer to `<PREFIX><file name>` (a directory must end in `/`
    /// and exist).
    #[arg(long, value_name = "PREFIX")]
    pub artifact_prefix: Option<String>,

    /// Also write every crash reproducer to this one file.
    #[arg(long, value_name = "FILE")]
    pub exact_artifact_path: Option<PathBuf>,

    /// At the end, print libFuzzer's `stat::` lines.
    #[arg(long)]
    pub print_final_stats: bool,

    /// With `reduce` and --grammar: the input files are sentences (text the target sees), parsed
    /// with the grammar into choice sequences before reducing.
    #[arg(long, requires = "grammar")]
    pub parse: bool,

    /// In grammar mode, the depth below which only the cheapest rules are chosen.
    #[arg(long, value_name = "N", default_value_t = 12)]
    pub grammar_depth: usize,

    /// Run each input of the corpus directories once, report their labels and edges in
    /// summary.json, and stop (no shrinking, no fuzzing): measures an existing corpus.
    #[arg(long)]
    pub replay: bool,

    /// Run the inputs of every corpus directory once and add to the first one the simplest
    /// input of each label it does not hold yet (add-only).
    #[arg(long)]
    pub merge: bool,

    /// Add new corpus inputs to the first corpus directory even with -o (what libFuzzer does
    /// without it): a cargo-fuzz or OSS-Fuzz corpus directory keeps growing while labelfuzz's
    /// own state stays in -o.
    #[arg(long)]
    pub grow_corpus: bool,

    /// Fuzz on these cores, one client each (`0-3`, `0,2`, `all`), exchanging inputs through
    /// an LLMP broker (`-jobs=N` means `--cores 0-(N-1)`). Default: one process.
    #[arg(long, value_name = "LIST", value_parser = crate::config::parse_cores)]
    pub cores: Option<crate::config::CoreList>,

    /// TCP port of this run's broker (multi-core runs; default: a free port, so that two runs
    /// on one machine never share a broker).
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub broker_port: Option<u16>,

    /// Link this run's broker to the broker of a run on another machine (`HOST:PORT`, that
    /// run's `--broker-port`): label-improving inputs then travel between the two runs.
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::config::parse_remote_broker)]
    pub remote_broker: Option<crate::config::RemoteBroker>,

    /// Start afresh instead of resuming what the output directory holds: it is moved aside to
    /// `<DIR>.previous-<unix time>` first (nothing is deleted).
    #[arg(long)]
    pub fresh: bool,

    /// How the next label to fuzz is picked: `uniform` (every label alike, the seed's rule) or
    /// `rare` (labels shown by few corpus inputs, and labels whose expansions keep finding
    /// improvements, more often).
    #[arg(long, value_name = "NAME", default_value = "uniform", value_parser = parse_schedule)]
    pub schedule: labelfuzz_core::schedule::Schedule,

    /// Stop at the first crash (after shrinking it).
    #[arg(long)]
    pub stop_on_crash: bool,

    /// Set by the `reduce` subcommand (`fuzzer reduce [flags] FILE...`): run the files, shrink
    /// every crash they show to its minimum, print it and stop.
    #[arg(skip)]
    pub reduce: bool,

    /// No progress line on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Parses a `--schedule` name.
fn parse_schedule(text: &str) -> Result<labelfuzz_core::schedule::Schedule, String> {
    use labelfuzz_core::schedule::Schedule;
    match text {
        "uniform" => Ok(Schedule::Uniform),
        "rare" => Ok(Schedule::Rare),
        _ => Err(format!("`{text}` is not a schedule (uniform, rare)")),
    }
}

/// Parses a whole number of at least 1.
fn positive_usize(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
