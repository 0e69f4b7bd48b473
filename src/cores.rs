//! Multi-core and multi-machine runs on LibAFL's `Launcher`: one fuzzing client per core, each
//! under its own restarting supervisor, all connected to an LLMP broker in the launching
//! process.
//!
//! What travels: every input that improves a label of a client's table goes to the broker as a
//! `NewTestcase` event and on to every other client. A client receiving one runs it and keeps it if it improves its own table.
//! Keeping the simpler input per label does not depend on the order inputs arrive in, so the
//! tables converge on the same set. Crash reproducers are not sent: each client shrinks its own,
//! and `crashes/` keeps the simplest per label (see [`crate::crashes`]).

use std::net::TcpListener;
use std::num::NonZeroUsize;
use std::time::Duration;

use libafl::events::launcher::Launcher;
use libafl::events::{
    setup_restarting_mgr_llmp, ClientDescription, EventConfig, ManagerKind, ShouldSaveState,
    StdLlmpEventHook,
};
use libafl::inputs::BytesInput;
use libafl::monitors::NopMonitor;
use libafl::Error;
use libafl_bolts::core_affinity::Cores;
use libafl_bolts::llmp::{Broker, LlmpBroker};
use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
use libafl_bolts::tuples::tuple_list;

use crate::engine::{run_client, Client, Config, Outcome, StartInputs, State};
use crate::error::LabelfuzzError;
use crate::output::OutputDir;
use crate::report::Summary;

/// A TCP port that is free now, for a run that names none: two runs on one machine must not
/// share a broker.
fn free_port() -> Result<u16, LabelfuzzError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| {
        LabelfuzzError::io("find a free port", std::path::Path::new("127.0.0.1"), e)
    })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| LabelfuzzError::io("find a free port", std::path::Path::new("127.0.0.1"), e))
}

/// Runs one client per core in `cores`. Returns in the launching process once every client has
/// finished (with the merged summary) and in each fuzzing process when it finishes; the
/// processes that only supervise a client exit here.
pub(crate) fn fuzz_on_cores(
    config: &Config,
    target: &mut dyn FnMut(&[u8]),
    out: &OutputDir,
    start: &StartInputs,
    cores: &[usize],
) -> Result<Outcome, LabelfuzzError> {
    let listed: Vec<String> = cores.iter().map(ToString::to_string).collect();
    let cores_spec = Cores::from_cmdline(&listed.join(","))?;
    let broker_port = match config.broker_port {
        Some(port) => port,
        None => free_port()?,
    };
    // Summaries of an earlier run's clients would be merged into this run's.
    let _ = std::fs::remove_dir_all(out.root().join("clients"));
    let count = cores.len();
    let mut finished: Option<Result<Summary, LabelfuzzError>> = None;
    let run = |restored: Option<State>, manager, description: ClientDescription| {
        let client = Client {
            index: description.id(),
            count,
        };
        finished = Some(run_client(
            config, target, out, start, restored, manager, client,
        ));
        Ok(())
    };
    let provider = StdShMemProvider::new()?;
    let configuration = EventConfig::AlwaysUnique;
    // The broker is set up here rather than by `Launcher::launch`, which in LibAFL 0.16.1
    // ignores `remote_broker_addr`: the place where a broker-to-broker link will be made.
    let spawn = |_: &_, description: Option<ClientDescription>, monitor: Option<NopMonitor>| {
        let Some(client_description) = description else {
            let hook =
                StdLlmpEventHook::<BytesInput, NopMonitor>::new(monitor.unwrap_or_default())?;
            let mut broker =
                LlmpBroker::create_attach_to_tcp(provider.clone(), tuple_list!(hook), broker_port)?;
            if let Some(clients) = NonZeroUsize::new(count) {
                broker.set_exit_after(clients);
            }
            broker.loop_with_timeouts(Duration::from_secs(30), Some(Duration::from_millis(5)));
            return Err(Error::shutting_down());
        };
        setup_restarting_mgr_llmp(
            provider.clone(),
            configuration,
            None::<NopMonitor>,
            broker_port,
            ManagerKind::Client { client_description },
            None,
            ShouldSaveState::OnRestart,
            tuple_list!(),
        )
    };
    let launched = Launcher::builder()
        .shmem_provider(provider.clone())
        // Receivers run each input themselves rather than trusting a serialized edge map:
        // cheaper to send, and every client computes its own labels.
        .configuration(configuration)
        .monitor(NopMonitor::new())
        .run_client(run)
        .cores(&cores_spec)
        .broker_port(broker_port)
        .build()
        .launch_with_manager(spawn);
    if let Some(result) = finished {
        // A fuzzing client.
        return result.map(|summary| Outcome {
            summary,
            supervisor: false,
        });
    }
    match launched {
        // The launching process: the broker has seen every client finish.
        Ok(()) => Ok(Outcome {
            summary: Summary::read(out)?,
            supervisor: true,
        }),
        // A client's supervisor, after its client finished.
        Err(Error::ShuttingDown) => std::process::exit(0),
        Err(e) => Err(e.into()),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
