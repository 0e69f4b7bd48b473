//! `labelfuzz-cc` and `labelfuzz-cxx`: drop-in replacements for `clang -fsanitize=fuzzer`.
//!
//! Every compilation gets SanitizerCoverage (pc-guard edges, counted into hit-count buckets by
//! the engine). Everything else passes through to clang-19 through LibAFL's [`ClangWrapper`].
//! What happens at link time depends on what is linked:
//!
//! | invocation                                   | links                                   |
//! |----------------------------------------------|-----------------------------------------|
//! | `-c`, `-S`, `-E`, `-M`/`-MM`, `-shared`      | nothing extra                           |
//! | executable with `-fsanitize=fuzzer`          | the labelfuzz harness (provides `main`) |
//! | executable with `-fsanitize=fuzzer-no-link`  | empty coverage callbacks                |
//! | executable defining `LLVMFuzzerTestOneInput` | the labelfuzz harness                   |
//! | any other executable                         | empty coverage callbacks                |
//!
//! So `CC=labelfuzz-cc ./configure && make` works (configure's probes and a library's own tools
//! link without the harness), and a libFuzzer harness plus a static library becomes a fuzzer.
//! Other sanitizers in `-fsanitize=` lists (`address`, `undefined`, ...) are kept.
//!
//! The harness, `liblabelfuzz_harness.a`, is looked up next to the wrapper's own executable
//! (`cargo build --release` puts both in `target/release/`) or in `$LABELFUZZ_HARNESS_DIR`.

use std::env;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use libafl_cc::{ClangWrapper, CompilerWrapper, ToolWrapper};

mod build;
pub mod conditions;
pub mod dictionary;
mod llvm;
pub mod plugin;

use build::Build;

pub use llvm::{defines_fuzz_entry, Llvm};

/// The LLVM major version the wrapper drives.
pub const LLVM_MAJOR: u32 = 19;

/// The symbol that makes an executable a libFuzzer-style fuzzer.
pub const FUZZ_ENTRY: &str = "LLVMFuzzerTestOneInput";

/// File name of the harness static library.
pub const HARNESS_LIB: &str = "liblabelfuzz_harness.a";

/// The weak no-op coverage callbacks for executables that are not fuzzers (built by `build.rs`).
const SANCOV_STUBS: &str = concat!(env!("OUT_DIR"), "/liblabelfuzz_sancov_stubs.a");

/// Libraries a Rust static library needs from the system (`rustc --print native-static-libs`).
const RUST_NATIVE_LIBS: [&str; 6] = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// Why the wrapper could not run clang.
#[derive(Debug)]
pub enum WrapperError {
    /// clang-19 is not installed where the wrapper looks.
    ClangMissing(Vec<PathBuf>),
    /// The harness library is not where the wrapper looks.
    HarnessMissing(Vec<PathBuf>),
    /// An argument is not valid UTF-8 (LibAFL's wrapper works on strings).
    NonUnicodeArgument(OsString),
    /// LibAFL's wrapper rejected the command line, or clang could not be started.
    Clang(String),
}

impl fmt::Display for WrapperError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClangMissing(looked) => write!(
                f,
                "clang-{LLVM_MAJOR} not found (looked in {}). Install it with \
                 `sudo apt-get install clang-{LLVM_MAJOR} llvm-{LLVM_MAJOR} lld-{LLVM_MAJOR} libclang-rt-{LLVM_MAJOR}-dev` \
                 or run `bash scripts/bootstrap.sh` in the labelfuzz repository; \
                 LABELFUZZ_LLVM_BIN=<dir> points at another LLVM {LLVM_MAJOR} bin directory",
                join_paths(looked)
            ),
            Self::HarnessMissing(looked) => write!(
                f,
                "the labelfuzz harness {HARNESS_LIB} is missing (looked in {}). Build it with \
                 `cargo build --release` in the labelfuzz repository, or set LABELFUZZ_HARNESS_DIR",
                join_paths(looked)
            ),
            Self::NonUnicodeArgument(arg) => {
                write!(f, "argument {arg:?} is not valid UTF-8")
            }
            Self::Clang(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for WrapperError {}

fn join_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}

/// What a compiler invocation produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Objects, assembly or preprocessed text (`-c`, `-S`, `-E`, `-M`, `-MM`).
    Compiled,
    /// A shared object (`-shared`): its coverage callbacks resolve when it is loaded.
    SharedObject,
    /// An executable.
    Executable,
    /// No input at all (`-v`, `--version`, `-print-...`): clang only answers a question.
    Query,
}

/// What the command line asks for the fuzzer runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuzzerRequest {
    /// `-fsanitize=fuzzer`: link the harness.
    Link,
    /// `-fsanitize=fuzzer-no-link`: instrument only.
    NoLink,
    /// Neither: link the harness if the executable defines [`FUZZ_ENTRY`].
    Auto,
}

