#!/usr/bin/env bash
# A/B of the forwarded session request (forwarded-once.ts) between two trees, alternating in one run on the same
# machine, each on its compiled dist/ (`npm run build` in both first):
#   flock /tmp/bench.lock bench/investigations/forwarded-ab.sh BEFORE_TREE AFTER_TREE [rounds] [requests]
# Per round: BEFORE over TCP, AFTER over TCP, AFTER over a Unix socket (server.internalSocketDir). Needs Redis.
set -euo pipefail
before=$1 after=$2 rounds=${3:-4} requests=${4:-400}
uptime
for r in $(seq 1 "$rounds"); do
  for run in "$before tcp before" "$after tcp after" "$after unix after"; do
    set -- $run
    (cd "$1" && BENCH_GATEWAY=dist node --import tsx bench/investigations/forwarded-once.ts "$requests" "$2" |
      sed "s/^{/{\"round\":$r,\"tree\":\"$3\",/")
  done
done
uptime
