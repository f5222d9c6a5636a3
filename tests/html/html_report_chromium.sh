#!/bin/bash
# The HTML report (`--report`) in a real browser: perfsim writes the simulate and plan reports of
# a small case, headless Chromium renders each to a 1200 x 2000 screenshot, and the test fails
# when a screenshot is (nearly) blank or the browser logs a console message (a script error, a
# resource it could not load). Skips (exit 77) where Chromium is not installed.
# Usage: html_report_chromium.sh PERFSIM SOURCE_DIR [PAGE.html ...]
#   with pages given, only those are rendered and checked (to see the check fail on a page with
#   an error injected by hand).
set -euo pipefail
perfsim=$1
source_dir=$2
shift 2

chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium" ]]; then
  echo "SKIP: chromium not installed (Debian package chromium; scripts/setup.sh test installs it)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pages=("$@")
if [[ ${#pages[@]} -eq 0 ]]; then
  "$perfsim" simulate --model "$source_dir/configs/models/llama3-8b.json" --tp 2 --pp 2 --dp 1 \
    --micro-batch 1 --global-batch 4 --topology "$source_dir/configs/topologies/hgx-h100.json" \
    --device "$source_dir/configs/devices/H100-SXM.json" --results "" --quiet \
    --report "$work/simulate.html" > "$work/simulate.txt"
  "$perfsim" plan "$source_dir/configs/models/llama3-8b.json" --gpus 8 --global-batch 16 \
    --topology "$source_dir/configs/topologies/hgx-h100.json" \
    --device "$source_dir/configs/devices/H100-SXM.json" --top 3 --quiet \
    --report "$work/plan.html" > "$work/plan.txt"
  pages=("$work/simulate.html" "$work/plan.html")
fi

# Share of pixels that are not white (any channel below 240) in an 8-bit RGB(A) PNG, decoded
# with the standard library (zlib, and the five PNG row filters).
nonwhite_fraction() {
  python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, colour = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
assert depth == 8 and colour in (2, 6), f"unexpected PNG format depth {depth} colour {colour}"
channels = 3 if colour == 2 else 4
raw = zlib.decompress(idat)
stride = width * channels
previous = bytearray(stride)
nonwhite = 0
at = 0
for _ in range(height):
    kind = raw[at]
    row = bytearray(raw[at + 1:at + 1 + stride])
    at += 1 + stride
    for i in range(stride):
        left = row[i - channels] if i >= channels else 0
        up = previous[i]
        corner = previous[i - channels] if i >= channels else 0
        if kind == 1:
            row[i] = (row[i] + left) & 255
        elif kind == 2:
            row[i] = (row[i] + up) & 255
        elif kind == 3:
            row[i] = (row[i] + (left + up) // 2) & 255
        elif kind == 4:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
            row[i] = (row[i] + predictor) & 255
    for x in range(0, stride, channels):
        if min(row[x:x + 3]) < 240:
            nonwhite += 1
    previous = row
print(f"{nonwhite / (width * height):.4f}")
PY
}

failed=0
for page in "${pages[@]}"; do
  name=$(basename "$page" .html)
  shot="$work/$name.png"
  log="$work/$name.log"
  # --enable-logging=stderr --v=0 prints every console message of the page as a CONSOLE line
  # ("Uncaught ..." for a script error); a page without script logs none.
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --enable-logging=stderr --v=0 --window-size=1200,2000 --screenshot="$shot" \
    "file://$(realpath "$page")" > "$log" 2>&1 || true
  if [[ ! -s "$shot" ]]; then
    echo "FAIL $name: no screenshot; chromium said:"
    tail -20 "$log"
    failed=1
    continue
  fi
  fraction=$(nonwhite_fraction "$shot")
  page_ok=1
  if grep -E "CONSOLE|Uncaught" "$log"; then
    echo "FAIL $name: console messages (above)"
    page_ok=0
  fi
  # A blank page is 0; the smallest report here draws about 4x the threshold.
  if ! python3 -c "import sys; sys.exit(0 if float('$fraction') >= 0.02 else 1)"; then
    echo "FAIL $name: only $fraction of the screenshot is not white (blank page?)"
    page_ok=0
  fi
  if [[ $page_ok == 1 ]]; then
    echo "ok   $name: $fraction of the screenshot is not white, no console messages"
  else
    failed=1
  fi
done
exit $failed
