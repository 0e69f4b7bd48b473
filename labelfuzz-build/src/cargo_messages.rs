//! Cargo's JSON build messages (`--message-format=json-render-diagnostics`), read with
//! `cargo_metadata`'s types: one loop for every cargo build this crate runs.

use std::process::{Command, ExitStatus, Stdio};

use cargo_metadata::Message;

use crate::BuildError;

/// Runs `command` (a cargo build asked for JSON messages), hands every message to `handle`, and
/// prints the rendered diagnostics `handle` did not take (it returns `true` for those it did).
/// Returns cargo's exit status; `step` names the build in errors.
pub fn stream(
    mut command: Command,
    step: &str,
    mut handle: impl FnMut(&Message) -> bool,
) -> Result<ExitStatus, BuildError> {
    command.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = command
        .spawn()
        .map_err(|e| BuildError::tool(step, format!("cannot start cargo: {e}")))?;
    let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout is piped"));
    for message in Message::parse_stream(stdout).flatten() {
        if handle(&message) {
            continue;
        }
        if let Message::CompilerMessage(message) = &message {
            if let Some(rendered) = &message.message.rendered {
                eprint!("{rendered}");
            }
        }
    }
    child
        .wait()
        .map_err(|e| BuildError::tool(step, e.to_string()))
}
