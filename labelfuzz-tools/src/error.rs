//! The tools' error type: what was being done, on which file, and why it failed.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A failure of a tool, worded for the user.
#[derive(Debug)]
pub enum ToolError {
    /// A file system operation failed.
    Io {
        /// What was being done ("write", "read", ...).
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// Something the tool needs is missing or failed (llvm-cov, a profile), with what to do.
    Usage(String),
}

impl ToolError {
    /// An I/O error on `path` while doing `action`.
    #[must_use]
    pub fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        ToolError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// A file at `path` that is not what it should be (`what` says why).
    #[must_use]
    pub fn unreadable(path: &Path, what: impl fmt::Display) -> Self {
        ToolError::io(
            "parse",
            path,
            io::Error::new(io::ErrorKind::InvalidData, what.to_string()),
        )
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
            ToolError::Usage(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolError::Io { source, .. } => Some(source),
            ToolError::Usage(_) => None,
        }
    }
}
