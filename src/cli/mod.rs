//! The fuzzer's command line, shared by every labelfuzz fuzzer binary (Rust or C).
//!
//! Flags are defined once, with their help text, in [`Options`]; libFuzzer spellings
//! (`-runs=N`, `-max_total_time=N`, ...) are translated to them by one table,
//! `LIBFUZZER_FLAGS` ([`libfuzzer`]), so existing scripts keep working; [`run`] is the main of
//! every fuzzer binary.

mod libfuzzer;
pub mod libfuzzer_report;
mod run;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{FromArgMatches, Parser};

use crate::config::{Config, Limits, Mode};

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

pub use libfuzzer::{translate_libfuzzer_flags, Translated};
pub use run::{main_for_target, main_for_typed_target};

impl Options {
    /// The command line: clap's, from this struct's fields and their help, with each flag's
    /// libFuzzer spelling (from libFuzzer's table) added to its help.
    #[must_use]
    pub fn command() -> clap::Command {
        let mut command = <Options as clap::CommandFactory>::command();
        for (flag, spellings) in libfuzzer::spellings_by_flag() {
            command = command.mut_arg(flag, |arg| {
                let ours = arg
                    .get_value_names()
                    .and_then(|names| names.first())
                    .map_or_else(|| "N".to_string(), ToString::to_string);
                let spelled: Vec<String> = spellings
                    .iter()
                    .map(|(name, value)| format!("-{name}={}", value.unwrap_or(&ours)))
                    .collect();
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                arg.help(format!("{help} [libFuzzer: {}]", spelled.join(", ")))
            });
        }
        command
    }

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
        let matches = Options::command().try_get_matches_from(translated.args)?;
        let mut options = Options::from_arg_matches(&matches)?;
        options.libfuzzer_report |= translated.libfuzzer_style;
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

    /// The corpus directory libFuzzer would add new inputs to: the first one given, when there
    /// is no `-o` and the run fuzzes (not only runs files, not `reduce`).
    fn libfuzzer_corpus(&self) -> Option<PathBuf> {
        let first = self.corpus.first()?;
        let grows = self.merge
            || ((self.output.is_none() || self.grow_corpus) && !self.replay && !self.reduce);
        (grows && first.is_dir()).then(|| first.clone())
    }

    /// What the run does: `reduce` shrinks; a replay, a merge or only files given (as
    /// libFuzzer treats them) only run the inputs; anything else fuzzes.
    fn mode(&self) -> Mode {
        let only_files = !self.corpus.is_empty() && self.corpus.iter().all(|p| p.is_file());
        if self.reduce {
            Mode::Reduce
        } else if self.replay || self.merge || only_files {
            Mode::Replay
        } else {
            Mode::Fuzz
        }
    }

    /// The engine configuration these options describe.
    #[must_use]
    pub fn config(&self) -> Config {
        Config {
            output: match (&self.output, self.merge) {
                (Some(dir), _) => dir.clone(),
                // A merge keeps nothing of its own: a scratch directory, not ./out.
                (None, true) => {
                    std::env::temp_dir().join(format!("labelfuzz-merge-{}", std::process::id()))
                }
                (None, false) => PathBuf::from("out"),
            },
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
            pattern_budget: self.pattern_budget,
            only_ascii: self.only_ascii,
            close_fd_mask: self.close_fd_mask,
            value_profile: self.use_value_profile,
            progress: if self.libfuzzer_progress {
                crate::progress::ProgressStyle::LibFuzzer
            } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                // A person is watching: the status redrawn in place. Pipes and CI logs get
                // one plain line per report.
                crate::progress::ProgressStyle::Terminal
            } else {
                crate::progress::ProgressStyle::Labelfuzz
            },
            cmplog: self.cmplog,
            rss_limit_mb: self.rss_limit_mb,
            mode: self.mode(),
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
            debug_form: None,
            dictionary: Vec::new(),
            artifacts: match (&self.exact_artifact_path, &self.artifact_prefix) {
                (Some(path), _) => Some(crate::output::Artifacts::ExactPath(path.clone())),
                (None, Some(prefix)) => Some(crate::output::Artifacts::Prefix(prefix.clone())),
                // libFuzzer writes reproducers to the current directory.
                (None, None)
                    if self.output.is_none()
                        && self.libfuzzer_corpus().is_some()
                        && !self.merge =>
                {
                    Some(crate::output::Artifacts::Prefix(String::new()))
                }
                (None, None) => None,
            },
            corpus_mirror: self.libfuzzer_corpus(),
            fresh: self.fresh,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::parse_args(
            std::iter::once("fuzzer")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect(),
        )
    }

    /// The README's copy of `--help`, between these markers.
    const README_BEGIN: &str = "<!-- FUZZER --help: begin -->\n```text\n";
    const README_END: &str = "```\n<!-- FUZZER --help: end -->";

    /// `--help` as the README shows it (any fuzzer binary prints it under its own name).
    fn help_text() -> String {
        Options::command()
            .bin_name("FUZZER")
            .term_width(100)
            .render_help()
            .to_string()
    }

    #[test]
    fn the_readme_shows_the_help_the_fuzzer_prints() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
        let readme = std::fs::read_to_string(&path).unwrap();
        let begin = readme
            .find(README_BEGIN)
            .expect("README has the flag block's markers");
        let end = readme
            .find(README_END)
            .expect("README has the flag block's end marker");
        let shown = &readme[begin + README_BEGIN.len()..end];
        let help = help_text();
        let help = help.trim_end().to_string() + "\n";
        if shown != help && std::env::var_os("LABELFUZZ_BLESS_README").is_some() {
            let updated = format!(
                "{}{help}{}",
                &readme[..begin + README_BEGIN.len()],
                &readme[end..]
            );
            std::fs::write(&path, updated).unwrap();
            return;
        }
        assert!(
            shown == help,
            "README.md's flag block differs from --help; rerun with LABELFUZZ_BLESS_README=1 to \
             copy it:\n{help}"
        );
    }

    #[test]
    fn every_libfuzzer_spelling_names_one_of_our_flags() {
        // `mut_arg` panics on an id that is not a flag; the help names each spelling.
        let help = help_text();
        for (_, spellings) in libfuzzer::spellings_by_flag() {
            for (name, _) in spellings {
                assert!(
                    help.contains(&format!("-{name}=")),
                    "-{name} is not in --help"
                );
            }
        }
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
            "--libfuzzer-report",
            "seeds",
        ])
        .unwrap();
        // libFuzzer's spelling is how libFuzzer's runners call a fuzzer: reports follow suit.
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
