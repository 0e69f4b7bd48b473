//! The main of every fuzzer binary: parse the command line, load grammars and dictionaries,
//! fuzz, print what was found, exit with libFuzzer's statuses.

use super::Options;
use crate::config::{Config, Mode};

/// Reads and checks a grammar file; the message names the file and what is wrong.
fn load_grammar(path: &std::path::Path) -> Result<crate::grammar::Grammar, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read grammar {}: {e}", path.display()))?;
    let grammar = crate::grammar::Grammar::from_json(&text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // Grammar files name built-in hooks (define, fresh, use, repeat, scope).
    crate::grammar::hooks::check_builtin(&grammar).map_err(|e| {
        format!(
            "{}: {e} (the built-in hooks are define:NS, fresh:NS, use:NS, repeat:NS and scope:NS)",
            path.display()
        )
    })?;
    Ok(grammar)
}

/// The grammar patterns in `path`: a `.pattern` file, or every `crashes/*.pattern` of an output
/// directory.
fn load_patterns(path: &std::path::Path) -> Result<Vec<crate::pattern::GrammarPattern>, String> {
    let files: Vec<std::path::PathBuf> = if path.is_dir() {
        let crashes = path.join("crashes");
        let mut files: Vec<_> = std::fs::read_dir(&crashes)
            .map_err(|e| format!("cannot read patterns in {}: {e}", crashes.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pattern"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut patterns = Vec::new();
    for file in files {
        let text = std::fs::read(&file)
            .map_err(|e| format!("cannot read pattern {}: {e}", file.display()))?;
        let value: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not a pattern file: {e}", file.display()))?;
        let pattern: crate::pattern::Pattern = serde_json::from_value(value["details"].clone())
            .map_err(|e| format!("{} is not a pattern file: {e}", file.display()))?;
        match pattern {
            crate::pattern::Pattern::Grammar(p) => patterns.push(p),
            crate::pattern::Pattern::Bytes(p) => crate::say!(
                "labelfuzz: warning: {}: `{p}` is a byte pattern; only grammar patterns specialise a grammar",
                file.display()
            ),
        }
    }
    Ok(patterns)
}

/// The grammar of `--grammar`, specialised by `--avoid` and `--only`.
fn specialised_grammar(
    options: &Options,
    path: &std::path::Path,
) -> Result<crate::grammar::Grammar, String> {
    let mut grammar = load_grammar(path)?;
    let mut avoided = Vec::new();
    for source in &options.avoid {
        avoided.extend(load_patterns(source)?);
    }
    if !avoided.is_empty() {
        grammar = grammar
            .avoiding(&avoided)
            .map_err(|e| format!("--avoid: {e}"))?;
        crate::say!(
            "labelfuzz: the grammar avoids {}",
            avoided
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(source) = &options.only {
        let patterns = load_patterns(source)?;
        let [pattern] = &patterns[..] else {
            return Err(format!(
                "--only: {} holds {} grammar patterns, not one",
                source.display(),
                patterns.len()
            ));
        };
        grammar = grammar.only(pattern).map_err(|e| format!("--only: {e}"))?;
        crate::say!("labelfuzz: the grammar produces only {pattern}");
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
            first_line(&crash.message),
            show(&bytes),
            file.display()
        );
    }
    println!("target runs: {}", summary.executions);
}

/// The one optional OUTPUT_DIR of the `report` and `coverage` subcommands (default `out`);
/// `None` after printing the usage of `command`, which writes `writes` into it.
fn output_dir_argument(
    args: &[std::ffi::OsString],
    command: &str,
    writes: &str,
) -> Option<std::path::PathBuf> {
    match args {
        [] => Some(std::path::PathBuf::from("out")),
        [dir] if !dir.to_string_lossy().starts_with('-') => Some(std::path::PathBuf::from(dir)),
        _ => {
            eprintln!("usage: {command} [OUTPUT_DIR]   (writes OUTPUT_DIR/{writes})");
            None
        }
    }
}

/// `FUZZER coverage [OUT]` (run by a coverage build): replays OUT's inputs and writes
/// `OUT/coverage/`; returns the exit status.
fn coverage_command(args: &[std::ffi::OsString]) -> i32 {
    let Some(out) = output_dir_argument(args, "COVERAGE_BUILD coverage", "coverage/") else {
        return 2;
    };
    match labelfuzz_tools::coverage::write_coverage(
        &out,
        concat!(env!("CARGO_MANIFEST_DIR"), "/src/"),
    ) {
        Ok(summary) => {
            let text = std::fs::read_to_string(&summary).unwrap_or_default();
            let totals: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            for part in ["lines", "branches", "functions"] {
                println!(
                    "{part}: {} of {} ({:.1}%)",
                    totals[part]["covered"],
                    totals[part]["count"],
                    totals[part]["percent"].as_f64().unwrap_or(0.0)
                );
            }
            println!("{}", out.join("coverage/index.html").display());
            0
        }
        Err(e) => {
            eprintln!("labelfuzz: error: {e}");
            2
        }
    }
}

/// `FUZZER report [OUT]`: writes `OUT/report.html` (default `out`); returns the exit status.
fn report_command(args: &[std::ffi::OsString]) -> i32 {
    let Some(out) = output_dir_argument(args, "FUZZER report", "report.html") else {
        return 2;
    };
    let exe = std::env::current_exe().ok();
    match labelfuzz_tools::html_report::write_report(&out, exe.as_deref()) {
        Ok(path) => {
            println!("{}", path.display());
            0
        }
        Err(e) => {
            eprintln!("labelfuzz: error: {e}");
            2
        }
    }
}

/// The `main` of every fuzzer binary: parses the command line, fuzzes `target`, and exits with
/// 0 (no crash), 1 (crash found) or 2 (error).
pub fn main_for_target<F: FnMut(&[u8])>(mut target: F) -> ! {
    run_main(&mut target, None)
}

/// [`main_for_target`] for a target that decodes its input into a typed value and can print it
/// (`debug_form`): crash patterns are then also stated on that `Debug` form.
pub fn main_for_typed_target<F: FnMut(&[u8])>(
    mut target: F,
    debug_form: crate::pattern::DebugForm,
) -> ! {
    run_main(&mut target, Some(debug_form))
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

/// Prints libFuzzer's report block for every crash label, in the order they were found.
fn print_libfuzzer_reports(config: &Config, summary: &crate::report::Summary) {
    let mut crashes: Vec<_> = summary.crashes.iter().collect();
    crashes.sort_by_key(|c| c.first_found_execs);
    let timeout_secs = config.timeout.as_secs_f64();
    for crash in crashes {
        let file = config.output.join(&crash.input);
        // The copy the runner asked for, where there is one: that is where it looks.
        let written = config
            .artifacts
            .as_ref()
            .and_then(|a| a.path_for(std::path::Path::new(&crash.input)))
            .unwrap_or_else(|| file.clone());
        let input = std::fs::read(&file).unwrap_or_default();
        eprint!(
            "{}",
            super::libfuzzer_report::report(crash, &written, &input, timeout_secs)
        );
    }
}

/// The non-generic body of [`main_for_target`] (kept out of the instrumented target crate).
fn run_main(target: &mut dyn FnMut(&[u8]), debug_form: Option<crate::pattern::DebugForm>) -> ! {
    // Libraries that capture a backtrace per error would run orders of magnitude slower.
    std::env::set_var("RUST_BACKTRACE", "0");
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("report") => std::process::exit(report_command(&args[2..])),
        Some("coverage") => std::process::exit(coverage_command(&args[2..])),
        Some("mine") => std::process::exit(crate::mine::command(&args[2..], target)),
        _ => {}
    }
    let options = match Options::parse_args(args) {
        Ok(options) => options,
        Err(e) => e.exit(),
    };
    let config = match run_config(&options, debug_form) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("labelfuzz: error: {message}");
            std::process::exit(2)
        }
    };
    if options.libfuzzer_report {
        crate::crash::keep_panic_stacks();
    }
    match crate::launch::fuzz(&config, target) {
        Ok(outcome) => finish(&options, &config, &outcome),
        Err(e) => {
            eprintln!("labelfuzz: error: {e}");
            std::process::exit(2)
        }
    }
}

/// The run `options` ask for, with what they name read in: the grammar (specialised by
/// `--avoid`/`--only`, or the one `FUZZER mine` wrote for `--grammar mined`), the dictionaries
/// and, for `reduce --parse`, the inputs as sentences of the grammar.
fn run_config(
    options: &Options,
    debug_form: Option<crate::pattern::DebugForm>,
) -> Result<Config, String> {
    let mut config = options.config();
    config.debug_form = debug_form;
    if let Some(path) = &options.grammar {
        let mined = crate::mine::mined_grammar_path(&config.output);
        let path = if path.as_os_str() == "mined" && !path.exists() {
            &mined
        } else {
            path
        };
        let grammar = specialised_grammar(options, path)?;
        let hooked = grammar.has_hooks();
        let mut inputs = crate::grammar::GrammarInputs::new(grammar, options.grammar_depth);
        if hooked {
            inputs = inputs.with_hooks(|| Box::new(crate::grammar::hooks::BuiltinHooks::new()));
        }
        config.grammar = Some(std::sync::Arc::new(inputs));
    }
    for path in &options.dict {
        let tokens = crate::dictionary::read_dictionary(path).map_err(|e| e.to_string())?;
        config.dictionary.extend(tokens);
    }
    // Grammar mode's inputs are choice sequences, where the program's words mean nothing.
    if options.auto_dict == 1 && config.grammar.is_none() {
        config.program_tokens = crate::embedded_dictionary::embedded_dictionary();
    }
    if options.reduce && options.parse {
        parse_inputs(&mut config)?;
    }
    Ok(config)
}

/// Ends the process after a run: removes a merge's scratch directory, prints what the flags
/// ask for (libFuzzer's final stats and crash reports, reductions, replayed crashes) and exits
/// with the run's status.
fn finish(options: &Options, config: &Config, outcome: &crate::launch::Outcome) -> ! {
    if options.merge && options.output.is_none() && outcome.supervisor {
        // The merge's scratch directory holds nothing the user asked for, unless a crash's
        // reproducer (named below): only then is it kept.
        if outcome.summary.crashes.is_empty() {
            let _ = std::fs::remove_dir_all(&config.output);
        }
    }
    if options.print_final_stats && outcome.supervisor {
        print_final_stats(&outcome.summary);
    }
    if config.mode == Mode::Reduce && outcome.supervisor {
        print_reductions(config, &outcome.summary);
    }
    if config.mode == Mode::Fuzz && outcome.supervisor {
        warn_of_unfinished_shrinks(config, &outcome.summary);
    }
    // `-minimize_crash=1` (reduce) ends as libFuzzer's does: status 0 once minimized.
    if options.libfuzzer_report && outcome.supervisor && config.mode != Mode::Reduce {
        let codes = super::libfuzzer_report::ExitCodes {
            error: options.error_exitcode,
            timeout: options.timeout_exitcode,
            ..Default::default()
        };
        print_libfuzzer_reports(config, &outcome.summary);
        std::process::exit(codes.for_crashes(&outcome.summary.crashes));
    }
    if config.mode == Mode::Replay && outcome.supervisor {
        for crash in &outcome.summary.crashes {
            eprintln!(
                "labelfuzz: {} {} {} ({}): {}",
                crash.kind,
                crash.location,
                first_line(&crash.message),
                crash.len,
                config.output.join(&crash.input).display()
            );
        }
    }
    std::process::exit(i32::from(outcome.found_crashes()))
}

/// Names each reproducer whose shrink the run's end cut short, and how to finish it: the
/// reproducer is a real one, only longer than it need be.
fn warn_of_unfinished_shrinks(config: &Config, summary: &crate::report::Summary) {
    let program = std::env::args().next().unwrap_or_else(|| "fuzzer".into());
    for crash in summary.crashes.iter().filter(|c| !c.shrunk) {
        let reproducer = config.output.join(&crash.input);
        eprintln!(
            "labelfuzz: {path} ({} {}, {} bytes) is not shrunk to its minimum: the run ended \
             first; `{program} reduce {path}` finishes it",
            crash.kind,
            crash.location,
            crash.len,
            path = reproducer.display(),
        );
    }
}

/// The first line of a crash's message, for one-line displays (a panic's message may go on with
/// `assert_eq!`'s values).
fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or("")
}
