//! What a run is asked to do: the settings the command line turns into, the limits that end a
//! run, and the core lists and broker addresses of multi-core and multi-machine runs (parsed
//! here, so that the command line, the engine and the launcher share them without depending on
//! each other).

use std::cell::Cell;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libafl::state::{HasExecutions, HasStartTime, Stoppable};
use libafl_bolts::current_time;

use crate::grammar::GrammarInputs;

/// Everything a run needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// The output directory.
    pub output: PathBuf,
    /// Seed directories.
    pub corpus_dirs: Vec<PathBuf>,
    /// Random seed.
    pub seed: u64,
    /// Per-execution timeout.
    pub timeout: Duration,
    /// Longest input tried.
    pub max_len: usize,
    /// When the run ends.
    pub limits: Limits,
    /// Havoc mutants tried per scheduled input after its expansions (0: expand/shrink only).
    pub havoc: usize,
    /// How the next label to fuzz is picked.
    pub schedule: labelfuzz_core::schedule::Schedule,
    /// Input-to-state (CmpLog) mutants tried per scheduled input after one traced run (0: off).
    pub cmplog: usize,
    /// Input-to-state also for comparisons of scaled or offset input values
    /// (`--cmplog-transforms`).
    pub cmplog_transforms: bool,
    /// Input-to-state on a colorized copy of each entry (`--cmplog-colorize`).
    pub cmplog_colorize: bool,
    /// Mutants of entries that pass a checksum or length check get the field the program
    /// computed written in (`--cmplog-repair`).
    pub cmplog_repair: bool,
    /// Executions each crash label's abstract failure pattern may cost (0: no patterns).
    pub pattern_budget: usize,
    /// libFuzzer's `-only_ascii=1`: every input the fuzzer makes is printable ASCII or
    /// whitespace (a byte outside is mapped into it before the input runs).
    pub only_ascii: bool,
    /// libFuzzer's `-close_fd_mask`: 1 silences the target's stdout, 2 its stderr, 3 both.
    pub close_fd_mask: u8,
    /// libFuzzer's `-use_value_profile=1`: comparison sites are labels too.
    pub value_profile: bool,
    /// When comparison progress labels (equal outcomes and closest operands per site) are made
    /// (`--cmp-progress`).
    pub cmp_progress: Switch,
    /// Expansions also append a run of one repeated byte and the input doubled
    /// (`--regular-runs 1`).
    pub regular_runs: bool,
    /// When havoc also inserts and writes runs of 17 to 4096 repeated bytes (`--long-runs`).
    pub long_runs: Switch,
    /// Slow inputs are picked in proportion to their speed (`--charge-exec-time 1`).
    pub charge_exec_time: bool,
    /// Coverage shrinks of slow executions end at a deadline (`--shrink-budget 1`).
    pub shrink_budget: bool,
    /// The progress line's format.
    pub progress: crate::progress::ProgressStyle,
    /// Memory limit in MiB (0: none); a process over it while the target runs is an `oom` crash.
    pub rss_limit_mb: usize,
    /// What the run does with its inputs: fuzz, only run them, or shrink their crashes.
    pub mode: Mode,
    /// Start inputs given directly (after the empty input, before the seed directories).
    pub inputs: Vec<Vec<u8>>,
    /// Run one client per listed core, connected through an LLMP broker (None: one process).
    pub cores: Option<Vec<usize>>,
    /// The broker's TCP port in a multi-core run (None: a free port).
    pub broker_port: Option<u16>,
    /// A broker of another run to link this run's broker to (multi-machine runs).
    pub remote_broker: Option<RemoteBroker>,

    /// No progress line.
    pub quiet: bool,
    /// Grammar mode: inputs are choice bytes that this grammar renders into what the target
    /// sees; crash reproducers are shrunk with the grammar reducer and get their sentence
    /// written beside them.
    pub grammar: Option<Arc<GrammarInputs>>,
    /// For a typed (`Arbitrary`) Rust target: how it prints an input's decoded value, so that
    /// crash patterns are also stated on that `Debug` form.
    pub debug_form: Option<crate::pattern::DebugForm>,
    /// Dictionary tokens (`--dict`), for the havoc stage's token mutations and the expansions.
    pub dictionary: Vec<Vec<u8>>,
    /// The automatic dictionary's tokens (`--auto-dict`), for the havoc stage's token mutations
    /// only: the program's literals are many and mostly not input, too many to append each
    /// one to every corpus entry.
    pub program_tokens: Vec<Vec<u8>>,
    /// Where copies of crash reproducers go besides `crashes/` (libFuzzer's artifact flags).
    pub artifacts: Option<crate::output::Artifacts>,
    /// A corpus directory new corpus inputs are also added to (libFuzzer's first corpus
    /// directory, when no output directory is named).
    pub corpus_mirror: Option<PathBuf>,
    /// Move an existing output directory aside and start afresh instead of resuming it.
    pub fresh: bool,
}

