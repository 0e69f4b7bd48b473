//! What a recorded signal site says: the signal's name, the crash kind, the symbolized frames
//! of the target, and the recursion collapsing that gives one label to one recursive bug.

use super::*;

impl SignalSite {
    /// The signal's name, e.g. `SIGSEGV`.
    #[must_use]
    pub fn signal_name(&self) -> String {
        crate::interference::signal_name(self.signal)
    }

    /// The crash kind: a sanitizer's report, `exit()`, the memory limit, a stack overflow or
    /// another signal.
    #[must_use]
    pub fn kind(&self) -> crate::labels::CrashKind {
        use crate::labels::CrashKind;
        match self.cause {
            AbortCause::Sanitizer(_) => CrashKind::Sanitizer,
            AbortCause::Exit => CrashKind::Exit,
            AbortCause::OutOfMemory | AbortCause::MemoryGrowth => CrashKind::Oom,
            AbortCause::Fault if self.stack_overflow => CrashKind::StackOverflow,
            AbortCause::Fault => CrashKind::Signal,
        }
    }

    /// The label location and the site frames kept with the crash (for people: the first frame
    /// of each function named in the location).
    ///
    /// The location is the signal, the faulting function (with the instruction's offset in it)
    /// and its nearest callers, recursion collapsed, so one bug is one label however deep a
    /// recursive parser reached it; for a stack overflow, the functions of the recursive cycle
    /// (which instruction faults depends on how deep the input made it go); none for running
    /// out of memory (one label, as the site is wherever the target was). The frames are
    /// symbolized once for both.
    #[must_use]
    pub fn location_and_frames(&self) -> (String, Vec<usize>) {
        match self.cause {
            AbortCause::OutOfMemory => return (String::new(), Vec::new()),
            AbortCause::MemoryGrowth => {
                return ("memory grew across executions".to_string(), Vec::new())
            }
            _ => {}
        }
        let functions = self.functions();
        // Standard-library frames below the program's first say how it reached the fault
        // (`std::process::abort`); above it (an iterator adapter between two of the program's
        // functions, a thread's start) they differ between toolchains and say nothing of it.
        let mut in_program = false;
        let path: Vec<(usize, String)> = collapse_recursion(&function_path(&functions))
            .into_iter()
            .filter(|(_, name)| {
                let library = is_standard_library_function(name);
                let keep = !library || !in_program;
                in_program |= !library;
                keep
            })
            .collect();
        let site_frames: Vec<usize> = path
            .iter()
            .take(SITE_FUNCTIONS)
            .filter_map(|(start, _)| functions.iter().find(|(_, s, _)| s == start))
            .map(|(frame, _, _)| *frame)
            .collect();
        // The faulting source line (with debug information) or function with the instruction's
        // offset, then the nearest callers on the collapsed path: `calc.c:42 in parse_term <
        // parse_expr < parse`, or `parse_term+0x2a < parse_expr < parse`.
        let site = match functions.first() {
            None => String::new(),
            Some((frame, start, name)) => {
                let (head, faulting_function) = self.fault_head(*frame, *start, name);
                // The head names the faulting function; where the fault was inlined, the
                // function it was inlined into is the first caller.
                let callers = path
                    .iter()
                    .map(|(_, n)| n.clone())
                    .skip_while(|n| *n == faulting_function)
                    .take(SITE_FUNCTIONS - 1);
                std::iter::once(head)
                    .chain(callers)
                    .collect::<Vec<_>>()
                    .join(" < ")
            }
        };
        let location = match &self.cause {
            AbortCause::Sanitizer(report) => format!("{} {} at {site}", report.tool, report.bug),
            AbortCause::Fault if self.stack_overflow => {
                let cycle = recursive_cycle(&function_path(&functions));
                if cycle.is_empty() {
                    format!("stack overflow at {site}")
                } else {
                    format!("stack overflow in recursion {}", cycle.join(" < "))
                }
            }
            _ => format!("{} at {site}", self.signal_name()),
        };
        (location, site_frames)
    }

    /// The head of the site: the faulting source line and the function it was written in
    /// (the innermost inlined one) where debug information has them, so that copies of one
    /// line the compiler inlined or duplicated are one label; else the function and the
    /// instruction's offset in it.
    /// Returns the head and the function it names.
    fn fault_head(&self, frame: usize, start: usize, name: &str) -> (String, String) {
        let exact = self.frames.first() == Some(&frame) && self.faulted_in_executable;
        let lookup = if exact {
            frame
        } else {
            frame.saturating_sub(1)
        };
        // Innermost inlined call first; the standard library's inlined code (`black_box`, a
        // slice check) is where every program faults alike, so its caller's line is taken.
        let in_program = frame_lines(lookup).into_iter().find(|line| {
            line.source_line
                .as_deref()
                .is_some_and(|source| !in_standard_library(source))
        });
        match in_program {
            Some(StackLine {
                source_line: Some(line),
                function,
                ..
            }) => (format!("{line} in {function}"), function),
            _ => (format!("{name}+{:#x}", frame - start), name.to_string()),
        }
    }

