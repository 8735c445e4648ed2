#!/usr/bin/env bash
# Installs what cohsim needs from Debian's packages. Idempotent; quiet when
# everything is already there. Run as root (or with sudo available).
# chromium: the report's browser test; parallel: the multi-host sweep test;
# slurm-wlm and munge: the Slurm sweep test (scripts/slurm_test.sh starts the daemons itself).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libboost-program-options-dev libfmt-dev libspdlog-dev nlohmann-json3-dev catch2
  libbenchmark-dev libsystemc-dev
  python3 python3-matplotlib python3-jsonschema
  clang libclang-rt-14-dev
  chromium parallel
  slurm-wlm munge
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
