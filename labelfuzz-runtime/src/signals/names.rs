//! Which functions and source files a crash site leaves out: labelfuzz's and LibAFL's own
//! (the same for every bug), and Rust's standard library (where every program faults alike).

/// Whether `name` is a function of labelfuzz or LibAFL: the frames between the fuzzer and the
/// target are the same for every bug, so they are never part of a crash label.
#[must_use]
pub fn is_fuzzer_function(name: &str) -> bool {
    // `labelfuzz`, `labelfuzz_harness`, `labelfuzz_sys` and the runtime's C entry points
    // (`labelfuzz_rt_panicked`); `fuzz_target!` expands into the target's crate with helpers
    // (`my_fuzz::__labelfuzz_sys_typed`, `…_decode`, `…_debug_form`) around the target's own
    // body, `my_fuzz::__labelfuzz_sys_run`, which is the program's code: faults happen there.
    const FUZZER_PREFIXES: [&str; 2] = ["labelfuzz", "libafl"];
    const MACRO_HELPERS: [&str; 3] = [
        "::__labelfuzz_sys_typed",
        "::__labelfuzz_sys_decode",
        "::__labelfuzz_sys_debug_form",
    ];
    let name = name.trim_start_matches('<');
    FUZZER_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || MACRO_HELPERS.iter().any(|helper| name.contains(helper))
}

/// Whether `name` is the body of a Rust `fuzz_target!` (whose caller, `LLVMFuzzerTestOneInput`,
/// is then labelfuzz-sys's and the same for every bug).
pub(super) fn is_fuzz_target_body(name: &str) -> bool {
    name.contains("::__labelfuzz_sys_run")
}

/// Whether `file`, a source file as debug information or a panic location names it, is Rust's
/// standard library (`/rustc/<hash>/library/…` from rustup's toolchains, `…/library/<crate>/src/…`
/// from a local build).
#[must_use]
pub fn in_standard_library(file: &str) -> bool {
    file.starts_with("/rustc/")
        || [
            "library/core/src/",
            "library/alloc/src/",
            "library/std/src/",
        ]
        .iter()
        .any(|dir| file.contains(dir))
}

/// Whether the function `name` (demangled) is Rust standard-library code, as compiled into the
/// program (generic code is instantiated in the crates that use it): a path in `core`, `alloc` or `std`, or a method of a library type, or of a
/// library trait for a library or primitive type (`<core::slice::iter::Iter<T> as
/// core::iter::Iterator>::next`, `<usize as core::slice::index::SliceIndex<[T]>>::index`). A
/// library trait implemented for the parser's own type (`<my::Value as core::fmt::Display>`)
/// is the parser's code.
#[must_use]
pub fn is_standard_library_function(name: &str) -> bool {
    const LIBRARIES: [&str; 3] = ["core::", "alloc::", "std::"];
    const PRIMITIVES: [&str; 17] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
        "f32", "f64", "bool", "char", "str",
    ];
    let in_library = |path: &str| LIBRARIES.iter().any(|l| path.starts_with(l));
    let library_type = |mut ty: &str| {
        // References, pointers, slices and tuples of library types are library types.
        loop {
            let shorter = ty
                .trim_start_matches(['&', '*', '[', '('])
                .trim_start_matches("mut ")
                .trim_start_matches("const ");
            if shorter.len() == ty.len() {
                break;
            }
            ty = shorter;
        }
        let word = ty.split(|c: char| !c.is_ascii_alphanumeric()).next();
        in_library(ty) || word.is_some_and(|w| PRIMITIVES.contains(&w)) || ty.is_empty()
    };
    let Some(qualified) = name.strip_prefix('<') else {
        return in_library(name);
    };
    // `<SelfType as Trait>::method` or `<SelfType>::method`: split at depth 0.
    let mut depth = 0usize;
    let mut self_end = None;
    let mut trait_start = None;
    for (at, c) in qualified.char_indices() {
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' if depth > 0 => depth -= 1,
            '>' => {
                self_end.get_or_insert(at);
                let trait_path = trait_start.map(|start| &qualified[start..at]);
                let self_type = &qualified[..self_end.unwrap_or(at)];
                return library_type(self_type) && trait_path.is_none_or(in_library);
            }
            ' ' if depth == 0 && qualified[at..].starts_with(" as ") => {
                self_end = Some(at);
                trait_start = Some(at + 4);
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuzz_target_body_is_the_programs_and_its_wrappers_are_the_fuzzers() {
        assert!(!is_fuzzer_function("my_fuzz::__labelfuzz_sys_run"));
        assert!(!is_fuzzer_function(
            "my_fuzz::__labelfuzz_sys_run::{{closure}}"
        ));
        assert!(is_fuzzer_function("my_fuzz::__labelfuzz_sys_typed"));
        assert!(is_fuzzer_function("my_fuzz::__labelfuzz_sys_decode"));
        assert!(is_fuzzer_function("labelfuzz_sys::run_target::{{closure}}"));
        assert!(is_fuzzer_function(
            "<labelfuzz::crash::CrashObserver as x>::post_exec"
        ));
        assert!(is_fuzz_target_body("my_fuzz::__labelfuzz_sys_run"));
        assert!(!is_fuzzer_function("parse_term"));
    }

    #[test]
    fn library_code_instantiated_in_the_parser_is_told_from_the_parser() {
        for library in [
            "core::slice::index::slice_start_index_len_fail",
            "<core::slice::iter::Iter<T> as core::iter::traits::iterator::Iterator>::next",
            "<usize as core::slice::index::SliceIndex<[T]>>::index",
            "<&mut [u8] as core::ops::Index<usize>>::index",
            "core::option::Option<&T>::copied",
            "<alloc::vec::Vec<T,A>>::push",
            "core::slice::<impl [T]>::get",
            "std::io::Read::read_exact",
        ] {
            assert!(is_standard_library_function(library), "{library}");
        }
        for parser in [
            "serde_json::de::Deserializer<R>::parse_whitespace",
            "<serde_json::read::SliceRead as serde_json::read::Read>::next",
            "<serde_json::value::Value as core::fmt::Display>::fmt",
            "<core::marker::PhantomData<T> as serde::de::DeserializeSeed>::deserialize",
            "parse_expression",
            "json::parse_value::{{closure}}",
        ] {
            assert!(!is_standard_library_function(parser), "{parser}");
        }
    }
}
