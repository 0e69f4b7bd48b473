//! The fuzzer's command line, shared by every labelfuzz fuzzer binary (Rust or C).
//!
//! Flags are defined once, with their help text, in [`Options`]; libFuzzer spellings
//! (`-runs=N`, `-max_total_time=N`, ...) are translated to them by one table,
//! `LIBFUZZER_FLAGS` ([`libfuzzer`]), so existing scripts keep working; [`run`] is the main of
//! every fuzzer binary.

mod libfuzzer;
pub mod libfuzzer_report;
mod options;
mod run;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::FromArgMatches;

use crate::config::{Config, Limits, Mode};

pub use libfuzzer::{translate_libfuzzer_flags, Translated};
pub use options::Options;
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
            schedule: self.schedule,
            pattern_budget: self.pattern_budget,
            only_ascii: self.only_ascii,
            close_fd_mask: self.close_fd_mask,
            value_profile: self.use_value_profile,
            cmp_progress: crate::config::Switch::from_flag(self.cmp_progress),
            regular_runs: self.regular_runs == 1,
            long_runs: crate::config::Switch::from_flag(self.long_runs),
            charge_exec_time: self.charge_exec_time == 1,
            shrink_budget: self.shrink_budget == 1,
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
            cmplog_transforms: self.cmplog_transforms == 1,
            cmplog_colorize: self.cmplog_colorize == 1,
            cmplog_repair: self.cmplog_repair == 1,
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
            program_tokens: Vec::new(),
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
