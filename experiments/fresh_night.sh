#!/usr/bin/env bash
# Issue 44's done-when on a fresh GPU machine, one night per call: the nightly against the committed baseline of
# this hardware, in a chosen file order, with the confirmation, and optionally with slowdowns injected for the
# whole run (so the confirmation's re-runs inherit them). Everything a night writes lands in OUT as it goes:
# results.json (or results.json.partial where the deadline cut it), its re-run files, summary.md, log.txt,
# and order.txt; a run stopped at the deadline gets SIGINT, so perfkit still writes what it measured and its
# verdict, and starts no confirmation after it. Exit status: pytest's (1 where a regression held), 124 where the
# deadline stopped it.
#
#   bash experiments/fresh_night.sh OUT [ORDER] [DEADLINE_S]
#     ORDER: file (default), reverse, or shuffle:SEED
#     PERFKIT_INJECT_SLOWDOWN='*test_layer[conv-forward]=1.10,...' injects (perfkit.resultfile.inject)
#
# Judge the night again here later, and write slowdowns into an A/A night without a device:
#   perfkit compare baselines/<hardware id>.json OUT/results.json
#   python experiments/injected_nights.py baselines/<hardware id>.json OUT/results.json '*test_x=1.10' ...
set -uo pipefail
export LC_ALL=C  # file orders as pytest sorts names, whatever the caller's locale
out=$(realpath -m -- "${1:?usage: fresh_night.sh OUT [file|reverse|shuffle:SEED] [DEADLINE_S]}")
order=${2:-file}
deadline=${3:-540}
mkdir -p "$out"
cd "$(dirname "$0")/.."

mapfile -t files < <(ls benches/test_*.py)
case "$order" in
  file) ;;
  reverse) mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -r) ;;
  shuffle:*) mapfile -t files < <(printf '%s\n' "${files[@]}" | shuf --random-source=<(yes "${order#shuffle:}")) ;;
  *) echo "fresh_night.sh: ORDER is file, reverse or shuffle:SEED, not '$order'" >&2; exit 2 ;;
esac
printf '%s\n' "${files[@]}" > "$out/order.txt"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader 2>/dev/null || echo "no GPU"
  echo "injected: ${PERFKIT_INJECT_SLOWDOWN:-nothing}"; } > "$out/machine.txt"

start=$(date +%s)
timeout -s INT -k 30 "$deadline" python3 -m pytest "${files[@]}" -q -m "not weekly" --perfkit-confirm 3 \
  --perfkit-fail-on-regression --benchmark-json="$out/results.json" --perfkit-summary "$out/summary.md" > "$out/log.txt" 2>&1
status=$?
echo "exit $status after $(( $(date +%s) - start )) s from start-up" | tee -a "$out/log.txt"
tail -n 25 "$out/log.txt"
exit "$status"
