//! What can go wrong while building a fuzz target, worded for the user.

use std::path::{Path, PathBuf};

/// A failed build step.
#[derive(Debug)]
pub enum BuildError {
    /// A file or directory operation failed.
    Io {
        /// What was being done (`read`, `create`, …).
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A tool (cargo, rustc, the linker, objcopy, ar) could not be started or failed.
    Tool {
        /// What was being done.
        step: String,
        /// The tool's own words (its stderr's tail), or why it did not start.
        detail: String,
    },
    /// `cargo metadata` failed or described something unexpected.
    Metadata(String),
    /// The crate is not something that can be built as a fuzz target.
    Project(String),
}

impl BuildError {
    /// An I/O failure on `path` while doing `action`.
    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// A tool failure during `step`.
    pub fn tool(step: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Tool {
            step: step.into(),
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
            Self::Tool { step, detail } if detail.is_empty() => write!(f, "{step} failed"),
            Self::Tool { step, detail } => write!(f, "{step} failed: {detail}"),
            Self::Metadata(message) => write!(f, "cargo metadata: {message}"),
            Self::Project(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Runs `command` for `step`; its stdout on success, an error with its stderr's tail otherwise.
pub(crate) fn run(command: &mut std::process::Command, step: &str) -> Result<Vec<u8>, BuildError> {
    let output = command
        .output()
        .map_err(|e| BuildError::tool(step, format!("cannot start: {e}")))?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(BuildError::tool(step, tail.join("\n")))
}