/// A command line, read the way clang reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The arguments for clang, with `fuzzer` and `fuzzer-no-link` taken out of `-fsanitize=`.
    pub args: Vec<String>,
    /// What is produced.
    pub output: Output,
    /// What was asked of the fuzzer runtime.
    pub fuzzer: FuzzerRequest,
    /// Input files (sources, objects, archives) named on the command line.
    pub inputs: Vec<PathBuf>,
    /// The output file `-o` names, if it does.
    pub output_file: Option<PathBuf>,
}

/// Options whose value is the next argument (so the value is not an input file).
const OPTIONS_WITH_VALUE: [&str; 21] = [
    "-I",
    "-L",
    "-D",
    "-U",
    "-x",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iquote",
    "-isysroot",
    "-MF",
    "-MT",
    "-MQ",
    "-Xlinker",
    "-Xclang",
    "-Xassembler",
    "-Xpreprocessor",
    "-mllvm",
    "-target",
    "--param",
];

impl Invocation {
    /// Reads a command line (without the program name).
    #[must_use]
    pub fn parse(args: &[String]) -> Self {
        let mut kept = Vec::with_capacity(args.len());
        let mut fuzzer = FuzzerRequest::Auto;
        let mut compiled = false;
        let mut shared = false;
        let mut inputs = Vec::new();
        let mut output_file = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if let Some(list) = arg.strip_prefix("-fsanitize=") {
                let mut others = Vec::new();
                for sanitizer in list.split(',') {
                    match sanitizer {
                        "fuzzer" => fuzzer = FuzzerRequest::Link,
                        "fuzzer-no-link" if fuzzer != FuzzerRequest::Link => {
                            fuzzer = FuzzerRequest::NoLink;
                        }
                        "fuzzer-no-link" => {}
                        other => others.push(other),
                    }
                }
                if !others.is_empty() {
                    kept.push(format!("-fsanitize={}", others.join(",")));
                }
                continue;
            }
            // OSS-Fuzz's older spelling of the engine: a library named on the link line.
            if arg == "-lFuzzingEngine" {
                fuzzer = FuzzerRequest::Link;
                continue;
            }
            kept.push(arg.clone());
            match arg.as_str() {
                "-c" | "-S" | "-E" | "-M" | "-MM" => compiled = true,
                "-shared" => shared = true,
                "-o" => {
                    if let Some(value) = iter.next() {
                        output_file = Some(PathBuf::from(value));
                        kept.push(value.clone());
                    }
                }
                option if OPTIONS_WITH_VALUE.contains(&option) => {
                    if let Some(value) = iter.next() {
                        kept.push(value.clone());
                    }
                }
                input if !input.starts_with('-') && input != "." => inputs.push(input.into()),
                _ => {}
            }
        }
        let output = if compiled {
            Output::Compiled
        } else if shared {
            Output::SharedObject
        } else if inputs.is_empty() {
            Output::Query
        } else {
            Output::Executable
        };
        Self {
            args: kept,
            output,
            fuzzer,
            inputs,
            output_file,
        }
    }
}

/// The directory holding the harness library: `$LABELFUZZ_HARNESS_DIR`, else the directory of
/// the running wrapper.
///
/// # Errors
/// [`WrapperError::HarnessMissing`] naming every place looked at.
pub fn harness_dir() -> Result<PathBuf, WrapperError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = env::var_os("LABELFUZZ_HARNESS_DIR") {
        candidates.push(dir.into());
    }
    if let Some(dir) = env::current_exe()
        .ok()
        .and_then(|exe| fs::canonicalize(exe).ok())
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        candidates.push(dir);
    }
    match candidates
        .iter()
        .find(|dir| dir.join(HARNESS_LIB).is_file())
    {
        Some(dir) => Ok(dir.clone()),
        None => Err(WrapperError::HarnessMissing(candidates)),
    }
}

