#!/usr/bin/env bash
# On a GPU machine: issue 7's proof. One tune with three variants made to fail on the device
# (an out-of-bounds write, a `trap`, a kernel that never ends), one clean tune with the same
# seed, and one killed with SIGKILL half-way then resumed; compares statuses and winners.
#
#   tools/fault_injection_check.sh TUNE WORKDIR [TUNE_ARGS...]
#   (default TUNE_ARGS: --problem contact --B 4 --N 64 --budget 40 --seed 7)
# Writes WORKDIR/{clean,faults,resume}/... results, *.log and summary.json.
set -uo pipefail
tune=$1 work=$2
shift 2
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--problem contact --B 4 --N 64 --budget 40 --seed 7)
rm -rf "$work" && mkdir -p "$work"
cache=$work/cache
run() { "$tune" "${args[@]}" --cache-dir "$cache" "$@"; }

run --out "$work/clean" >"$work/clean.log" 2>&1 || { echo "clean run failed"; exit 1; }
clean=$(ls "$work"/clean/*/*/*.json | head -1)
# Three variants that neither win nor are the baseline, named in full (names ending in a value no
# other value extends, so the substring matches only them).
mapfile -t victims < <(python3 - "$clean" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w, b = r["summary"]["winner"], r["summary"]["baseline"]
names = [v["name"] for v in r["variants"] if v["status"] == "passed" and v["name"] not in (w, b)]
names = [n for n in names if not any(o != n and n in o for o in names)]
print("\n".join(names[1:4]))
PY
)
faults="${victims[0]}=cuda;${victims[1]}=trap;${victims[2]}=spin"
TUNE_WORKER_FAULT=$faults run --out "$work/faults" --variant-timeout 5 >"$work/faults.log" 2>&1
echo "faults run exit $?"

# SIGKILL once about half of the variants are in the journal, then --resume.
# tune itself in the background (not a function's subshell), so that $! is the process to kill.
"$tune" "${args[@]}" --cache-dir "$cache" --out "$work/resume" >"$work/resume_killed.log" 2>&1 &
pid=$!
journal_lines() { cat "$work"/resume/*/*/*.journal.jsonl 2>/dev/null | wc -l; }
total=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['variants']))" "$clean")
while kill -0 $pid 2>/dev/null && [ "$(journal_lines)" -lt $((total / 2)) ]; do sleep 0.05; done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
echo "killed with $(( $(journal_lines) - 1 )) of $total records journaled"
run --out "$work/resume" --resume >"$work/resume.log" 2>&1
echo "resume exit $?"

python3 - "$work" "$faults" <<'PY'
import json, sys, glob
work, faults = sys.argv[1], sys.argv[2]
load = lambda d: json.load(open([p for p in glob.glob(f"{work}/{d}/*/*/*.json")][0]))
clean, faulty, resumed = load("clean"), load("faults"), load("resume")
by = lambda r: {v["name"]: v for v in r["variants"]}
victims = [f.rsplit("=", 1) for f in faults.split(";")]
out = {"clean_winner": clean["summary"]["winner"], "faults_winner": faulty["summary"]["winner"],
       "resumed_winner": resumed["summary"]["winner"],
       "injected": [{"variant": n, "kind": k, "status": by(faulty)[n]["status"], "fault": by(faulty)[n].get("fault")}
                    for n, k in victims],
       "resumed_variants": resumed["context"]["journal"]["resumed_variants"],
       "variants": len(clean["variants"]),
       "resume_statuses_equal": {n: v["status"] for n, v in by(resumed).items()} == {n: v["status"] for n, v in by(clean).items()},
       # Same seed, same inputs: the parity errors of every variant match the uninterrupted run's.
       "resume_parity_equal": {n: (v.get("parity") or {}).get("max_abs_error") for n, v in by(resumed).items()}
                              == {n: (v.get("parity") or {}).get("max_abs_error") for n, v in by(clean).items()},
       "worker_starts_faults_run": faulty["context"]["isolation"]["worker_starts"]}
out["faults_winner_equals_clean"] = out["faults_winner"] == out["clean_winner"]
out["resumed_winner_equals_clean"] = out["resumed_winner"] == out["clean_winner"]
json.dump(out, open(f"{work}/summary.json", "w"), indent=2)
print(json.dumps(out, indent=2))
PY
