# A real one-node Slurm cluster for the tests in tests/slurm/: Debian's munge and slurm-wlm (22.05),
# started by hand (no systemd) with their own keys, config, state and sockets under $WORK, on
# free loopback ports. Source it first thing:  . "$(dirname "$0")/lib.sh"
# Everything tests/e2e/lib.sh provides, plus start_slurm (exports SLURM_CONF, so sbatch, squeue,
# sacct and scancel talk to this cluster only) and wait_for_job. Every daemon started here is
# stopped at exit, by its pid, however the test ends; their logs are printed when it failed.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

for tool in munged mungekey slurmctld slurmd sbatch squeue sacct scancel; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/deps.sh installs munge and slurm-wlm): skipped"; exit 77; }
done
[[ $(id -u) == 0 ]] || { echo "slurmd runs jobs as their user and needs root here: skipped"; exit 77; }

SLURM_DIR="$WORK/slurm"
_DAEMONS=()  # "name:pidfile"
_slurm_cleanup() {
  local status=$? entry name pidfile pid i jobs
  # Jobs first: their steps run under slurmstepd, which would outlive slurmd.
  if [[ -n "${SLURM_CONF:-}" ]]; then
    jobs=$(squeue -h -o %i 2>/dev/null) || true
    if [[ -n "$jobs" ]]; then
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 1 300); do [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break; sleep 0.1; done
    fi
  fi
  # Reverse order: slurmd, slurmctld, then munged (the others authenticate through it).
  for (( i = ${#_DAEMONS[@]} - 1; i >= 0; i-- )); do
    entry=${_DAEMONS[$i]}; name=${entry%%:*}; pidfile=${entry#*:}
    pid=$(cat "$pidfile" 2>/dev/null) || continue
    kill -TERM "$pid" 2>/dev/null || continue
    # Each daemon is its own process (they fork into the background): wait for its pid to go.
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "$name ($pid) did not stop on SIGTERM: killed" >&2; kill -KILL "$pid" 2>/dev/null || true; }
  done
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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for_file FILE WHAT: a daemon writes its pid file once it is up (up to 30 s).
wait_for_file() {
  for _ in $(seq 1 300); do [[ -s "$1" ]] && return 0; sleep 0.1; done
  fail "$2 did not start within 30 s (no $1)"
}

# start_slurm CPUS: munged, slurmctld and slurmd for one node named after this host with CPUS
# CPUs (declared; slurmd is told to trust the config), one partition, accounting off but
# `sacct` answered from slurmctld's job table.
start_slurm() {
  local cpus=$1 node ctld_port slurmd_port
  node=$(hostname -s)
  mkdir -p "$SLURM_DIR"/{state,spool,munge}
  chmod 700 "$SLURM_DIR/munge"
  mungekey --create --keyfile "$SLURM_DIR/munge/munge.key" >/dev/null 2>&1 \
    || fail "mungekey could not create a key"
  munged --force --key-file "$SLURM_DIR/munge/munge.key" --socket "$SLURM_DIR/munge/munge.socket" \
    --pid-file "$SLURM_DIR/munge/munged.pid" --log-file "$SLURM_DIR/munged.log" \
    --seed-file "$SLURM_DIR/munge/munged.seed" || fail "munged did not start"
  _DAEMONS+=("munged:$SLURM_DIR/munge/munged.pid")
  wait_for_file "$SLURM_DIR/munge/munged.pid" munged
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
  export SLURM_CONF="$SLURM_DIR/slurm.conf"
  slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
  _DAEMONS+=("slurmctld:$SLURM_DIR/slurmctld.pid")
  wait_for_file "$SLURM_DIR/slurmctld.pid" slurmctld
  slurmd -f "$SLURM_CONF" -N "$node" || fail "slurmd did not start"
  _DAEMONS+=("slurmd:$SLURM_DIR/slurmd.pid")
  wait_for_file "$SLURM_DIR/slurmd.pid" slurmd
  local state=""
  for _ in $(seq 1 300); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1) || true
    [[ "$state" == idle ]] && return 0
    sleep 0.1
  done
  fail "the node did not become idle within 30 s (state '$state')"
}

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