/// What a run does, chosen once from the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Fuzz from the start inputs until a limit.
    Fuzz,
    /// Run the start inputs once each, record their labels and stop: no shrinking, no fuzzing
    /// (`--replay`, `-merge=1`, `-runs=0`, or only files given, as libFuzzer does).
    Replay,
    /// Run the start inputs and shrink every crash they show to a fixpoint, then stop: the
    /// `reduce` subcommand.
    Reduce,
}

impl Mode {
    /// True when the run only runs what it was given (it neither fuzzes nor grows a corpus of
    /// its own).
    #[must_use]
    pub fn only_runs_inputs(self) -> bool {
        self != Mode::Fuzz
    }
}

/// When a run ends: after so many executions, at a deadline, or at the first crash.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Stop after this many executions.
    pub max_execs: Option<u64>,
    /// Stop after this much time since the start of the run.
    pub max_time: Option<Duration>,
    /// Stop once a crash has been found (and shrunk).
    pub stop_on_crash: bool,
    /// Checks since the clock was last read.
    checks: Cell<u32>,
    /// Checks between two readings of the clock: as many as take about [`CLOCK_EVERY`].
    stride: Cell<u32>,
    /// When the clock was last read.
    last_read: Cell<Option<Instant>>,
}

/// How often the deadline is checked: often enough that a run of slow executions ends on
/// time, rarely enough that reading the clock costs nothing next to fast ones.
const CLOCK_EVERY: Duration = Duration::from_millis(10);

/// The most checks between two readings of the clock. Small, because the stride only adapts
/// when the clock is read: after fast executions turn slow, up to this many run before it is.
const MAX_STRIDE: u16 = 16;

impl Limits {
    /// Limits from their parts.
    #[must_use]
    pub fn new(max_execs: Option<u64>, max_time: Option<Duration>, stop_on_crash: bool) -> Self {
        Limits {
            max_execs,
            max_time,
            stop_on_crash,
            ..Limits::default()
        }
    }

    /// True when the run's time is up.
    pub fn past_deadline<S: HasStartTime>(&self, state: &S) -> bool {
        self.max_time
            .is_some_and(|t| current_time().saturating_sub(*state.start_time()) >= t)
    }

    /// True when the clock should be read at this check. Reading it costs little next to an
    /// execution, but not nothing on a target that runs in a microsecond; on one that runs in
    /// a second, checking every 256th (as before) let a two-minute run overrun by a minute. So
    /// the stride adapts to keep about [`CLOCK_EVERY`] between readings, up to [`MAX_STRIDE`].
    /// (Checks, not executions: skipped candidates must not hide the deadline.)
    fn clock_due(&self) -> bool {
        let checks = self.checks.get() + 1;
        if checks < self.stride.get() {
            self.checks.set(checks);
            return false;
        }
        let now = Instant::now();
        if let Some(last) = self.last_read.get() {
            let per_check = now.duration_since(last) / checks;
            let stride = CLOCK_EVERY.as_nanos() / per_check.as_nanos().max(1);
            self.stride.set(stride.clamp(1, MAX_STRIDE.into()) as u32);
        }
        self.last_read.set(Some(now));
        self.checks.set(0);
        true
    }

    /// When [`Limits::exhausted`] last read the clock: at most about [`CLOCK_EVERY`] (or
    /// [`MAX_STRIDE`] checks) ago while inputs are running.
    #[must_use]
    pub fn last_clock_reading(&self) -> Option<Instant> {
        self.last_read.get()
    }

    /// True when the run must end; also asks the state to stop.
    pub fn exhausted<S: HasExecutions + HasStartTime + Stoppable>(&self, state: &mut S) -> bool {
        if state.stop_requested() {
            return true;
        }
        if crate::interrupt::requested() {
            state.request_stop();
            return true;
        }
        let over_execs = self.max_execs.is_some_and(|n| *state.executions() >= n);
        let over_time = self.clock_due() && self.past_deadline(state);
        if over_execs || over_time {
            state.request_stop();
        }
        over_execs || over_time
    }
}

/// The broker of another run, as `HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteBroker(pub String);

