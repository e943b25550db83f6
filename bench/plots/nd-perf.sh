#!/bin/bash
# SPDX-License-Identifier: MIT
# The nd-perf plots of docs/tools.md: the same sweep (-a: 2 B .. 8 MiB) between two stacks in
# one process over the in-process net_ring pair (--pair) and between two processes over memif
# (drivers-cfg/memif_server.ini / memif_client.ini, no hugepages), for write_bw (bandwidth) and
# send_lat (latency); the tables go to OUT/*.txt and tools/plot-bench draws OUT/nd-perf-bw.png
# and OUT/nd-perf-lat.png (one line per transport).
#   bench/plots/nd-perf.sh [BUILD_DIR [OUT_DIR]]     (defaults: build, bench/plots)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
out=${2:-$src/bench/plots}
nd=$build/tools/nd-perf
bw_args=(-a -n 200)
lat_args=(-a -n 1000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

memif() {  # TEST ARGS... : the server in the background, the client here
  local sock=$tmp/memif.sock dev="id=0,socket=$tmp/memif.sock,socket-abstract=no,bsize=2048"
  rm -f "$sock"
  "$nd" "$@" --timeout 120 --profile "$src/drivers-cfg/memif_server.ini" --set "port.devargs=role=server,$dev" \
    --ip 10.0.2.1/24 >"$tmp/server.txt" 2>&1 &
  local pid=$!
  sleep 2
  "$nd" "$@" --timeout 120 --profile "$src/drivers-cfg/memif_client.ini" --set "port.devargs=role=client,$dev" \
    --ip 10.0.2.2/24 10.0.2.1
  wait $pid
}

"$nd" write_bw --pair "${bw_args[@]}" >"$out/write_bw-ring.txt"
memif write_bw "${bw_args[@]}" >"$out/write_bw-memif.txt"
"$nd" send_lat --pair "${lat_args[@]}" >"$out/send_lat-ring.txt"
memif send_lat "${lat_args[@]}" >"$out/send_lat-memif.txt"
"$src/tools/plot-bench" -o "$out/nd-perf" --title "nd-perf -a ($(nproc) cores)" \
  "ring pair, one process=$out/write_bw-ring.txt" "memif, two processes=$out/write_bw-memif.txt" \
  "ring pair, one process=$out/send_lat-ring.txt" "memif, two processes=$out/send_lat-memif.txt"
