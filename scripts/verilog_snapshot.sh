#!/usr/bin/env bash
# Write the Verilog, config JSON and --help text of every existing design into OUT, for byte-identity checks of a
# refactor: run it before and after, then `diff -r -I '(\* src = ' BEFORE AFTER` (Amaranth's src attributes name
# source lines, which move when only Python moved). About 40 s.
# Usage: bash scripts/verilog_snapshot.sh [PEZO] OUT    (PEZO defaults to .venv/bin/pezo)
set -euo pipefail
if [ $# -eq 2 ]; then pezo=$1; out=$2; elif [ $# -eq 1 ]; then pezo=.venv/bin/pezo; out=$1; else
  echo "usage: bash scripts/verilog_snapshot.sh [PEZO] OUT" >&2; exit 2; fi
if [ -e "$out" ]; then echo "verilog_snapshot: $out exists; name a new directory" >&2; exit 2; fi
mkdir -p "$out"
for s in otf pregen gaussian; do
  for u in generator stream host; do "$pezo" verilog --strategy $s --unit $u --out "$out/verilog-$s-$u" >/dev/null; done
done
"$pezo" verilog --strategy otf --unit scale --out "$out/verilog-otf-scale" >/dev/null
"$pezo" verilog --strategy otf --rewind --out "$out/verilog-otf-rewind" >/dev/null
for s in otf pregen gaussian; do "$pezo" build --no-vivado --design stream --strategy $s --out "$out/build-stream-$s" >/dev/null; done
for n in digits-mlp rt-mlp rt-head; do
  for s in otf pregen; do
    "$pezo" build --no-vivado --design engine --net $n --strategy $s --out "$out/build-engine-$n-$s" >/dev/null
  done
done
"$pezo" build --no-vivado --design engine --net digits-mlp --rows 16 --cols 16 --out "$out/build-engine-r16c16" >/dev/null
find "$out" -name .pezo-output -delete
mkdir -p "$out/help"
"$pezo" --help > "$out/help/pezo.txt"
for c in build report power verilog simulate train sweep train-int8 quality explore; do
  COLUMNS=120 "$pezo" $c --help > "$out/help/$c.txt"
done
COLUMNS=120 "$pezo" sim engine --help > "$out/help/sim-engine.txt"
COLUMNS=120 "$pezo" sim board --help > "$out/help/sim-board.txt"
echo "snapshot in $out: $(find "$out" -type f | wc -l) files"
