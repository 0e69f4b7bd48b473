//! Function names of the fuzzer's own executable, for crash labels.
//!
//! A crash label that names functions (rather than return addresses) stays the same however a
//! bug is reached: a recursive parser reaches one faulting instruction through any number of
//! frames, and a stack overflow's faulting instruction depends on how deep the input went. The
//! table is read once from the executable's symbol table (no debug information, so it is quick)
//! before the fuzzing processes fork, which inherit it; looking a frame up is a binary search,
//! with no allocation, so it is safe in the crash path.

use std::sync::OnceLock;

use object::{Object, ObjectSymbol, SymbolKind};

/// The functions of the executable, sorted by start address (offsets from its load address).
#[derive(Debug, Default)]
pub struct FunctionTable {
    /// `(start, end)` of each function.
    ranges: Vec<(usize, usize)>,
    /// Demangled names (without Rust's hash suffix), parallel to `ranges`.
    names: Vec<Box<str>>,
}

/// A function found for an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function<'a> {
    /// Its start, as an offset from the executable's load address.
    pub start: usize,
    /// Its demangled name.
    pub name: &'a str,
}

impl FunctionTable {
    /// Reads the function symbols of the ELF file `bytes`.
    #[must_use]
    pub fn from_elf(bytes: &[u8]) -> Self {
        let Ok(file) = object::File::parse(bytes) else {
            return FunctionTable::default();
        };
        let mut functions: Vec<(usize, usize, Box<str>)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() > 0)
            .filter_map(|s| {
                let name = s.name().ok()?;
                let start = usize::try_from(s.address()).ok()?;
                let end = start.checked_add(usize::try_from(s.size()).ok()?)?;
                Some((start, end, demangle(name).into_boxed_str()))
            })
            .collect();
        functions.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        functions.dedup_by_key(|f| f.0);
        let (ranges, names) = functions
            .into_iter()
            .map(|(start, end, name)| ((start, end), name))
            .unzip();
        FunctionTable { ranges, names }
    }

    /// The function containing `offset`, if the symbol table knows one.
    #[must_use]
    pub fn function_at(&self, offset: usize) -> Option<Function<'_>> {
        let index = self.ranges.partition_point(|&(start, _)| start <= offset);
        let index = index.checked_sub(1)?;
        let (start, end) = self.ranges[index];
        (offset < end).then(|| Function {
            start,
            name: &self.names[index],
        })
    }

    /// The `(start, end)` offsets of the function called `name` (a Rust path may be given by
    /// its last segments: `parse_error` finds `mycrate::parser::parse_error`).
    #[must_use]
    pub fn range_of(&self, name: &str) -> Option<(usize, usize)> {
        let suffix = format!("::{name}");
        self.names
            .iter()
            .position(|n| **n == *name)
            .or_else(|| self.names.iter().position(|n| n.ends_with(&suffix)))
            .map(|index| self.ranges[index])
    }

    /// How many functions the table holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True when no function is known (a stripped executable).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// A symbol's name as people read it: Rust names demangled without their hash, C names as they
/// are.
#[must_use]
pub fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// Where the executable is loaded: subtracted from an absolute address, the offset the table
/// is keyed by.
#[must_use]
pub fn executable_base() -> usize {
    extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut std::ffi::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes valid pointers; `data` is the `usize` below.
        unsafe { *data.cast::<usize>() = (*info).dlpi_addr as usize };
        1
    }
    let mut base = 0usize;
    // SAFETY: walks the loader's list of objects; the first one is this executable.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut base).cast()) };
    base
}

static TABLE: OnceLock<FunctionTable> = OnceLock::new();

/// Reads the executable's function table now, so that processes forked later inherit it instead
/// of each reading it again after every crash.
pub fn preload() {
    functions();
}

/// The executable's function table (read on first use).
pub fn functions() -> &'static FunctionTable {
    TABLE.get_or_init(|| {
        std::fs::read("/proc/self/exe")
            .map(|bytes| FunctionTable::from_elf(&bytes))
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_find() -> usize {
        std::hint::black_box(7)
    }

    #[test]
    fn finds_the_function_around_an_address_in_this_executable() {
        assert_eq!(a_function_to_find(), 7);
        let table = functions();
        assert!(table.len() > 100, "{} functions", table.len());
        let base = executable_base();
        let address = a_function_to_find as *const () as usize - base;
        let found = table.function_at(address + 1).expect("a function");
        assert_eq!(found.start, address);
        assert!(found.name.ends_with("a_function_to_find"), "{}", found.name);
        assert!(table.function_at(0).is_none());
    }

    #[test]
    fn rust_names_lose_their_hash() {
        assert_eq!(
            demangle("_ZN4core9panicking5panic17h0123456789abcdefE"),
            "core::panicking::panic"
        );
        assert_eq!(demangle("parse_expr"), "parse_expr");
    }
}
