#!/usr/bin/env bash
# CTest (label slurm): a real single-node Slurm — munged, slurmctld and slurmd on this machine, all
# state in a scratch folder — runs sharded compile-only tunes through scripts/slurm/submit.sh (a
# job array and a dependent merge job); the merged results must equal an unsharded run's.
# Two runs: a sweep of two shapes in 2 shards (whole shapes per shard) and one shape whose
# variants are split in 3 shards.
# Where Slurm is not installed, or not as root, it exits 77 (skipped) with one line saying how to
# run it; with TUNE_REQUIRE_SLURM=1 (.ci/run, which installs Slurm) that is a failure instead.
# usage: slurm_test.sh TUNE SOURCE_DIR SCRATCH_DIR
set -euo pipefail
tune=$1 src=$2 scratch=$3
fail() { echo "FAILED: $*"; exit 1; }
# Slurm is a service tune does not install (scripts/setup.sh puts no daemons on a developer's machine).
not_here() {
  if [ "${TUNE_REQUIRE_SLURM:-0}" = 1 ]; then fail "$* (TUNE_REQUIRE_SLURM=1: Slurm must run here)"; fi
  echo "SKIPPED: $*; to run this test, as root: apt-get install slurmctld slurmd slurm-client munge, then" \
    "TUNE_REQUIRE_SLURM=1 ctest --test-dir build -L slurm (.ci/run does both)"
  exit 77
}

missing=()
for c in munged munge slurmctld slurmd sbatch squeue scontrol; do command -v "$c" >/dev/null || missing+=("$c"); done
((${#missing[@]} == 0)) || not_here "Slurm is not installed (${missing[*]} missing)"
[ "$(id -u)" -eq 0 ] || not_here "a single-node Slurm needs root (slurmd runs jobs as their users)"
id munge >/dev/null 2>&1 || fail "the munge package's user 'munge' is missing; reinstall munge"

rm -rf "$scratch"
mkdir -p "$scratch"
chmod 755 "$scratch"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$scratch/munge/munged.pid" ] && kill "$(cat "$scratch/munge/munged.pid")" 2>/dev/null || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# munge, with its own key and socket.
m=$scratch/munge
mkdir -p "$m"
head -c 1024 /dev/urandom >"$m/munge.key"
chown -R munge:munge "$m"
chmod 755 "$m"  # munged wants the socket folder open to all
chmod 400 "$m/munge.key"
runuser -u munge -- munged --socket="$m/munge.socket" --key-file="$m/munge.key" --log-file="$m/munged.log" \
  --pid-file="$m/munged.pid" --seed-file="$m/munged.seed" || fail "munged did not start: $(cat "$m/munged.log" 2>/dev/null)"
munge -S "$m/munge.socket" -n | unmunge -S "$m/munge.socket" >/dev/null || fail "munge does not answer"

# slurm.conf: this host only, free ports, no cgroups, state in the scratch folder.
host=$(hostname -s)
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
sl=$scratch/slurm
mkdir -p "$sl/state" "$sl/spool"
cat >"$sl/slurm.conf" <<CONF
ClusterName=tunetest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$m/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$sl/state
SlurmdSpoolDir=$sl/spool
SlurmctldPidFile=$sl/slurmctld.pid
SlurmdPidFile=$sl/slurmd.pid
SlurmctldLogFile=$sl/slurmctld.log
SlurmdLogFile=$sl/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$sl/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$sl/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$sl/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 60); do
  state=$(sinfo -h -N -o %T 2>/dev/null || true)
  [[ $state == idle* || $state == mixed* ]] && break
  sleep 1
done
[[ $state == idle* || $state == mixed* ]] || fail "the node did not come up (sinfo: '$state'): $(tail -5 "$sl/slurmctld.log" "$sl/slurmd.log" 2>&1)"

# The same work, unsharded, for the reference (it also fills the compile cache the shards share).
cfg=$src/tests/fixtures/contact_sweep_space.json
echo '{"items": [{"problem": "contact", "B": [1, 2], "N": 16}]}' >"$scratch/sweep.json"
common=(--config "$cfg" --compile-only --cache-dir "$scratch/cache")
sweep=(--sweep "$scratch/sweep.json" "${common[@]}")
single=(--problem contact --B 2 --N 24 "${common[@]}")
"$tune" "${sweep[@]}" --out "$scratch/unsharded/sweep" >"$scratch/unsharded-sweep.log" 2>&1 ||
  fail "unsharded sweep: $(tail -3 "$scratch/unsharded-sweep.log")"
"$tune" "${single[@]}" --out "$scratch/unsharded/single" >"$scratch/unsharded-single.log" 2>&1 ||
  fail "unsharded single shape: $(tail -3 "$scratch/unsharded-single.log")"

submit() {  # name shards tune-args...
  local name=$1 shards=$2
  shift 2
  "$src/scripts/slurm/submit.sh" --shards "$shards" --work "$scratch/jobs/$name" --out "$scratch/merged/$name" \
    --tune "$tune" -- "$@" >"$scratch/submit-$name.txt" || fail "submit.sh $name failed"
  cat "$scratch/submit-$name.txt"
}
submit sweep 2 "${sweep[@]}"
submit single 3 "${single[@]}"
jobs=$(sed -n 's/^[a-z_]*job=//p' "$scratch"/submit-*.txt | paste -sd,)

deadline=$((SECONDS + 150))
while [ -n "$(squeue -h -j "$jobs" 2>/dev/null)" ]; do
  ((SECONDS < deadline)) || { squeue; fail "jobs $jobs still queued or running after 150 s"; }
  sleep 2
done
for name in sweep single; do
  for job in $(sed -n 's/^[a-z_]*job=//p' "$scratch/submit-$name.txt"); do
    states=$(scontrol -o show job "$job" | grep -o 'JobState=[A-Z_]*' | sort -u | paste -sd' ')
    [ "$states" = "JobState=COMPLETED" ] ||
      fail "$name: job $job ended $states; logs: $(tail -n 5 "$scratch/jobs/$name"/logs/* 2>&1)"
  done
  python3 "$src/tests/slurm/compare_results.py" "$scratch/unsharded/$name" "$scratch/merged/$name" ||
    fail "$name: the merged results differ from the unsharded run's"
done
echo "slurm: sharded sweep (2 shards) and variant-split shape (3 shards) merged equal to unsharded runs"
