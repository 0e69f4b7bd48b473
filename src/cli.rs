//! The fuzzer's command line, shared by every labelfuzz fuzzer binary (Rust or C).
//!
//! Flags are defined once, with their help text, in [`Options`]; libFuzzer spellings
//! (`-runs=N`, `-max_total_time=N`, ...) are translated to them by one table,
//! `LIBFUZZER_FLAGS`, so existing scripts keep working.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::config::{Config, Limits};

/// labelfuzz: keeps the simplest input for every label and shrinks every crash to its minimum.
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(
    version,
    about,
    after_help = "Subcommand: `reduce [flags] FILE...` runs the files, shrinks every crash they \
                  show to its minimum (in grammar mode with the grammar reducer), prints it and \
                  stops.\nlibFuzzer spellings are accepted too: -max_total_time=N -runs=N -seed=N \
                  -timeout=SECS -max_len=N.\nExit status: 0 when no crash was found, 1 when one \
                  was, 2 on a usage or I/O error."
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

    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_time: Option<u64>,

    /// Stop after this many executions.
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
    /// only). The default won on the benchmark: same bugs, more edges on structured input.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub havoc: usize,

    /// Input-to-state mutants per scheduled input (LibAFL's CmpLog): one run logs the operands
    /// of the target's comparisons, then mutants write them into the input (0: off).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub cmplog: usize,

    /// Memory limit in MiB: an execution that grows the process's resident memory past it is an
    /// `oom` crash (0: no limit).
    #[arg(long, value_name = "MB", default_value_t = 2048)]
    pub rss_limit_mb: usize,

    /// Grammar mode: inputs are choice sequences (one choice per byte) that this JSON grammar
    /// renders into what the target sees; reproducers get a `.rendered` file beside them.
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,

    /// A dictionary in the libFuzzer/AFL format (`name="token"` lines; libFuzzer's `-dict=`,
    /// AFL's `-x`): havoc mutants insert its tokens and overwrite bytes with them.
    #[arg(short = 'x', long, value_name = "FILE")]
    pub dict: Vec<PathBuf>,

    /// Also write every crash reproducer to `<PREFIX><file name>` (libFuzzer's
    /// `-artifact_prefix=`; a directory must end in `/` and exist).
    #[arg(long, value_name = "PREFIX")]
    pub artifact_prefix: Option<String>,

    /// Also write every crash reproducer to this one file (libFuzzer's `-exact_artifact_path=`).
    #[arg(long, value_name = "FILE")]
    pub exact_artifact_path: Option<PathBuf>,

    /// At the end, print libFuzzer's `stat::` lines (`-print_final_stats=1`).
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

    /// libFuzzer's `-merge=1`: run the inputs of every corpus directory once and add to the
    /// first one the simplest input of each label it does not hold yet (add-only).
    #[arg(long)]
    pub merge: bool,

    /// Fuzz on these cores, one client each (`0-3`, `0,2`, `all`), exchanging inputs through
    /// an LLMP broker; libFuzzer's `-jobs=N` means `--cores 0-(N-1)`. Default: one process.
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

/// Parses a whole number of at least 1.
fn positive_usize(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// How a libFuzzer flag's value maps onto ours.
#[derive(Clone, Copy, Debug)]
enum Scale {
    Same,
    SecondsToMillis,
    /// `-jobs=N`: N clients, on cores 0 to N-1.
    JobsToCores,
    /// `-name=1` turns our switch on, `-name=0` leaves it off.
    Switch,
}

/// libFuzzer flag name, our long flag, and how its value converts.
const LIBFUZZER_FLAGS: &[(&str, &str, Scale)] = &[
    ("max_total_time", "--max-time", Scale::Same),
    ("runs", "--runs", Scale::Same),
    ("seed", "--seed", Scale::Same),
    ("timeout", "--timeout", Scale::SecondsToMillis),
    ("max_len", "--max-len", Scale::Same),
    ("rss_limit_mb", "--rss-limit-mb", Scale::Same),
    ("dict", "--dict", Scale::Same),
    ("artifact_prefix", "--artifact-prefix", Scale::Same),
    ("exact_artifact_path", "--exact-artifact-path", Scale::Same),
    ("print_final_stats", "--print-final-stats", Scale::Switch),
    ("merge", "--merge", Scale::Switch),
    ("jobs", "--cores", Scale::JobsToCores),
    ("workers", "--cores", Scale::JobsToCores),
];

/// Every other flag of libFuzzer's `FuzzerFlags.def` (LLVM 19): accepted, warned about and
/// ignored, so that scripts written for libFuzzer run unchanged.
const LIBFUZZER_IGNORED_FLAGS: &[&str] = &[
    "verbosity",
    "len_control",
    "seed_inputs",
    "keep_seed",
    "cross_over",
    "cross_over_uniform_dist",
    "mutate_depth",
    "reduce_depth",
    "shuffle",
    "prefer_small",
    "error_exitcode",
    "timeout_exitcode",
    "fork",
    "fork_corpus_groups",
    "ignore_timeouts",
    "ignore_ooms",
    "ignore_crashes",
    "set_cover_merge",
    "stop_file",
    "merge_control_file",
    "cleanse_crash",
    "mutation_graph_file",
    "use_counters",
    "use_memmem",
    "use_value_profile",
    "use_cmp",
    "shrink",
    "reduce_inputs",
    "reload",
    "report_slow_units",
    "only_ascii",
    "print_pcs",
    "print_funcs",
    "print_corpus_stats",
    "print_coverage",
    "print_full_coverage",
    "dump_coverage",
    "handle_segv",
    "handle_bus",
    "handle_abrt",
    "handle_ill",
    "handle_fpe",
    "handle_int",
    "handle_term",
    "handle_xfsz",
    "handle_usr1",
    "handle_usr2",
    "handle_winexcept",
    "close_fd_mask",
    "detect_leaks",
    "purge_allocator_interval",
    "trace_malloc",
    "malloc_limit_mb",
    "exit_on_src_pos",
    "exit_on_item",
    "ignore_remaining_args",
    "focus_function",
    "entropic",
    "entropic_feature_frequency_threshold",
    "entropic_number_of_rarest_features",
    "entropic_scale_per_exec_time",
    "analyze_dict",
    "use_clang_coverage",
    "data_flow_trace",
    "collect_data_flow",
    "create_missing_dirs",
];

/// A day, in milliseconds: what `-timeout=0` (no timeout in libFuzzer) becomes.
const NO_TIMEOUT_MS: u64 = 24 * 3600 * 1000;

/// Arguments rewritten from libFuzzer's spelling, and warnings about flags ignored.
#[derive(Debug, Default)]
pub struct Translated {
    /// The arguments in our spelling.
    pub args: Vec<OsString>,
    /// One line for each flag accepted but not used.
    pub warnings: Vec<String>,
}

/// Rewrites libFuzzer-style `-name=value` arguments into our flags. As in libFuzzer, a repeated
/// flag's last value wins, `0` (or `-1` for `-runs`) means no limit, and flags with no meaning
/// here (or unknown to libFuzzer too) are ignored with a warning, never fatal.
pub fn translate_libfuzzer_flags(args: Vec<OsString>) -> Result<Translated, String> {
    let mut translated = Translated::default();
    // Our flag and value, by flag, in order of first appearance (a repeat replaces the value).
    let mut flags: Vec<(&str, Option<String>)> = Vec::new();
    for (i, arg) in args.into_iter().enumerate() {
        let text = arg.to_str().unwrap_or("");
        let is_libfuzzer =
            i > 0 && text.starts_with('-') && !text.starts_with("--") && text.contains('=');
        if !is_libfuzzer {
            translated.args.push(arg);
            continue;
        }
        let (name, value) = text[1..].split_once('=').expect("contains '='");
        if name == "help" {
            if value != "0" {
                translated.args.push("--help".into());
            }
            continue;
        }
        let Some(&(_, ours, scale)) = LIBFUZZER_FLAGS.iter().find(|(n, _, _)| *n == name) else {
            translated
                .warnings
                .push(if LIBFUZZER_IGNORED_FLAGS.contains(&name) {
                    format!("libFuzzer flag `-{name}` is not used by labelfuzz; ignored")
                } else {
                    format!(
                        "unrecognized flag `-{name}={value}`; ignored (run with --help for ours)"
                    )
                });
            continue;
        };
        let value = match (name, scale) {
            ("max_total_time" | "max_len" | "seed", _) if value == "0" => None,
            ("runs", _) if value == "-1" => None,
            ("timeout", _) if value == "0" => Some(NO_TIMEOUT_MS.to_string()),
            (_, Scale::Switch) if value == "0" => None,
            (_, Scale::Switch) => Some(String::new()),
            (_, Scale::Same) => Some(value.to_string()),
            (_, Scale::SecondsToMillis) => {
                let secs: u64 = value.parse().map_err(|_| {
                    format!("`-{name}={value}`: expected a whole number of seconds")
                })?;
                Some(secs.saturating_mul(1000).to_string())
            }
            (_, Scale::JobsToCores) => match value.parse::<usize>() {
                Ok(jobs) if jobs >= 1 => Some(format!("0-{}", jobs - 1)),
                _ => {
                    return Err(format!(
                        "`-{name}={value}`: expected a number of jobs, at least 1"
                    ))
                }
            },
        };
        match flags.iter_mut().find(|(flag, _)| *flag == ours) {
            Some(slot) => slot.1 = value,
            None => flags.push((ours, value)),
        }
    }
    for (flag, value) in flags {
        match value {
            // A switch: the flag alone.
            Some(value) if value.is_empty() => translated.args.push(flag.into()),
            Some(value) => {
                translated.args.push(flag.into());
                translated.args.push(value.into());
            }
            None => {}
        }
    }
    Ok(translated)
}

impl Options {
    /// Parses a full argument list (program name first), accepting libFuzzer spellings.
    pub fn parse_args(mut args: Vec<OsString>) -> Result<Self, clap::Error> {
        let mut reduce = args.get(1).is_some_and(|a| a == "reduce");
        if reduce {
            args.remove(1);
        }
        // libFuzzer's `-minimize_crash=1 CRASH` is our `reduce CRASH`.
        if let Some(at) = args.iter().position(|a| a == "-minimize_crash=1") {
            args.remove(at);
            reduce = true;
        }
        let translated = translate_libfuzzer_flags(args)
            .map_err(|msg| clap::Error::raw(clap::error::ErrorKind::UnknownArgument, msg + "\n"))?;
        for warning in &translated.warnings {
            eprintln!("labelfuzz: warning: {warning}");
        }
        let mut options = Options::try_parse_from(translated.args)?;
        if reduce {
            if options.corpus.is_empty() || options.corpus.iter().any(|p| !p.is_file()) {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    "`reduce` needs one or more input files (a crash reproducer; in grammar mode \
                     its choice bytes)\n",
                ));
            }
            options.reduce = true;
        }
        Ok(options)
    }

    /// The engine configuration these options describe.
    #[must_use]
    /// The corpus directory libFuzzer would add new inputs to: the first one given, when there
    /// is no `-o` and the run fuzzes (not only runs files, not `reduce`).
    fn libfuzzer_corpus(&self) -> Option<PathBuf> {
        let first = self.corpus.first()?;
        let grows = self.merge || (self.output.is_none() && !self.replay && !self.reduce);
        (grows && first.is_dir()).then(|| first.clone())
    }

    pub fn config(&self) -> Config {
        Config {
            output: self.output.clone().unwrap_or_else(|| PathBuf::from("out")),
            corpus_dirs: self.corpus.clone(),
            seed: self.seed.unwrap_or_else(|| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                now.as_nanos() as u64 ^ u64::from(std::process::id())
            }),
            timeout: Duration::from_millis(self.timeout),
            max_len: self.max_len,
            limits: Limits::new(
                self.runs,
                self.max_time.map(Duration::from_secs),
                self.stop_on_crash,
            ),
            havoc: self.havoc,
            cmplog: self.cmplog,
            rss_limit_mb: self.rss_limit_mb,
            replay: !self.reduce
                && (self.replay
                    || self.merge
                    || (!self.corpus.is_empty() && self.corpus.iter().all(|p| p.is_file()))),
            reduce: self.reduce,
            inputs: Vec::new(),
            cores: match (
                &self.cores,
                self.broker_port.is_some() || self.remote_broker.is_some(),
            ) {
                (Some(cores), _) => Some(cores.0.clone()),
                (None, true) => Some(vec![0]),
                (None, false) => None,
            },
            broker_port: self.broker_port,
            remote_broker: self.remote_broker.clone(),
            quiet: self.quiet,
            grammar: None,
            dictionary: Vec::new(),
            artifacts: match (&self.exact_artifact_path, &self.artifact_prefix) {
                (Some(path), _) => Some(crate::output::Artifacts::ExactPath(path.clone())),
                (None, Some(prefix)) => Some(crate::output::Artifacts::Prefix(prefix.clone())),
                // libFuzzer writes reproducers to the current directory.
                (None, None) if self.libfuzzer_corpus().is_some() && !self.merge => {
                    Some(crate::output::Artifacts::Prefix(String::new()))
                }
                (None, None) => None,
            },
            corpus_mirror: self.libfuzzer_corpus(),
            fresh: self.fresh,
        }
    }
}

