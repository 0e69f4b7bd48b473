//! Demangles a symbol name with rustc-demangle 0.1.5, as an old tool pinned to it would.

/// The demangled form of `input` when it is UTF-8, and the length of the longest line, counted
/// with libc's `strlen` (the second pinned crate is in use, not only in the manifest).
pub fn demangle(input: &[u8]) -> Option<(String, usize)> {
    let text = std::str::from_utf8(input).ok()?;
    let demangled = rustc_demangle::demangle(text).to_string();
    let mut owned = demangled.clone().into_bytes();
    owned.push(0);
    // SAFETY: `owned` is NUL-terminated.
    let length = unsafe { libc::strlen(owned.as_ptr().cast()) };
    Some((demangled, length))
}
