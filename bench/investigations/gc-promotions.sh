#!/usr/bin/env bash
# What survives two scavenges on the pass-through (issue 38): one target (a tree's compiled gateway, or the floor)
# run with --trace-gc-nvp in front of bench/fast-upstream.ts, a tools/call at c=64 (bench/wrk/tools-call.lua) for
# SECONDS after a 2 s warm-up; prints, over the measured seconds only, the scavenges, the bytes promoted per scavenge
# and per request, the scavenge pause per request, and the mark-compacts.
#   bash bench/investigations/gc-promotions.sh TREE|floor [SECONDS] [extra node flags…]
# Environment: AB_SIZE (1024), AB_FORMAT (json|sse), as pipeline-ab.sh. TREE must be built (npm run build).
set -euo pipefail
target=$1 secs=${2:-5}; shift 2 || shift $#
size=${AB_SIZE:-1024} format=${AB_FORMAT:-json}
here=$(cd "$(dirname "$0")/../.." && pwd)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
uplog=$(mktemp)
(cd "$here" && exec node --import tsx bench/fast-upstream.ts >"$uplog" 2>&1) &
pids+=("$!")
for _ in $(seq 1 100); do grep -q port "$uplog" && break; sleep 0.1; done
upstream="http://127.0.0.1:$(grep -o '"port":[0-9]*' "$uplog" | cut -d: -f2)/mcp"
log=$(mktemp)
if [[ $target == floor ]]; then
  (cd "$here" && exec node --trace-gc-nvp "$@" --import tsx bench/floor.ts --upstream "$upstream" >"$log" 2>&1) &
  pids+=("$!")
  for _ in $(seq 1 100); do grep -q '"port"' "$log" && break; sleep 0.1; done
  url="http://127.0.0.1:$(grep -o '"port":[0-9]*' "$log" | cut -d: -f2)/mcp"
else
  (cd "$target" && exec node --trace-gc-nvp "$@" dist/main.js --upstream "$upstream" --port 0 --log-level error >"$log" 2>&1) &
  pids+=("$!")
  for _ in $(seq 1 200); do grep -q "listening on" "$log" && break; sleep 0.1; done
  url=$(grep -o "http://127.0.0.1:[0-9]*/mcp" "$log" | head -1)
fi
args=(-- '"bench"' "{\"size\":$size,\"format\":\"$format\"}")
wrk -t2 -c64 -d2s -s "$here/bench/wrk/tools-call.lua" "$url" "${args[@]}" >/dev/null 2>&1 || true
from=$(wc -l <"$log")
out=$(wrk -t2 -c64 -d"${secs}s" -s "$here/bench/wrk/tools-call.lua" "$url" "${args[@]}" 2>&1)
n=$(echo "$out" | grep -o '[0-9]* requests in' | awk '{print $1}')
tail -n +"$((from + 1))" "$log" | awk -v n="$n" -v secs="$secs" '
  / gc=s / { s++; for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "promoted") p += kv[2]; if (kv[1] == "pause") t += kv[2]; if (kv[1] == "semi_space_copied") c += kv[2] } }
  / gc=mc / { mc++ }
  END { printf "%d requests (%d/s): %d scavenges, %.0f KB promoted per scavenge, %.0f B promoted per request, %.0f KB copied in new space per scavenge, %.1f µs scavenge pause per request, %d mark-compacts\n", n, n / secs, s, s ? p / s / 1024 : 0, n ? p / n : 0, s ? c / s / 1024 : 0, n ? t * 1000 / n : 0, mc }'
