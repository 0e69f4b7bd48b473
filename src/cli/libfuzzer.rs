//! libFuzzer's command line: every flag of libFuzzer 19, translated to ours where it has a
//! meaning here, warned about and ignored where it has none.

use std::ffi::OsString;

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
    ("only_ascii", "--only-ascii", Scale::Switch),
    ("close_fd_mask", "--close-fd-mask", Scale::Same),
    ("use_value_profile", "--use-value-profile", Scale::Switch),
    ("error_exitcode", "--error-exitcode", Scale::Same),
    ("timeout_exitcode", "--timeout-exitcode", Scale::Same),
    ("jobs", "--cores", Scale::JobsToCores),
    ("workers", "--cores", Scale::JobsToCores),
];

/// A libFuzzer flag's name and the value it takes (`None`: the same as our flag's).
pub(super) type Spelling = (&'static str, Option<&'static str>);

/// Each of our flags that libFuzzer spells otherwise (by clap's id, the field's name), with its
/// libFuzzer names and the value each takes (`None`: the same as ours), in the table's order.
pub(super) fn spellings_by_flag() -> Vec<(String, Vec<Spelling>)> {
    let mut by_flag: Vec<(String, Vec<Spelling>)> = Vec::new();
    for &(name, ours, scale) in LIBFUZZER_FLAGS {
        let id = ours.trim_start_matches('-').replace('-', "_");
        let value = match scale {
            Scale::Switch => Some("1"),
            Scale::SecondsToMillis => Some("SECS"),
            Scale::JobsToCores => Some("N"),
            Scale::Same => None,
        };
        match by_flag.iter_mut().find(|(flag, _)| *flag == id) {
            Some((_, spellings)) => spellings.push((name, value)),
            None => by_flag.push((id, vec![(name, value)])),
        }
    }
    by_flag
}

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
    "use_cmp",
    "shrink",
    "reduce_inputs",
    "reload",
    "report_slow_units",
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
    /// Whether any flag came in libFuzzer's `-name=value` form: the fuzzer was started the way
    /// libFuzzer's runners start it, and reports crashes in libFuzzer's shape.
    pub libfuzzer_style: bool,
}

/// Rewrites libFuzzer-style `-name=value` arguments into our flags. As in libFuzzer, a repeated
/// flag's last value wins, `0` (or `-1` for `-runs`) means no limit, and flags with no meaning
/// here (or unknown to libFuzzer too) are ignored with a warning, never fatal.
pub fn translate_libfuzzer_flags(args: Vec<OsString>) -> Result<Translated, String> {
    let mut translated = Translated::default();
    // Our flag and value, by flag, in order of first appearance (a repeat replaces the value).
    let mut flags: Vec<(&str, Option<String>)> = Vec::new();
    let mut workers_given = false;
    for (i, arg) in args.into_iter().enumerate() {
        let text = arg.to_str().unwrap_or("");
        let is_libfuzzer =
            i > 0 && text.starts_with('-') && !text.starts_with("--") && text.contains('=');
        if !is_libfuzzer {
            translated.args.push(arg);
            continue;
        }
        let (name, value) = text[1..].split_once('=').expect("contains '='");
        translated.libfuzzer_style = true;
        if name == "help" {
            if value != "0" {
                translated.args.push("--help".into());
            }
            continue;
        }
        // `-runs=0`: run the inputs given, fuzz nothing.
        if name == "runs" && value == "0" {
            flags.retain(|(flag, _)| *flag != "--runs");
            flags.push(("--replay", Some(String::new())));
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
            ("jobs" | "workers", _) if value == "0" => None,
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
        // `-jobs=N -workers=M` together: M processes run at once, in either order.
        if name == "workers" {
            workers_given = true;
        } else if name == "jobs" && workers_given {
            continue;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
            "-entropic=1",
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
                "--use-value-profile",
            ]
        );
        assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
        assert!(t.warnings[0].contains("unrecognized flag `-frobnicate=1`"));
        assert!(t.warnings[1].contains("`-entropic` is not used"));
        assert!(LIBFUZZER_FLAGS
            .iter()
            .all(|(name, _, _)| !LIBFUZZER_IGNORED_FLAGS.contains(name)));
        // -help and -minimize_crash are handled before the table.
        let all_known = LIBFUZZER_FLAGS.len() + LIBFUZZER_IGNORED_FLAGS.len() + 2;
        assert_eq!(all_known, 81, "libFuzzer 19 has 81 flags");
        let o =
            super::super::tests::parse(&["-runs=-1", "-max_total_time=0", "-jobs=1", "-workers=1"])
                .unwrap();
        assert_eq!(o.runs, None);
        assert_eq!(o.max_time, None);
        for order in [["-workers=2", "-jobs=8"], ["-jobs=8", "-workers=2"]] {
            let args = std::iter::once("fuzzer").chain(order).map(OsString::from);
            let both = translate_libfuzzer_flags(args.collect()).unwrap().args;
            assert_eq!(
                both[1..],
                ["--cores", "0-1"],
                "workers win over jobs: {order:?}"
            );
        }
        // libFuzzer's defaults for -jobs and -workers, and -runs=0 (run the inputs only).
        let o = super::super::tests::parse(&["-jobs=0", "-workers=0", "-runs=0"]).unwrap();
        assert_eq!(o.cores, None);
        assert!(o.replay);
        assert_eq!(o.runs, None);
    }
}
