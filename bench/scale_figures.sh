#!/usr/bin/env bash
# The host-cost figures of issue 21 in one run (docs/performance.md, "Scale and
# speed"): the random tester at 4 and 4,096 CPUs (ops per user-CPU second and
# the cost ratio), the IPI benchmark and the SMMU 96-CPU point (user CPU
# seconds against simulated time). Usage: bench/scale_figures.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release}/cohsim
[[ -x $bin ]] || { echo "scale_figures: $bin: not built (cmake --build --preset release)" >&2; exit 2; }
# shellcheck source=bench/timed.sh
source bench/timed.sh
user_s() { run_timed "%U" "$@"; }  # user CPU seconds of a command; a failed command ends the script
best() {  # best of 3
  local b=""
  for _ in 1 2 3; do
    local t; t=$(user_s "$@") || return 1
    if [[ -z $b ]] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi
  done
  echo "$b"
}
t4=$(best "$bin" selftest coherence --cpus 4 --ops 100000 -q)
t4096=$(best "$bin" selftest coherence --cpus 4096 --ops 100 -q --platform configs/platforms/scale-4096.json)
tipi=$(best "$bin" run configs/scenarios/ipi-kunpeng920.json -q)
tsmmu=$(best "$bin" run configs/scenarios/smmu-kunpeng920.json --set cpus=96 -q)
awk -v t4="$t4" -v t4096="$t4096" -v tipi="$tipi" -v tsmmu="$tsmmu" 'BEGIN {
  r4 = 400000 / t4; r4096 = 409600 / t4096
  printf "random tester, 4 CPUs x 100,000 ops:       %6.2f s user  %5.2f M ops/s\n", t4, r4 / 1e6
  printf "random tester, 4,096 CPUs x 100 ops:       %6.2f s user  %5.2f M ops/s  (cost per op %.1fx the 4-CPU run)\n", t4096, r4096 / 1e6, r4 / r4096
  printf "IPI benchmark, 96,000 calls (126.7 ms):    %6.2f s user  (%.1fx real time)\n", tipi, tipi / 0.1267
  printf "SMMU 96 CPUs, 5.2 ms simulated:            %6.2f s user  (%.0fx real time)\n", tsmmu, tsmmu / 0.0052
}'
