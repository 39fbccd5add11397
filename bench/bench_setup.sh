#!/usr/bin/env bash
# Fresh-machine time of `make setup` (and optionally `make demo`) at a commit:
# a new clone, empty pip/uv caches (HOME points to an empty folder), an empty Maven local
# repository (MAVEN_OPTS) and an empty Kafka cache, so every wheel, Maven plugin and Kafka jar
# is downloaded as on a new machine. Debian's packages (chromium, prometheus) are taken as
# installed: the same for every commit measured.
# Usage: bench/bench_setup.sh REV [demo]      (prints one line per step with its wall seconds)
set -euo pipefail
rev=${1:?usage: bench/bench_setup.sh REV [demo]}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rk-fresh-XXXXXX)
trap '(cd "$work/src" 2>/dev/null && make -s sandbox-down >/dev/null 2>&1); rm -rf "$work"' EXIT
git clone -q "$repo" "$work/src" && git -C "$work/src" checkout -q "$rev"
mkdir -p "$work/home"
export HOME="$work/home" MAVEN_OPTS="-Dmaven.repo.local=$work/home/m2" XDG_CACHE_HOME="$work/home/.cache"
unset RK_KAFKA_CACHE UV_CACHE_DIR PIP_CACHE_DIR
cd "$work/src"
t0=$(date +%s.%N)
make setup >"$work/setup.log" 2>&1 || { tail -20 "$work/setup.log"; exit 1; }
t1=$(date +%s.%N)
printf 'make setup (fresh) at %s: %.0f s, load %s\n' "$(git rev-parse --short HEAD)" "$(echo "$t1 - $t0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
t0=$(date +%s.%N)
make setup >/dev/null 2>&1
t1=$(date +%s.%N)
printf 'make setup (again, warm) at %s: %.1f s\n' "$(git rev-parse --short HEAD)" "$(echo "$t1 - $t0" | bc)"
if [ "${2:-}" = demo ]; then
  t0=$(date +%s.%N)
  make demo >"$work/demo.log" 2>&1 || { tail -20 "$work/demo.log"; exit 1; }
  t1=$(date +%s.%N)
  printf 'make demo at %s (sandbox started and stopped by it): %.0f s, load %s\n' "$(git rev-parse --short HEAD)" "$(echo "$t1 - $t0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
  tail -3 "$work/demo.log"
fi
