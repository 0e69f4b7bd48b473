//! The library's error type: every failure a user can cause, with what and where.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in labelfuzz that is not a bug in labelfuzz.
#[derive(Debug)]
pub enum LabelfuzzError {
    /// A file system operation failed.
    Io {
        /// What was being done ("write", "read", ...).
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A command-line value makes no sense.
    Usage(String),
    /// The target reports no SanitizerCoverage edges: it was built without instrumentation.
    NotInstrumented,
    /// A crash reproducer could not be written to the output directory; the message says where
    /// the crash is kept instead.
    CrashNotSaved(String),
    /// A fuzzing process stopped on an error, which it reported itself.
    FuzzerFailed,
    /// The multi-core broker or its link to a remote broker failed.
    Broker(String),
    /// Another run is writing to the output directory.
    OutputInUse {
        /// The output directory.
        dir: PathBuf,
        /// The process that holds it, if it said.
        holder: Option<u32>,
    },
    /// LibAFL reported an error.
    Libafl(libafl::Error),
}

impl LabelfuzzError {
    /// An I/O error on `path` while doing `action`.
    #[must_use]
    pub fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        LabelfuzzError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for LabelfuzzError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelfuzzError::Io {
                action,
                path,
                source,
            } => {
                write!(f, "cannot {action} {}: {source}", path.display())?;
                if source.kind() == io::ErrorKind::StorageFull {
                    f.write_str(
                        "; free some space and run the same command again: the run resumes \
                         from its output directory",
                    )?;
                }
                Ok(())
            }
            LabelfuzzError::Usage(msg) => f.write_str(msg),
            LabelfuzzError::NotInstrumented => f.write_str(
                "the target has no SanitizerCoverage edges: build it with `cargo make fuzz-target` \
                 (Rust) or `labelfuzz-cc` (C/C++) so that labelfuzz can see its coverage",
            ),
            LabelfuzzError::CrashNotSaved(msg) => f.write_str(msg),
            LabelfuzzError::FuzzerFailed => {
                f.write_str("the fuzzing process stopped on the error above")
            }
            LabelfuzzError::Broker(msg) => write!(f, "broker: {msg}"),
            LabelfuzzError::OutputInUse { dir, holder } => {
                write!(f, "{} is in use by another labelfuzz run", dir.display())?;
                if let Some(pid) = holder {
                    write!(f, " (process {pid})")?;
                }
                f.write_str(
                    ": two runs on one output directory would overwrite each other's corpus \
                     and summary; give this one another -o, or stop the other first",
                )
            }
            // Our own errors that travelled through LibAFL's stages and feedbacks.
            LabelfuzzError::Libafl(libafl::Error::IllegalState(msg, _)) => f.write_str(msg),
            LabelfuzzError::Libafl(e) => write!(f, "LibAFL: {e}"),
        }
    }
}

impl std::error::Error for LabelfuzzError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LabelfuzzError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<labelfuzz_tools::ToolError> for LabelfuzzError {
    fn from(e: labelfuzz_tools::ToolError) -> Self {
        match e {
            labelfuzz_tools::ToolError::Io {
                action,
                path,
                source,
            } => LabelfuzzError::Io {
                action,
                path,
                source,
            },
            labelfuzz_tools::ToolError::Usage(msg) => LabelfuzzError::Usage(msg),
        }
    }
}

impl From<libafl::Error> for LabelfuzzError {
    fn from(e: libafl::Error) -> Self {
        LabelfuzzError::Libafl(e)
    }
}