/// Parses `HOST:PORT` for `--remote-broker`, resolving the host.
pub fn parse_remote_broker(text: &str) -> Result<RemoteBroker, String> {
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("`{text}` is not HOST:PORT"));
    };
    if host.is_empty() {
        return Err(format!("`{text}` names no host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(format!("`{port}` is not a port number (1-65535)")),
    }
    match text.to_socket_addrs().map(|mut addrs| addrs.next()) {
        Ok(Some(_)) => Ok(RemoteBroker(text.to_string())),
        Ok(None) => Err(format!("host `{host}` has no address")),
        Err(e) => Err(format!("cannot resolve host `{host}`: {e}")),
    }
}

/// A list of cores to run clients on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreList(pub Vec<usize>);

/// Parses a core list such as `0-3`, `0,2,5` or `all`, checking each core exists here.
pub fn parse_cores(text: &str) -> Result<CoreList, String> {
    let available = libafl_bolts::core_affinity::get_core_ids()
        .map(|ids| ids.len())
        .unwrap_or(1);
    parse_cores_on(text, available).map(CoreList)
}

/// [`parse_cores`] on a machine with `available` cores.
fn parse_cores_on(text: &str, available: usize) -> Result<Vec<usize>, String> {
    if text == "all" {
        return Ok((0..available).collect());
    }
    let number = |part: &str| -> Result<usize, String> {
        part.trim()
            .parse::<usize>()
            .map_err(|_| format!("`{part}` is not a core number"))
    };
    let mut cores = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (number(from)?, number(to)?);
                if from > to {
                    return Err(format!("`{part}` runs backwards (write {to}-{from})"));
                }
                cores.extend(from..=to);
            }
            None => cores.push(number(part)?),
        }
    }
    if let Some(&missing) = cores.iter().find(|&&c| c >= available) {
        return Err(format!(
            "core {missing} does not exist: this machine has cores 0-{}",
            available - 1
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(&twice) = cores.iter().find(|&&c| !seen.insert(c)) {
        return Err(format!("core {twice} is listed twice"));
    }
    Ok(cores)
}

/// When a part of the run that pays once edges run dry is on (`--cmp-progress 0|1|2`,
/// `--long-runs 0|1|2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// Never (`0`).
    Off,
    /// From the first execution (`1`).
    FromStart,
    /// Once the run's edges stall (`2`; [`crate::stages::EdgeStall`]), in every
    /// client of the run and in a later run in the same output directory.
    OnceStalled,
}

impl Switch {
    /// The mode a flag's value names (0, 1 or 2; the parser checks the range).
    #[must_use]
    pub fn from_flag(value: u8) -> Self {
        match value {
            0 => Switch::Off,
            1 => Switch::FromStart,
            _ => Switch::OnceStalled,
        }
    }

    /// Whether it is on in a process that starts where the run's edges have `stalled` or not.
    #[must_use]
    pub fn on_at_start(self, stalled: bool) -> bool {
        self == Switch::FromStart || (self == Switch::OnceStalled && stalled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_read_rarely_on_fast_checks_and_at_every_slow_one() {
        let limits = Limits::new(None, Some(Duration::from_secs(60)), false);
        let fast_reads = (0..1000).filter(|_| limits.clock_due()).count();
        assert!(
            (1000 / usize::from(MAX_STRIDE)..=1000 / usize::from(MAX_STRIDE) + 3)
                .contains(&fast_reads),
            "{fast_reads} readings in 1000 fast checks"
        );
        // Checks slower than CLOCK_EVERY: after at most one stride, every check reads it.
        let slow: Vec<bool> = (0..usize::from(MAX_STRIDE) + 6)
            .map(|_| {
                std::thread::sleep(CLOCK_EVERY + Duration::from_millis(2));
                limits.clock_due()
            })
            .collect();
        assert!(
            slow[usize::from(MAX_STRIDE)..].iter().all(|&due| due),
            "{slow:?}"
        );
    }

    #[test]
    fn core_lists_parse_like_libafl_and_nonsense_is_named() {
        assert_eq!(parse_cores_on("0-3", 8), Ok(vec![0, 1, 2, 3]));
        assert_eq!(parse_cores_on("0,2,5", 8), Ok(vec![0, 2, 5]));
        assert_eq!(parse_cores_on("1,3-4", 8), Ok(vec![1, 3, 4]));
        assert_eq!(parse_cores_on("all", 2), Ok(vec![0, 1]));
        for (text, needle) in [
            ("9-3", "`9-3` runs backwards"),
            ("0-7", "core 2 does not exist: this machine has cores 0-1"),
            ("x", "`x` is not a core number"),
            ("0,0", "core 0 is listed twice"),
            ("", "`` is not a core number"),
        ] {
            let err = parse_cores_on(text, 2).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn remote_brokers_are_host_and_port() {
        assert_eq!(
            parse_remote_broker("127.0.0.1:1337"),
            Ok(RemoteBroker("127.0.0.1:1337".into()))
        );
        assert!(parse_remote_broker("localhost:1337").is_ok());
        assert!(parse_remote_broker("[::1]:1337").is_ok());
        for (text, needle) in [
            ("1337", "is not HOST:PORT"),
            (":1337", "names no host"),
            ("localhost:", "is not a port number"),
            ("localhost:70000", "is not a port number"),
        ] {
            let err = parse_remote_broker(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