    /// The target's frames with their functions, innermost first: `(frame, start, name)`, an
    /// unknown function named by the frame's offset. labelfuzz's own frames (the exit guard,
    /// the call into the target) are left out: they are the same for every bug.
    fn functions(&self) -> Vec<(usize, usize, String)> {
        let table = crate::symbols::functions();
        self.frames
            .iter()
            .enumerate()
            .map(|(i, &frame)| {
                // A return address points after its call, which may be a function's last
                // instruction (a call to `abort`): look the call itself up.
                let exact = i == 0 && self.faulted_in_executable;
                let lookup = if exact {
                    frame
                } else {
                    frame.saturating_sub(1)
                };
                match table.function_at(lookup) {
                    Some(f) => (frame, f.start, f.name.to_string()),
                    None => (frame, frame, format!("exe+{frame:#x}")),
                }
            })
            .filter(|(_, _, name)| !is_fuzzer_function(name))
            .scan(false, |below_body, frame| {
                let entry = *below_body && frame.2 == "LLVMFuzzerTestOneInput";
                *below_body |= is_fuzz_target_body(&frame.2);
                Some((!entry).then_some(frame))
            })
            .flatten()
            .collect()
    }

    /// A short description for people: the sanitizer's bug, or the signal's name.
    #[must_use]
    pub fn message(&self) -> String {
        match &self.cause {
            AbortCause::Sanitizer(report) => format!("{}: {}", report.tool, report.bug),
            AbortCause::OutOfMemory => "out of memory (--rss-limit-mb)".into(),
            AbortCause::MemoryGrowth => "out of memory (--rss-limit-mb): the process was near \
                the limit before this input ran, so memory grew across executions (a leak, or a \
                cache that never shrinks) and this input alone may stay under the limit"
                .into(),
            AbortCause::Fault | AbortCause::Exit => self.signal_name(),
        }
    }

    /// The functions of the site frames, innermost first, for people (not part of the label).
    #[must_use]
    pub fn symbol(&self) -> String {
        describe_frames(&self.frames)
    }
}

/// Names the functions at `frames` (offsets in the executable), innermost first. Slow the first
/// time in a process (it reads the debug information): call it once per new crash label, not
/// per crash.
#[must_use]
pub fn describe_frames(frames: &[usize]) -> String {
    let names: Vec<String> = frames
        .iter()
        .map(|&frame| {
            // The last symbol is the real function (the ones before it were inlined into it).
            frame_lines(frame)
                .pop()
                .map_or_else(|| format!("exe+{frame:#x}"), |line| line.function)
        })
        .collect();
    names.join(" < ")
}

/// One symbolized frame in a sanitizer-style stack line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackLine {
    /// The instruction's address in this process.
    pub address: usize,
    /// The function (demangled, without Rust's hash), or `exe+0x…` when unknown.
    pub function: String,
    /// `file:line:col` where debug information has it.
    pub source: Option<String>,
    /// `file:line`, the same without the column (two expressions of one line are one site).
    pub source_line: Option<String>,
}

/// The functions at `frame` (an offset in the executable), innermost inlined call first and
/// the real function last; empty when nothing is known of it.
pub fn frame_lines(frame: usize) -> Vec<StackLine> {
    super::locate_executable();
    let address = EXE_BASE.load(Ordering::Relaxed) + frame;
    let mut lines = Vec::new();
    backtrace::resolve(address as *mut c_void, |symbol| {
        let source_line = match (symbol.filename(), symbol.lineno()) {
            (Some(file), Some(line)) => Some(format!("{}:{line}", file.display())),
            _ => None,
        };
        let source = match (&source_line, symbol.colno()) {
            (Some(line), Some(col)) => Some(format!("{line}:{col}")),
            (line, _) => line.clone(),
        };
        lines.push(StackLine {
            address,
            function: symbol
                .name()
                .map_or_else(|| format!("exe+{frame:#x}"), |n| format!("{n:#}")),
            source,
            source_line,
        });
    });
    lines
}

