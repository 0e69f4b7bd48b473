//! Multi-core and multi-machine runs on LibAFL's `Launcher`: one fuzzing client per core, each
//! under its own restarting supervisor, all connected to an LLMP broker in the launching
//! process.
//!
//! What travels: every input that improves a label of a client's table goes to the broker as a
//! `NewTestcase` event and on to every other client. A client receiving one runs it and keeps it if it improves its own table.
//! Keeping the simpler input per label does not depend on the order inputs arrive in, so the
//! tables converge on the same set. Crash reproducers are not sent: each client shrinks its own,
//! and `crashes/` keeps the simplest per label (see [`crate::crashes`]).

use std::net::{TcpListener, ToSocketAddrs};
use std::time::Duration;

use libafl::events::launcher::Launcher;
use libafl::events::{
    setup_restarting_mgr_llmp, ClientDescription, EventConfig, LlmpRestartingEventManager,
    ManagerKind, ShouldSaveState, StdLlmpEventHook,
};
use libafl::inputs::BytesInput;
use libafl::monitors::NopMonitor;
use libafl::Error;
use libafl_bolts::core_affinity::Cores;
use libafl_bolts::llmp::{Broker, Listener, LlmpBroker};
use libafl_bolts::shmem::{ShMemProvider, StdShMem, StdShMemProvider};
use libafl_bolts::tuples::tuple_list;

use super::Outcome;
use crate::config::{Config, RemoteBroker};
use crate::engine::{run_client, State};
use crate::error::LabelfuzzError;
use crate::output::OutputDir;
use crate::report::{Client, Summary};
use crate::start::StartInputs;

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

/// Whether this process still has a live child (a zombie, finished but not yet reaped, does not
/// count). The launching process's children are the clients' supervisors, and a supervisor
/// exits once its client has finished (or was killed).
fn has_live_children() -> bool {
    let me = std::process::id();
    let is_live = |pid: &str| {
        pid.parse()
            .ok()
            .and_then(crate::process::status)
            .is_some_and(|child| child.parent == me && child.is_running())
    };
    // Linux lists each thread's children.
    if let Ok(threads) = std::fs::read_dir(format!("/proc/{me}/task")) {
        let listed: Vec<String> = threads
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .collect();
        if !listed.is_empty() {
            return listed
                .iter()
                .flat_map(|children| children.split_whitespace())
                .any(is_live);
        }
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // Without /proc we cannot tell; LLMP's own count then decides alone.
        return true;
    };
    entries
        .flatten()
        .any(|entry| is_live(&entry.file_name().to_string_lossy()))
}

/// How often the broker looks for finished clients.
const CHILD_CHECK_EVERY: Duration = Duration::from_millis(100);

/// Runs the broker, linked to `remote` if given, until all `count` clients have finished.
fn run_broker(
    provider: &StdShMemProvider,
    port: u16,
    public: bool,
    remote: Option<&RemoteBroker>,
    count: usize,
) -> Result<(), Error> {
    let hooks = tuple_list!(StdLlmpEventHook::<BytesInput, NopMonitor>::new(
        NopMonitor::new()
    )?);
    // Reachable from other machines only when the user chose the port (other runs link to it);
    // LLMP has no authentication, so a port picked for us stays on loopback.
    let address = if public { "0.0.0.0" } else { "127.0.0.1" };
    let listener = TcpListener::bind((address, port))
        .map_err(|e| Error::illegal_state(format!("cannot listen on {address}:{port}: {e}")))?;
    let mut broker = LlmpBroker::new(provider.clone(), hooks)?;
    broker
        .inner_mut()
        .launch_listener(Listener::Tcp(listener))?;
    if let Some(remote) = remote {
        super::link::connect(&remote.0, port)?;
    }
    // Ctrl-C here sets the stop flag the clients share; they stop and finish.
    crate::interrupt::install_in_fuzzer();
    // LLMP's count of connected clients cannot tell when the run is over once a remote broker
    // is linked (the link is a client that never leaves), so the supervisors' exits do.
    let mut last_check = std::time::Instant::now();
    loop {
        let all_left =
            !broker.has_clients() && broker.num_clients_seen() - broker.nb_listeners() >= count;
        if all_left {
            return Ok(());
        }
        if last_check.elapsed() >= CHILD_CHECK_EVERY {
            last_check = std::time::Instant::now();
            if !has_live_children() {
                return Ok(());
            }
        }
        if !broker.broker_once()? {
            std::thread::sleep(BROKER_IDLE_SLEEP);
        }
    }
}

