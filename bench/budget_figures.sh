#!/usr/bin/env bash
# The host-time budgets of the HPET and SMMU models (issues 40 and 41): each
# 480-thread AIM7 variant on IvyBridge-EX (default length, including the tsc
# run its ratio needs) and the SMMU 3 x 7 sweep through scripts/sweep.py -j 2,
# each against its 60 s budget. Prints the figures; exits 1 when one is over.
# Usage: bench/budget_figures.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release}/cohsim
[[ -x $bin ]] || { echo "budget_figures: $bin: not built (cmake --build --preset release)" >&2; exit 2; }
budget=60
over=0
# shellcheck source=bench/timed.sh
source bench/timed.sh
times() { run_timed "%e %U" "$@"; }  # "WALL USER" seconds of a command; a failed command ends the script
report() {  # LABEL WALL USER SECONDS-THAT-COUNT
  local verdict=ok
  if awk "BEGIN{exit !($4 > $budget)}"; then verdict=OVER; over=1; fi
  printf "%-52s %7.2f s wall %7.2f s user   budget %d s: %s\n" "$1" "$2" "$3" "$budget" "$verdict"
}
for v in tsc hpet hpet-shared; do
  read -r wall user < <(times "$bin" run configs/scenarios/hpet-ivybridge-ex.json --variant "$v" -q)
  report "AIM7, IvyBridge-EX 480 threads, $v" "$wall" "$user" "$user"
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
read -r wall user < <(times scripts/sweep.py configs/scenarios/smmu-kunpeng920.json --param cpus=2,4,8,16,32,64,96 \
  --variant cmpxchg,spinlock-fallback,fetch-add --cohsim "$bin" -j 2 --out "$out/sweep")
report "SMMU 3 x 7 sweep, scripts/sweep.py -j 2" "$wall" "$user" "$wall"
exit "$over"
