#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` CMake preset, clang) and runs one.
#   scripts/fuzz.sh TARGET SECONDS     TARGET: platform | scenario | cli
# The working corpus starts from tests/fuzz/corpus/TARGET (seeds made from
# configs/ by tests/fuzz/make_corpus.py) and grows in build/fuzz/corpus/TARGET.
# A crash, leak, timeout or out-of-memory input is saved as
# build/fuzz/artifacts/TARGET-*; the script then exits non-zero. Copy such an
# input to tests/regression/TARGET/ so the Catch2 suite replays it for good.
# FUZZ_SEED=N in the environment makes the mutation sequence reproducible.
# FUZZ_TIMEOUT=S (default 10) is the wall-clock time one input may take before
# it counts as a hang; raise it when the machine is busy with other work.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh platform|scenario|cli SECONDS}"
seconds="${2:?usage: scripts/fuzz.sh platform|scenario|cli SECONDS}"
case "$target" in platform|scenario|cli) ;; *) echo "fuzz.sh: unknown target '$target' (platform, scenario, cli)" >&2; exit 2;; esac

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target "fuzz_$target" >/dev/null

# Absolute paths: fuzz_cli runs each input in a private temporary directory.
work="$PWD/build/fuzz/corpus/$target"
artifacts="$PWD/build/fuzz/artifacts"
mkdir -p "$work" "$artifacts"
log="build/fuzz/fuzz_$target.log"
status=0
seed_flag=()
[ -n "${FUZZ_SEED:-}" ] && seed_flag=(-seed="$FUZZ_SEED")  # FUZZ_SEED=N: reproducible mutations
# -timeout: one input may take FUZZ_TIMEOUT s (a hang is a finding); -rss_limit_mb: a
# config that makes the loader allocate without bound is a finding too.
"build/fuzz/tests/fuzz/fuzz_$target" "$work" "$PWD/tests/fuzz/corpus/$target" \
  -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -close_fd_mask=1 \
  -dict="$PWD/tests/fuzz/cohsim.dict" -artifact_prefix="$artifacts/$target-" -print_final_stats=1 "${seed_flag[@]}" \
  >"$log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: fuzz_$target FAILED (exit $status); the end of $log:" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
execs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+' || true)
echo "fuzz.sh: fuzz_$target ran ${seconds}s, ${execs:-?} inputs, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) files, no finding"
