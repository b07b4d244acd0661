#!/usr/bin/env bash
# Run every atheris target for FUZZ_SECONDS (default 60) each, seeded with captured client frames.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-60}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/request" "$work/records" "$work/varint"
for f in tests/data/frames/*/*.bin; do cp "$f" "$work/request/$(basename "$(dirname "$f")")-$(basename "$f")"; done
python3 - "$work/records" <<'PY'
import sys, pathlib
hexdata = "".join(l for l in pathlib.Path("../shared/vectors/record_batch.hex").read_text().splitlines()
                  if l and not l.startswith("#")) if pathlib.Path("../shared/vectors/record_batch.hex").exists() else ""
if hexdata:
    pathlib.Path(sys.argv[1], "golden.bin").write_bytes(bytes.fromhex(hexdata))
PY
for target in request records varint; do
    echo "== fuzz_$target for ${seconds}s"
    PYTHONPATH=. .venv/bin/python "tests/fuzz/fuzz_$target.py" "$work/$target" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 2>&1 | tail -n 8
done
