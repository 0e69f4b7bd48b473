//! The LLVM pass plugin that keeps folded loop conditions apart (`unfold_conditions.cc`, see
//! [`crate::conditions`]): built with the wrapper, embedded in it, and written out once per
//! user and plugin build where clang can load it (`-fpass-plugin`), so an installed wrapper
//! needs no file beside it.

use std::env;
use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::path::PathBuf;

/// The plugin as built (empty when LLVM 19's development files were missing at build time).
const PLUGIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/unfold_conditions.so"));

/// The plugin's path for `-fpass-plugin`, written on first use. `None` when the wrapper was
/// built without it, or when no cache directory can hold it: the build goes on with the
/// folding thresholds alone.
#[must_use]
pub fn unfold_conditions() -> Option<PathBuf> {
    if PLUGIN.is_empty() {
        return None;
    }
    let dir = cache_dir()?;
    let mut hasher = DefaultHasher::new();
    hasher.write(PLUGIN);
    let path = dir.join(format!("unfold-conditions-{:016x}.so", hasher.finish()));
    if fs::metadata(&path).is_ok_and(|m| m.len() == PLUGIN.len() as u64) {
        return Some(path);
    }
    fs::create_dir_all(&dir).ok()?;
    // Written aside and renamed, so that parallel compiles never load a half-written file.
    let partial = dir.join(format!(".unfold-conditions-{}.partial", std::process::id()));
    fs::write(&partial, PLUGIN).ok()?;
    fs::rename(&partial, &path).ok()?;
    Some(path)
}

/// `$XDG_CACHE_HOME/labelfuzz`, else `~/.cache/labelfuzz`: the user's own, so no other user
/// can put a library there for clang to load.
fn cache_dir() -> Option<PathBuf> {
    env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .map(|dir| dir.join("labelfuzz"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_written_once_and_reused() {
        if PLUGIN.is_empty() {
            return; // built without LLVM 19's development files: nothing to write
        }
        let first = unfold_conditions().expect("the cache directory is writable");
        let written = fs::metadata(&first)
            .expect("written")
            .modified()
            .expect("mtime");
        let second = unfold_conditions().expect("still there");
        assert_eq!(first, second);
        assert_eq!(fs::metadata(&second).unwrap().modified().unwrap(), written);
        assert_eq!(fs::read(&second).unwrap(), PLUGIN);
    }
}
