#!/usr/bin/env bash
# Whether the device copy (test_copy_bandwidth) times differently early and late in a night: ROUNDS times each,
# in fresh processes, alone (as in file order, where the ceilings come first) and after a training step's
# benchmark (as in reverse order, where they come after the training families). Each run's JSON lands in OUT as
# it finishes; the last lines print each copy's median. docs/findings.md (2026-12-06, late night): on two
# machines the copy read 0.4-0.9% faster in reverse-order nights.
#
#   bash experiments/copy_order.sh OUT [ROUNDS]
set -uo pipefail
out=$(realpath -m -- "${1:?usage: copy_order.sh OUT [ROUNDS]}")
rounds=${2:-3}
mkdir -p "$out"
cd "$(dirname "$0")/.."
for i in $(seq "$rounds"); do
  python3 -m pytest benches/test_ceilings.py -q -k copy_bandwidth -p no:cacheprovider \
    --benchmark-json="$out/early-$i.json" > "$out/early-$i.log" 2>&1
  python3 -m pytest benches/test_model_memory.py benches/test_ceilings.py -q -p no:cacheprovider \
    -k "b512-resnet50 or copy_bandwidth" --benchmark-json="$out/late-$i.json" > "$out/late-$i.log" 2>&1
done
python3 - "$out" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    for bench in json.loads(path.read_text())["benchmarks"]:
        if bench["name"] == "test_copy_bandwidth":
            print(f"{path.stem:10s} copy median {bench['stats']['median'] * 1e3:.4f} ms")
PY
