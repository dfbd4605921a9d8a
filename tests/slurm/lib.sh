# A real one-node Slurm cluster for the tests in tests/slurm/: Debian's munge and slurm-wlm (22.05),
# started by hand (no systemd) with their own keys, config, state and sockets under $WORK, on
# free loopback ports. Source it first thing:  . "$(dirname "$0")/lib.sh"
# Everything tests/e2e/lib.sh provides, plus start_slurm (exports SLURM_CONF, so sbatch, squeue,
# scontrol and scancel talk to this cluster only), job_state and wait_for_job. Every daemon and
# job started here is stopped at exit, by its pid, however the test ends; their logs are printed
# when it failed.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/deps.sh installs munge and slurm-wlm): skipped"; exit 77; }
done
[[ $(id -u) == 0 ]] || { echo "slurmd runs jobs as their user and needs root here: skipped"; exit 77; }

SLURM_DIR="$WORK/slurm"
# The daemons run in the foreground as this script's children, so they end with it even when it
# is killed (ctest's timeout kills the whole process tree); the trap stops them in order.
_DAEMONS=()  # "name:pid"
_slurm_cleanup() {
  local status=$? entry name pid i jobs
  # Jobs first: their steps run under slurmstepd, which would outlive slurmd.
  if [[ -n "${SLURM_CONF:-}" ]]; then
    jobs=$(squeue -h -o %i 2>/dev/null) || true
    if [[ -n "$jobs" ]]; then
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 1 300); do [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break; sleep 0.1; done
    fi
  fi
  # A job's slurmstepd ends a moment after the job does: wait for this cluster's (they inherit
  # slurmd's environment, SLURM_CONF included), then the daemons; a straggler is killed by pid.
  for _ in $(seq 1 100); do [[ -z "$(our_stepds)" ]] && break; sleep 0.1; done
  # Reverse order: slurmd, slurmctld, then munged (the others authenticate through it).
  for (( i = ${#_DAEMONS[@]} - 1; i >= 0; i-- )); do
    entry=${_DAEMONS[$i]}; name=${entry%%:*}; pid=${entry#*:}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "$name ($pid) did not stop on SIGTERM: killed" >&2; kill -KILL "$pid" 2>/dev/null || true; }
    wait "$pid" 2>/dev/null || true
  done
  for pid in $(our_stepds); do echo "slurmstepd ($pid) outlived its job: killed" >&2; kill -KILL "$pid" 2>/dev/null || true; done
  if (( status != 0 )); then
    for name in slurmctld slurmd munged; do
      [[ -s "$SLURM_DIR/$name.log" ]] || continue
      echo "--- last lines of $name's log:" >&2
      tail -20 "$SLURM_DIR/$name.log" >&2
    done
  fi
  _cleanup
}
trap _slurm_cleanup EXIT

# our_stepds: the pids of the slurmstepd processes of this cluster.
our_stepds() {
  local environ pid
  [[ -n "${SLURM_CONF:-}" ]] || return 0
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}; pid=${pid%/environ}
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == slurmstepd ]] || continue
    { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF" && echo "$pid"
  done
  return 0
}

# daemon NAME CMD...: starts CMD (in the foreground) in the background, stopped at exit.
daemon() {
  local name=$1; shift
  "$@" >>"$SLURM_DIR/$name.out" 2>&1 &
  _DAEMONS+=("$name:$!")
}

# wait_until WHAT CMD...: until CMD succeeds (up to 30 s), failing if a daemon died meanwhile.
wait_until() {
  local what=$1 entry; shift
  for _ in $(seq 1 300); do
    "$@" >/dev/null 2>&1 && return 0
    for entry in "${_DAEMONS[@]}"; do kill -0 "${entry#*:}" 2>/dev/null || fail "${entry%%:*} exited (waiting for $what)"; done
    sleep 0.1
  done
  fail "$what: not within 30 s"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_slurm CPUS [LINE...]: munged, slurmctld and slurmd for one node named after this host with
# CPUS CPUs (declared: slurmd is told to trust the config), one partition, accounting off (job
# states come from scontrol: MinJobAge keeps an ended job for 10 minutes); each LINE is added to
# slurm.conf (WaitTime=2, ...).
start_slurm() {
  local cpus=$1 node ctld_port slurmd_port
  shift
  node=$(hostname -s)
  mkdir -p "$SLURM_DIR"/{state,spool,munge}
  chmod 700 "$SLURM_DIR/munge"
  mungekey --create --keyfile "$SLURM_DIR/munge/munge.key" >/dev/null 2>&1 \
    || fail "mungekey could not create a key"
  daemon munged munged --foreground --force --key-file "$SLURM_DIR/munge/munge.key" \
    --socket "$SLURM_DIR/munge/munge.socket" --pid-file "$SLURM_DIR/munge/munged.pid" \
    --log-file "$SLURM_DIR/munged.log" --seed-file "$SLURM_DIR/munge/munged.seed"
  wait_until "munged's socket" test -S "$SLURM_DIR/munge/munge.socket"
  ctld_port=$(free_port); slurmd_port=$(free_port)
  cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=retrace-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.socket
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=2048 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  (( $# )) && printf '%s\n' "$@" >>"$SLURM_DIR/slurm.conf"
  export SLURM_CONF="$SLURM_DIR/slurm.conf"
  daemon slurmctld slurmctld -D -f "$SLURM_CONF"
  wait_until "slurmctld answering" scontrol ping
  daemon slurmd slurmd -D -f "$SLURM_CONF" -N "$node"
  wait_until "the node idle" node_idle
}

node_idle() { [[ "$(sinfo -h -N -o '%T' 2>/dev/null | head -1)" == idle ]]; }

# job_state JOB: the job's state (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...).
job_state() { scontrol show job "$1" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 || true; }

# wait_for_job JOB [SECONDS]: waits until the job has ended (up to SECONDS, 300 by default), then
# prints its exit code (the batch script's status).
wait_for_job() {
  local job=$1 limit=${2:-300} state
  for _ in $(seq 1 $(( limit * 10 ))); do
    state=$(job_state "$job")
    case "$state" in
      PENDING|CONFIGURING|RUNNING|COMPLETING|"") sleep 0.1 ;;
      *) scontrol show job "$job" | grep -oE ' ExitCode=[0-9]+' | cut -d= -f2; return 0 ;;
    esac
  done
  fail "job $job did not end within $limit s (state $state)"
}