/// How long the broker sleeps when no client sent anything.
const BROKER_IDLE_SLEEP: Duration = Duration::from_millis(5);

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
    if let Some(remote) = &config.remote_broker {
        check_reachable(remote)?;
    }
    // Summaries of an earlier run's clients would be merged into this run's.
    let _ = std::fs::remove_dir_all(out.root().join("clients"));
    let count = cores.len();
    let mut finished: Option<Result<Summary, LabelfuzzError>> = None;
    let run = |restored: Option<State>, manager: LlmpManager, description: ClientDescription| {
        let client = Client {
            index: description.id(),
            count,
        };
        super::die_with_supervisor();
        let mut manager = manager;
        finished = Some(
            super::start_after_kill(config, out, start, client, restored.is_some(), &mut manager)
                .and_then(|restarted| {
                    let start = restarted.as_ref().unwrap_or(start);
                    run_client(config, target, out, start, restored, manager, client)
                }),
        );
        Ok(())
    };
    let provider = StdShMemProvider::new()?;
    let configuration = EventConfig::AlwaysUnique;
    let mut broker_failure = None;
    // Our own broker rather than `Launcher`'s: it links to a remote broker (which
    // `Launcher::launch` in LibAFL 0.16.1 ignores) and knows when its own clients are done
    // (LLMP's count of connected clients includes the link, which never leaves).
    let spawn = |_: &_, description: Option<ClientDescription>, _: Option<NopMonitor>| {
        let Some(client_description) = description else {
            let public = config.broker_port.is_some();
            let linked = config.remote_broker.as_ref();
            if let Err(e) = run_broker(&provider, broker_port, public, linked, count) {
                // The clients would go on without a broker: stop them.
                crate::interrupt::request_stop_all();
                broker_failure = Some(e);
            }
            return Err(Error::shutting_down());
        };
        // This process supervises one client; the launching process holds the broker. If
        // that is killed, the run is over: stop the client cleanly rather than leave it
        // fuzzing on as an orphan.
        super::die_with_supervisor();
        super::share_seen_filter();
        super::respawn::share_start_count();
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
    if let Some(e) = broker_failure {
        return Err(LabelfuzzError::Broker(e.to_string()));
    }
    launcher_outcome(launched, out, count)
}

/// What `Launcher::launch` returning means in a process that is not a fuzzing client: the
/// launching process's end of the run, or a client's supervisor after its client finished.
fn launcher_outcome(
    launched: Result<(), Error>,
    out: &OutputDir,
    count: usize,
) -> Result<Outcome, LabelfuzzError> {
    match launched {
        Ok(()) if crate::interrupt::failed() => Err(LabelfuzzError::FuzzerFailed),
        Ok(()) => Ok(Outcome {
            summary: merged_summary(out, count)?,
            supervisor: true,
        }),
        Err(Error::ShuttingDown) => std::process::exit(0),
        Err(e) => Err(e.into()),
    }
}

/// In the launching process, once every client has finished: clients that stopped at the same
/// moment may each have merged before the other's final summary was on disk, so the final ones
/// are merged here.
fn merged_summary(out: &OutputDir, count: usize) -> Result<Summary, LabelfuzzError> {
    Ok(match crate::report::summary::merge_clients(out, count) {
        Some(merged) => {
            out.write_summary(&merged)?;
            merged
        }
        None => crate::report::summary::read(out)?,
    })
}

/// The event manager of a client in a multi-core run.
type LlmpManager = LlmpRestartingEventManager<(), BytesInput, State, StdShMem, StdShMemProvider>;

/// Fails with a clear message when nothing listens there, before any process is started.
fn check_reachable(remote: &RemoteBroker) -> Result<(), LabelfuzzError> {
    let address = remote
        .0
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| LabelfuzzError::Broker(format!("cannot resolve {}", remote.0)))?;
    std::net::TcpStream::connect_timeout(&address, super::link::CONNECT_TIMEOUT)
        .map(drop)
        .map_err(|e| {
            LabelfuzzError::Broker(format!("cannot reach the remote broker {}: {e}", remote.0))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_without_children_has_no_live_children() {
        let _children = crate::TEST_CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        assert!(!has_live_children());
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep starts");
        assert!(has_live_children());
        child.kill().expect("kill");
        // Killed but not yet reaped: a zombie is not alive.
        let killed = std::time::Instant::now();
        while has_live_children() {
            assert!(killed.elapsed() < Duration::from_secs(5), "the child died");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait().expect("reaped");
    }
}
