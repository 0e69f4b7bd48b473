#!/usr/bin/env bash
# Installs what labelfuzz needs on a fresh Debian machine that has only Rust and gcc:
# cargo-make and cargo-fuzz (from crates.io; a nightly toolchain for the latter), clang-19/llvm-19/lld-19/libclang-rt-19-dev (from apt; the C
# compiler wrapper and the libFuzzer baselines of the benchmark use them; chromium, headless,
# checks the HTML report in the tests) and rustup's
# llvm-tools (the benchmark measures Rust targets' coverage with rustc's own llvm-cov). AFL++,
# the benchmark's third fuzzer, is built from registry sources when the benchmark first needs it
# (scripts/install-aflpp.sh). Idempotent: present tools are left alone.
set -euo pipefail

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "bootstrap: need root (or sudo) to run: $*" >&2; return 1; fi
}

missing_debs=()
for pkg in clang-19 llvm-19-dev lld-19 libclang-rt-19-dev chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing_debs+=("$pkg")
done
if [ ${#missing_debs[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing_debs[*]} with apt" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_debs[@]}" >/dev/null
fi

if ! command -v cargo-make >/dev/null 2>&1 && ! [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo-make" ]; then
  echo "bootstrap: installing cargo-make from crates.io (a few minutes, once)" >&2
  cargo install --locked cargo-make -j2
fi
# The tests compare with cargo-fuzz, which builds on nightly (as does `--sanitizer address`).
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "bootstrap: installing a nightly toolchain (cargo-fuzz and --sanitizer address use it)" >&2
  rustup toolchain install nightly --profile minimal >&2 \
    || echo "bootstrap: no nightly toolchain could be installed; the cargo-fuzz tests will fail" >&2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "bootstrap: installing cargo-fuzz from crates.io (a few minutes, once)" >&2
  cargo install --locked cargo-fuzz -j2
fi
sysroot_bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
if ! [ -x "$sysroot_bin/llvm-cov" ] && command -v rustup >/dev/null 2>&1; then
  echo "bootstrap: adding rustup's llvm-tools (the benchmark's coverage of Rust targets)" >&2
  rustup component add llvm-tools >&2 || echo "bootstrap: llvm-tools not added; the Rust rows of the benchmark will fail" >&2
fi
echo "bootstrap: ready" >&2