/// Reads and checks a grammar file; the message names the file and what is wrong.
fn load_grammar(path: &std::path::Path) -> Result<crate::grammar::Grammar, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read grammar {}: {e}", path.display()))?;
    let grammar = crate::grammar::Grammar::from_json(&text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if grammar.has_hooks() {
        eprintln!(
            "labelfuzz: warning: {} names hooks; they run only in Rust generators, not with --grammar",
            path.display()
        );
    }
    Ok(grammar)
}

/// Replaces the input files by the choice sequences the grammar parses them into.
fn parse_inputs(config: &mut Config) -> Result<(), String> {
    let Some(grammar) = config.grammar.clone() else {
        return Err("--parse needs --grammar".into());
    };
    for path in std::mem::take(&mut config.corpus_dirs) {
        let text =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let choices = crate::grammar::parse(grammar.grammar(), grammar.max_depth(), &text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(wide) = choices.iter().find(|&&c| c > 255) {
            return Err(format!(
                "{}: needs choice {wide}, more than one byte holds (a rule with over 256 \
                 alternatives)",
                path.display()
            ));
        }
        let bytes = crate::grammar::choice_bytes(&choices);
        println!(
            "input {} parsed: {} choices {:?}",
            path.display(),
            bytes.len(),
            bytes
        );
        config.inputs.push(bytes);
    }
    Ok(())
}

/// Prints what `reduce` found: each input and each crash reproducer, with its sentence in
/// grammar mode, and the number of target runs it took.
fn print_reductions(config: &Config, summary: &crate::report::Summary) {
    let show = |bytes: &[u8]| -> String {
        match &config.grammar {
            Some(grammar) => format!(
                "{} choices {:?} rendering {:?}",
                bytes.len(),
                bytes,
                String::from_utf8_lossy(&grammar.render(bytes))
            ),
            None => format!("{} bytes {:?}", bytes.len(), String::from_utf8_lossy(bytes)),
        }
    };
    for path in &config.corpus_dirs {
        if let Ok(bytes) = std::fs::read(path) {
            println!("input {}: {}", path.display(), show(&bytes));
        }
    }
    if summary.crashes.is_empty() {
        println!("no crash: the inputs do not make the target fail, nothing to reduce");
    }
    for crash in &summary.crashes {
        let file = config.output.join(&crash.input);
        let bytes = std::fs::read(&file).unwrap_or_default();
        println!(
            "reduced {} ({}): {} ({})",
            crash.kind,
            crash.message,
            show(&bytes),
            file.display()
        );
    }
    println!("target runs: {}", summary.executions);
}

/// The `main` of every fuzzer binary: parses the command line, fuzzes `target`, and exits with
/// 0 (no crash), 1 (crash found) or 2 (error).
pub fn main_for_target<F: FnMut(&[u8])>(mut target: F) -> ! {
    run_main(&mut target)
}

/// libFuzzer's final `stat::` lines, for scripts that parse them.
fn print_final_stats(summary: &crate::report::Summary) {
    eprintln!("stat::number_of_executed_units: {}", summary.executions);
    eprintln!(
        "stat::average_exec_per_sec:     {:.0}",
        summary.execs_per_sec
    );
    eprintln!("stat::new_units_added:          {}", summary.corpus.entries);
    eprintln!("stat::slowest_unit_time_sec:    0");
    eprintln!("stat::peak_rss_mb:              {}", summary.peak_rss_mb);
}

/// The non-generic body of [`main_for_target`] (kept out of the instrumented target crate).
fn run_main(target: &mut dyn FnMut(&[u8])) -> ! {
    // Libraries that capture a backtrace per error would run orders of magnitude slower.
    std::env::set_var("RUST_BACKTRACE", "0");
    let options = match Options::parse_args(std::env::args_os().collect()) {
        Ok(options) => options,
        Err(e) => e.exit(),
    };
    let mut config = options.config();
    if let Some(path) = &options.grammar {
        match load_grammar(path) {
            Ok(grammar) => {
                config.grammar = Some(std::sync::Arc::new(crate::grammar::GrammarInputs::new(
                    grammar,
                    options.grammar_depth,
                )));
            }
            Err(message) => {
                eprintln!("labelfuzz: error: {message}");
                std::process::exit(2)
            }
        }
    }
    for path in &options.dict {
        match crate::dictionary::read_dictionary(path) {
            Ok(tokens) => config.dictionary.extend(tokens),
            Err(e) => {
                eprintln!("labelfuzz: error: {e}");
                std::process::exit(2)
            }
        }
    }
    if options.reduce && options.parse {
        if let Err(message) = parse_inputs(&mut config) {
            eprintln!("labelfuzz: error: {message}");
            std::process::exit(2)
        }
    }
    let result = crate::launch::fuzz(&config, target);
    match result {
        Ok(outcome) => {
            if options.print_final_stats && outcome.supervisor {
                print_final_stats(&outcome.summary);
            }
            if config.reduce && outcome.supervisor {
                print_reductions(&config, &outcome.summary);
            }
            if config.replay && outcome.supervisor {
                for crash in &outcome.summary.crashes {
                    eprintln!(
                        "labelfuzz: {} {} {} ({}): {}",
                        crash.kind,
                        crash.location,
                        crash.message,
                        crash.len,
                        config.output.join(&crash.input).display()
                    );
                }
            }
            std::process::exit(i32::from(outcome.found_crashes()))
        }
        Err(e) => {
            eprintln!("labelfuzz: error: {e}");
            std::process::exit(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::parse_args(
            std::iter::once("fuzzer")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect(),
        )
    }

    #[test]
    fn defaults_need_no_arguments() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.config().output, PathBuf::from("out"));
        assert_eq!(o.timeout, 1000);
        assert_eq!(o.max_len, 4096);
        assert!(o.corpus.is_empty());
    }

    #[test]
    fn libfuzzer_spellings_mean_the_same() {
        let ours = parse(&[
            "--max-time",
            "5",
            "--runs",
            "100",
            "--seed",
            "7",
            "--timeout",
            "2000",
            "--max-len",
            "64",
            "seeds",
        ])
        .unwrap();
        let theirs = parse(&[
            "-max_total_time=5",
            "-runs=100",
            "-seed=7",
            "-timeout=2",
            "-max_len=64",
            "seeds",
        ])
        .unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn nonsense_values_are_refused_with_the_flag_named() {
        for (args, needle) in [
            (&["--timeout", "0"][..], "--timeout"),
            (&["--max-len", "0"][..], "--max-len"),
            (&["--runs", "many"][..], "--runs"),
            (&["-timeout=soon"][..], "-timeout=soon"),
            (&["--frobnicate"][..], "--frobnicate"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    #[test]
    fn options_become_limits() {
        let c = parse(&["--runs", "10", "--max-time", "3", "--stop-on-crash"])
            .unwrap()
            .config();
        assert_eq!(c.limits.max_execs, Some(10));
        assert_eq!(c.limits.max_time, Some(Duration::from_secs(3)));
        assert!(c.limits.stop_on_crash);
    }

    #[test]
    fn every_libfuzzer_flag_is_accepted_and_the_last_repeat_wins() {
        let args = |list: &[&str]| -> Vec<OsString> {
            std::iter::once("fuzzer")
                .chain(list.iter().copied())
                .map(OsString::from)
                .collect()
        };
        let t = translate_libfuzzer_flags(args(&[
            "-max_total_time=5",
            "-max_total_time=9",
            "-runs=-1",
            "-timeout=0",
            "-seed=0",
            "-artifact_prefix=crashes/",
            "-frobnicate=1",
            "-print_final_stats=1",
            "-use_value_profile=1",
            "seeds",
        ]))
        .unwrap();
        let texts: Vec<_> = t.args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            texts,
            [
                "fuzzer",
                "seeds",
                "--max-time",
                "9",
                "--timeout",
                &NO_TIMEOUT_MS.to_string(),
                "--artifact-prefix",
                "crashes/",
                "--print-final-stats",
            ]
        );
        assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
        assert!(t.warnings[0].contains("unrecognized flag `-frobnicate=1`"));
        assert!(t.warnings[1].contains("`-use_value_profile` is not used"));
        assert!(LIBFUZZER_FLAGS
            .iter()
            .all(|(name, _, _)| !LIBFUZZER_IGNORED_FLAGS.contains(name)));
        // -help and -minimize_crash are handled before the table.
        let all_known = LIBFUZZER_FLAGS.len() + LIBFUZZER_IGNORED_FLAGS.len() + 2;
        assert_eq!(all_known, 81, "libFuzzer 19 has 81 flags");
        let o = parse(&["-runs=-1", "-max_total_time=0", "-jobs=1", "-workers=1"]).unwrap();
        assert_eq!(o.runs, None);
        assert_eq!(o.max_time, None);
    }

    #[test]
    fn a_corpus_directory_without_output_is_grown_as_libfuzzer_grows_it() {
        let dir = std::env::temp_dir();
        let dir_text = dir.to_str().unwrap();
        let c = parse(&[dir_text]).unwrap().config();
        assert_eq!(c.corpus_mirror.as_deref(), Some(dir.as_path()));
        assert_eq!(
            c.artifacts,
            Some(crate::output::Artifacts::Prefix(String::new()))
        );
        let c = parse(&["-o", "out/x", dir_text]).unwrap().config();
        assert_eq!(c.corpus_mirror, None);
        assert_eq!(c.artifacts, None);
    }
}
