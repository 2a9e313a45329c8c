#!/usr/bin/env bash
# A one-node Slurm cluster for tests, private to DIR: munged and the Slurm
# daemons use sockets, keys, state and logs under DIR only, so they never
# touch a system Slurm or munge. Run it inside a loopback-only network
# namespace (unshare -n) to keep the daemons off the network.
#
#   slurm-cluster.sh start DIR   # installs slurm-wlm and munge if missing (Debian), starts the daemons
#   slurm-cluster.sh stop DIR
#
# After start, export SLURM_CONF=DIR/slurm.conf for sbatch/squeue.
set -euo pipefail
cmd=${1:?start|stop}; dir=$(realpath -m "${2:?DIR}")

# stop ends the daemons this script started (by their pid files) and waits
# until they are gone, so DIR can be removed.
stop() {
	for p in slurmd slurmctld munged; do
		[ -f "$dir/$p.pid" ] || continue
		pid=$(cat "$dir/$p.pid")
		kill "$pid" 2>/dev/null || continue
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
	done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge >/dev/null
fi

mkdir -p "$dir"/{state,spool,munge}
chmod 755 "$dir/munge"
[ -f "$dir/munge/munge.key" ] || mungekey --create --keyfile "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
munged --force --socket "$dir/munge/munge.sock" --key-file "$dir/munge/munge.key" \
	--log-file "$dir/munged.log" --pid-file "$dir/munged.pid" --seed-file "$dir/munge/seed"

cat >"$dir/slurm.conf" <<CONF
ClusterName=pvisor-test
SlurmctldHost=localhost(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=pvisor-node NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -i
slurmd -N pvisor-node
for _ in $(seq 1 60); do
	if sinfo -h -o %T 2>/dev/null | grep -qx idle; then exit 0; fi
	sleep 0.5
done
echo "slurm did not become ready; logs in $dir:" >&2
tail -n 20 "$dir"/*.log >&2
stop
exit 1