/// The frames (offsets in the executable, innermost first) as sanitizer-style stack lines, one a
/// function (a frame with inlined calls gives one line for each, innermost first).
#[must_use]
pub fn stack_lines(frames: &[usize]) -> Vec<StackLine> {
    let mut lines = Vec::new();
    for &frame in frames {
        let resolved = frame_lines(frame);
        if resolved.is_empty() {
            lines.push(StackLine {
                address: EXE_BASE.load(Ordering::Relaxed) + frame,
                function: format!("exe+{frame:#x}"),
                source: None,
                source_line: None,
            });
        } else {
            lines.extend(resolved);
        }
    }
    lines
}

/// The calling thread's stack as offsets in the executable, innermost first (at most `limit`
/// frames; frames outside the executable, in shared libraries, are left out).
#[must_use]
pub fn current_stack(limit: usize) -> Vec<usize> {
    super::locate_executable();
    let base = EXE_BASE.load(Ordering::Relaxed);
    let (start, end) = (
        super::EXE_START.load(Ordering::Relaxed),
        super::EXE_END.load(Ordering::Relaxed),
    );
    let mut frames = Vec::with_capacity(limit);
    backtrace::trace(|frame| {
        let ip = frame.ip() as usize;
        if (start..end).contains(&ip) && ip > base {
            // The return address points after the call: one byte back names the call's line.
            frames.push(ip - base - 1);
        }
        frames.len() < limit
    });
    frames
}

/// `(start, name)` of each frame's function.
fn function_path(functions: &[(usize, usize, String)]) -> Vec<(usize, String)> {
    functions
        .iter()
        .map(|(_, start, name)| (*start, name.clone()))
        .collect()
}

/// The call path with recursion collapsed: walking outwards from the innermost frame, a
/// function met again ends a loop, and the frames of the loop are dropped. A path that went
/// `term < expr < factor < term < expr < parse` becomes `term < expr < parse`, the same as
/// without recursion.
#[must_use]
pub fn collapse_recursion(functions: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut path: Vec<(usize, String)> = Vec::new();
    for function in functions {
        match path.iter().position(|(start, _)| *start == function.0) {
            Some(i) => path.truncate(i + 1),
            None => path.push(function.clone()),
        }
    }
    path
}

/// The functions of the innermost recursive cycle (innermost first), rotated to start at the
/// smallest name so that where the stack ran out does not change the label; empty when no
/// function repeats.
#[must_use]
pub fn recursive_cycle(functions: &[(usize, String)]) -> Vec<String> {
    // The cycle closes at the first frame whose function was met before, nearer the fault.
    let closing = functions.iter().enumerate().find_map(|(j, f)| {
        functions[..j]
            .iter()
            .position(|g| g.0 == f.0)
            .map(|i| (i, j))
    });
    let Some((i, j)) = closing else {
        return Vec::new();
    };
    let cycle: Vec<String> = functions[i..j].iter().map(|(_, n)| n.clone()).collect();
    let first = (0..cycle.len())
        .min_by(|&a, &b| cycle[a].cmp(&cycle[b]))
        .unwrap_or(0);
    cycle[first..]
        .iter()
        .chain(&cycle[..first])
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(names: &[&str]) -> Vec<(usize, String)> {
        // A function's start stands for its identity: derive it from the name.
        names
            .iter()
            .map(|n| (n.bytes().map(usize::from).sum(), (*n).to_string()))
            .collect()
    }

    fn names(path: &[(usize, String)]) -> Vec<&str> {
        path.iter().map(|(_, n)| n.as_str()).collect()
    }

    #[test]
    fn recursion_collapses_to_the_path_without_it() {
        let direct = path(&["term", "expr", "parse"]);
        let deep = path(&[
            "term", "expr", "factor", "term", "expr", "factor", "term", "expr", "parse",
        ]);
        assert_eq!(
            names(&collapse_recursion(&direct)),
            ["term", "expr", "parse"]
        );
        assert_eq!(collapse_recursion(&deep), collapse_recursion(&direct));
        let through_unary = path(&["term", "expr", "factor", "unary", "factor", "term", "expr"]);
        assert_eq!(names(&collapse_recursion(&through_unary)), ["term", "expr"]);
    }

    #[test]
    fn a_recursive_cycle_does_not_depend_on_where_the_stack_ran_out() {
        let a = path(&["memset", "b", "c", "a", "b", "c", "a", "b"]);
        let b = path(&["c", "a", "b", "c", "a", "b", "c"]);
        assert_eq!(recursive_cycle(&a), ["a", "b", "c"]);
        assert_eq!(recursive_cycle(&b), ["a", "b", "c"]);
        assert_eq!(recursive_cycle(&path(&["f", "f", "f"])), ["f"]);
        assert!(recursive_cycle(&path(&["f", "g"])).is_empty());
    }
}