/// Runs clang for `args` (program name first) and returns its exit code.
///
/// # Errors
/// Any [`WrapperError`]: clang or the harness missing, or clang failing to start.
pub fn compile(cpp: bool, args: Vec<OsString>) -> Result<i32, WrapperError> {
    let args = args
        .into_iter()
        .map(|arg| arg.into_string().map_err(WrapperError::NonUnicodeArgument))
        .collect::<Result<Vec<String>, _>>()?;
    let Some((program, rest)) = args.split_first() else {
        return Err(WrapperError::Clang("no program name".into()));
    };
    let llvm = Llvm::find()?;
    let invocation = Invocation::parse(rest);
    let link_harness = invocation.output == Output::Executable
        && match invocation.fuzzer {
            FuzzerRequest::Link => true,
            FuzzerRequest::NoLink => false,
            FuzzerRequest::Auto => defines_fuzz_entry(&llvm, &invocation.inputs),
        };

    if invocation.output == Output::Compiled && invocation.output_file.is_none() {
        // LibAFL's wrapper would invent an `-o` (next to the source, or one for several
        // sources, or instead of stdout for `-E`); clang's own defaults are what builds expect.
        let mut command = Command::new(llvm.tool(if cpp { "clang++" } else { "clang" }));
        command.args(&invocation.args);
        command.args(Build::from_env().flags(true));
        command.args(Build::from_env().condition_flags(&invocation));
        let status = command
            .status()
            .map_err(|e| WrapperError::Clang(format!("could not run clang: {e}")))?;
        return Ok(status.code().unwrap_or(1));
    }

    let mut clang = ClangWrapper::new();
    clang
        .wrapped_cc(llvm.tool("clang"))
        .wrapped_cxx(llvm.tool("clang++"))
        .cpp(cpp)
        // Optimisation stays the build's choice, as with `-fsanitize=fuzzer`.
        .dont_optimize()
        .silence(true);
    let mut wrapped_args = vec![program.clone()];
    wrapped_args.extend(invocation.args.iter().cloned());
    if wrapped_args.len() == 1 {
        // LibAFL's wrapper refuses an empty command line; clang's own message is clearer.
        wrapped_args.push("--version".into());
    }
    clang
        .parse_args(&wrapped_args)
        .map_err(|e| WrapperError::Clang(format!("{e:?}")))?;
    if invocation.output != Output::Query {
        let build = Build::from_env();
        for flag in build.flags(false) {
            clang.add_arg(flag);
        }
        for flag in build.condition_flags(&invocation) {
            clang.add_arg(flag);
        }
    }
    if invocation.output == Output::Executable {
        if link_harness {
            clang.link_staticlib(&harness_dir()?, "labelfuzz_harness");
            for lib in RUST_NATIVE_LIBS {
                clang.add_link_arg(lib);
            }
        } else {
            clang.add_link_arg(SANCOV_STUBS);
        }
    }
    let status = clang
        .run()
        .map_err(|e| WrapperError::Clang(format!("could not run clang: {e:?}")))?;
    let code = status.unwrap_or(1);
    if code == 0 && link_harness && Build::from_env() == Build::Fuzz {
        dictionary::embed_into_fuzzer(&llvm, &invocation);
    }
    Ok(code)
}

/// `main` of `labelfuzz-cc` (`cpp == false`) and `labelfuzz-cxx`: returns the exit code.
#[must_use]
pub fn run(cpp: bool) -> i32 {
    let name = if cpp { "labelfuzz-cxx" } else { "labelfuzz-cc" };
    match compile(cpp, env::args_os().collect()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{name}: error: {error}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Invocation {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        Invocation::parse(&args)
    }

    #[test]
    fn compile_only_invocations_never_link() {
        for line in [
            "-c a.c",
            "-S a.c",
            "-E a.c",
            "-c -fsanitize=fuzzer a.c -o a.o",
        ] {
            assert_eq!(parse(line).output, Output::Compiled, "{line}");
        }
        assert_eq!(parse("-shared a.o -o liba.so").output, Output::SharedObject);
    }

    #[test]
    fn executables_and_queries() {
        assert_eq!(parse("a.o b.a -o fuzzer").output, Output::Executable);
        assert_eq!(parse("--version").output, Output::Query);
        assert_eq!(parse("-v").output, Output::Query);
        // The value of -o, -I or -x is not an input.
        assert_eq!(parse("-o out -I inc -x c").output, Output::Query);
    }

    #[test]
    fn fuzzer_sanitizers_are_taken_out_and_the_rest_kept() {
        let link = parse("-fsanitize=fuzzer,address h.c -o f");
        assert_eq!(link.fuzzer, FuzzerRequest::Link);
        assert!(link.args.contains(&"-fsanitize=address".to_string()));
        assert!(!link.args.iter().any(|a| a.contains("fuzzer")));

        let legacy = parse("h.cc -o f -lFuzzingEngine lib.a -lz");
        assert_eq!(legacy.fuzzer, FuzzerRequest::Link);
        assert!(!legacy.args.iter().any(|a| a == "-lFuzzingEngine"));
        let no_link = parse("-fsanitize=fuzzer-no-link -c lib.c");
        assert_eq!(no_link.fuzzer, FuzzerRequest::NoLink);
        assert_eq!(no_link.args, vec!["-c", "lib.c"]);

        assert_eq!(parse("a.c").fuzzer, FuzzerRequest::Auto);
        // fuzzer wins over fuzzer-no-link in either order.
        assert_eq!(
            parse("-fsanitize=fuzzer -fsanitize=fuzzer-no-link a.c").fuzzer,
            FuzzerRequest::Link
        );
    }

    #[test]
    fn inputs_are_the_files_named() {
        let inv = parse("-O2 -I include -o fuzz h.c libx.a -lz -Wl,--gc-sections");
        assert_eq!(
            inv.inputs,
            vec![PathBuf::from("h.c"), PathBuf::from("libx.a")]
        );
    }
}
