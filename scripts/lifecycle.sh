# shellcheck shell=bash
# What scripts/setup.sh and scripts/down.sh share about the servers' processes:
# waiting for one to start or stop (as long as it makes progress), knowing a
# recorded pid is still the server's (name, boot and start time), and reading
# the journal of changes ghbench made to a server ($GHBENCH_HOME/changes).
# Sourced, not run; the sourcing script sets say_as (setup, down) first, the
# prefix of every line said here.

# A stop or start is given up only once nothing about the server changed (its
# CPU time, its I/O, its log) for this many seconds.
stuck_after=${GHBENCH_STUCK_AFTER:-600}
if ! [[ $stuck_after =~ ^[1-9][0-9]*$ ]]; then
    printf '[%s] error: GHBENCH_STUCK_AFTER=%s is not a number of seconds (e.g. 600)\n' "${say_as:-ghbench}" "$stuck_after" >&2
    exit 2
fi
clock_ticks=$(getconf CLK_TCK 2>/dev/null || echo 100)
this_boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)

# Field $2 of /proc/$1/stat as proc(5) numbers them (3: state, 4: ppid, 22:
# start time in clock ticks since boot); the command name before them may hold
# spaces and parentheses, so fields are counted after its last `)`.
proc_stat_field() {
    local -; set -f
    local line fields
    { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
    # shellcheck disable=SC2206 # split on purpose (no glob: set -f)
    fields=(${line##*) })
    [ -n "${fields[$(( $2 - 3 ))]:-}" ] || return 1
    printf '%s\n' "${fields[$(( $2 - 3 ))]}"
}

# Whether process $1 runs: it exists and has not ended (a zombie has ended);
# with $2, it must also have started at $2 clock ticks after boot (the same
# process, not a later one given the same pid).
proc_runs() {
    local -; set -f
    local line fields
    { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
    # shellcheck disable=SC2206
    fields=(${line##*) })
    case ${fields[0]} in Z|X|x) return 1 ;; esac
    [ -z "${2:-}" ] || [ "${fields[19]}" = "$2" ]
}

# Process $1's command line, its arguments joined by spaces.
proc_command() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | sed 's/ *$//'; }

# Writes pid $2 to pid file $1 and, beside it, $1.start: "<boot_id> <start
# ticks>" (/proc/sys/kernel/random/boot_id; field 22 of /proc/PID/stat), which
# tells the process apart from a later one given the same pid, after a reboot
# too. The start time is set when the process is made and kept across exec.
record_pid() {
    local pidfile=$1 pid=$2 ticks
    if ticks=$(proc_stat_field "$pid" 22); then
        printf '%s %s\n' "$this_boot_id" "$ticks" >"$pidfile.start.tmp" && mv -f "$pidfile.start.tmp" "$pidfile.start"
    else
        rm -f "$pidfile.start"
    fi
    printf '%s\n' "$pid" >"$pidfile.tmp" && mv -f "$pidfile.tmp" "$pidfile"
}

# Whether pid file $1 names the server it was written for, still running:
# its command line matches the extended regular expression $2, and the boot
# and start time recorded beside it ($1.start) are this boot's and the
# process's. A pid file without them (written by an older setup) is judged by
# the command line alone, and said so once. Sets found_pid to the pid (even
# when it is not the server's, for the caller to say which it was).
declare -A said_older_pidfile=()
found_pid=
server_pid() {
    local pidfile=$1 pattern=$2 boot ticks
    found_pid=
    { read -r found_pid <"$pidfile"; } 2>/dev/null || return 1
    [[ $found_pid =~ ^[0-9]+$ ]] || return 1
    proc_runs "$found_pid" || return 1
    grep -qaE "$pattern" "/proc/$found_pid/cmdline" 2>/dev/null || return 1
    if [ -f "$pidfile.start" ]; then
        { read -r boot ticks <"$pidfile.start"; } 2>/dev/null || return 1
        [ "$boot" = "$this_boot_id" ] && proc_runs "$found_pid" "$ticks"
    else
        if [ -z "${said_older_pidfile[$pidfile]:-}" ]; then
            said_older_pidfile[$pidfile]=1
            printf '[%s] %s was written by an older setup (no %s beside it): pid %s is taken for the server by its command line alone\n' \
                "$say_as" "$pidfile" "${pidfile##*/}.start" "$found_pid" >&2
        fi
        return 0
    fi
}

# The postmaster of data folder $1 when it runs (first line of its
# postmaster.pid, a running process named postgres whose working folder is
# that data folder): sets found_pid.
postmaster_pid() {
    found_pid=
    { read -r found_pid <"$1/postmaster.pid"; } 2>/dev/null || return 1
    [[ $found_pid =~ ^[0-9]+$ ]] && proc_runs "$found_pid" && grep -qa postgres "/proc/$found_pid/cmdline" 2>/dev/null || return 1
    # A postmaster works in its data folder: a reused pid (`psql -U
    # postgres`, another cluster's server) does not.
    [ "$(readlink -f "/proc/$found_pid/cwd" 2>/dev/null)" = "$(readlink -f "$1")" ]
}

# Whether the postmaster $2 of data folder $1 says it is ready for connections
# (line 8 of postmaster.pid, what `pg_ctl -w` waits for).
postmaster_ready() {
    local lines
    mapfile -t lines <"$1/postmaster.pid" 2>/dev/null || return 1
    [ "${lines[0]:-}" = "$2" ] && [[ ${lines[7]:-} == ready* || ${lines[7]:-} == standby* ]]
}

# Sums over process $1 and every process under it (for PostgreSQL the
# postmaster and its children): sample_cpu, CPU time in clock ticks (user and
# system, its own and that of its children that ended), sample_io, bytes read
# and written (/proc/PID/io), and sample_stopped, those stopped (state T).
sample_tree() {
    local f line p key value
    local -a fields queue stats=(/proc/[0-9]*/stat)
    local -A kids=() ticks=() state=()
    local -; set -f
    for f in "${stats[@]}"; do
        { read -r line <"$f"; } 2>/dev/null || continue
        p=${f#/proc/}; p=${p%/stat}
        # shellcheck disable=SC2206
        fields=(${line##*) })
        kids[${fields[1]}]+=" $p"
        state[$p]=${fields[0]}
        ticks[$p]=$(( fields[11] + fields[12] + fields[13] + fields[14] ))
    done
    sample_cpu=0 sample_io=0 sample_stopped=
    queue=("$1")
    while [ ${#queue[@]} -gt 0 ]; do
        p=${queue[0]}; queue=("${queue[@]:1}")
        [ -n "${state[$p]:-}" ] || continue
        sample_cpu=$(( sample_cpu + ticks[$p] ))
        { while read -r key value; do
            case $key in read_bytes:|write_bytes:) sample_io=$(( sample_io + value )) ;; esac
          done <"/proc/$p/io"; } 2>/dev/null
        case ${state[$p]} in T|t) sample_stopped+="${sample_stopped:+, }pid $p ($(proc_command "$p"))" ;; esac
        # shellcheck disable=SC2206
        queue+=(${kids[$p]:-})
    done
}

file_size() { stat -L -c %s "$1" 2>/dev/null || echo 0; }

# wait_server stop NAME PID LOG
# wait_server start|settle NAME PID LOG WHAT READY_COMMAND...
# Waits for server NAME, process PID writing LOG: `stop`, until the process
# has ended; `start`, until READY_COMMAND succeeds while it runs (WHAT: what
# it waits for it to do, e.g. "accept connections on 127.0.0.1:5432");
# `settle`, until either. It waits as long as the process and those under it
# make progress: their I/O or the log changed, or they used at least 1% of a
# core since the last change (an idle server's housekeeping threads tick a
# little CPU for ever: that alone is not a shutdown going on). Every 15 s it
# says on standard error how long it has waited and what changed; once
# nothing did for GHBENCH_STUCK_AFTER s it gives up. Returns 0 once stopped
# (stop) or ready (start, settle), 2 when the process ended (start, settle),
# 1 when given up (said on standard error, as its last line). A stop asks
# again every 60 s (the command in the array stop_again, if the caller set
# one): a server may drop a stop signal that came at a bad moment (SecantusDB
# does, if it arrives while the process is stopped).
stop_again=()
wait_server() {
    local mode=$1 name=$2 pid=$3 logfile=$4 what doing
    shift 4
    case $mode in
        stop) what="it to stop" doing=stopping ;;
        start) what="it to $1" doing=starting; shift ;;
        settle) what="it to $1 or to stop" doing="starting or stopping"; shift ;;
        *) echo "wait_server: no mode $mode" >&2; return 1 ;;
    esac
    local ticks
    if ! ticks=$(proc_stat_field "$pid" 22) || ! proc_runs "$pid" "$ticks"; then
        [ "$mode" = stop ] && return 0
        return 2
    fi
    local began=$SECONDS now last_change=$SECONDS last_line=$SECONDS sampled=$SECONDS asked=$SECONDS
    local cpu io size new_size line_cpu line_io line_size log_began said changes added cpu_at_change
    sample_tree "$pid"; cpu=$sample_cpu io=$sample_io size=$(file_size "$logfile") cpu_at_change=$sample_cpu
    line_cpu=$cpu line_io=$io line_size=$size log_began=$size
    while :; do
        if ! proc_runs "$pid" "$ticks"; then
            [ "$mode" = stop ] && return 0
            return 2
        fi
        if [ "$mode" != stop ] && "$@"; then
            proc_runs "$pid" "$ticks" && return 0
            return 2
        fi
        now=$SECONDS
        if [ "$now" -gt "$sampled" ]; then
            sampled=$now
            sample_tree "$pid"
            new_size=$(file_size "$logfile")
            if [ $(( (sample_cpu - cpu_at_change) * 100 )) -ge $(( (now - last_change) * clock_ticks )) ] && [ "$sample_cpu" != "$cpu_at_change" ] \
                || [ "$sample_io" != "$io" ] || [ "$new_size" != "$size" ]; then
                last_change=$now cpu_at_change=$sample_cpu
            fi
            cpu=$sample_cpu io=$sample_io size=$new_size
        fi
        if [ "$mode" = stop ] && [ ${#stop_again[@]} -gt 0 ] && [ $(( now - asked )) -ge 60 ]; then
            "${stop_again[@]}" 2>/dev/null || true
            asked=$now
        fi
        if [ $(( now - last_change )) -ge "$stuck_after" ]; then
            # What the log said while waited for (its last 20 lines).
            tail -c +$(( log_began + 1 )) "$logfile" 2>/dev/null | tail -n 20 >&2 || true
            said="waited $(( now - began )) s for $what, the last $(( now - last_change )) s without any change in its I/O or log, nor more than 1% of a core (GHBENCH_STUCK_AFTER=$stuck_after)"
            [ -z "$sample_stopped" ] || said+="; stopped (state T): $sample_stopped"
            printf '[%s] error: %s (pid %s) still runs: %s (log: %s)\n' "$say_as" "$name" "$pid" "$said" "$logfile" >&2
            return 1
        fi
        if [ $(( now - last_line )) -ge 15 ]; then
            changes=
            if [ "$cpu" != "$line_cpu" ]; then
                changes+=", CPU $(awk -v t=$(( cpu - line_cpu )) -v hz="$clock_ticks" 'BEGIN { printf "%.2f", t / hz }') s"
            fi
            if [ "$io" != "$line_io" ]; then
                changes+=", I/O $(awk -v b=$(( io - line_io )) 'BEGIN {
                    if (b >= 1048576 || b <= -1048576) printf "%.1f MiB", b / 1048576; else printf "%.0f KiB", b / 1024 }')"
            fi
            if [ "$size" != "$line_size" ]; then
                if [ "$size" -gt "$line_size" ]; then
                    added=$(tail -c +$(( line_size + 1 )) "$logfile" 2>/dev/null | head -c $(( size - line_size )) | wc -l)
                else
                    added=$(wc -l <"$logfile" 2>/dev/null || echo 0) # written anew
                fi
                if [ "$added" -gt 0 ]; then changes+=", log $added lines"; else changes+=", log $(( size - line_size )) bytes"; fi
            fi
            if [ -n "$changes" ]; then
                said="${changes#, } more since the last line"
            else
                said="nothing changed since the last line (no change for $(( now - last_change )) s of the $stuck_after s GHBENCH_STUCK_AFTER allows)"
            fi
            [ -z "$sample_stopped" ] || said+="; stopped (state T): $sample_stopped"
            printf '[%s] %s (pid %s) still %s after %s s: %s\n' "$say_as" "$name" "$pid" "$doing" "$(( now - began ))" "$said" >&2
            line_cpu=$cpu line_io=$io line_size=$size last_line=$now
        fi
        sleep 0.5
    done
}

# The journal ghbench keeps of the changes it makes to servers
# ($GHBENCH_HOME/changes/*.json, schema ghbench-server-change/1), one line per
# entry of a server setup started, tab-separated:
#   STATE SERVER FILE PID COMMAND MADE_AT SAID
# STATE: alive (its ghbench still runs), dead (it ended), unknown (same boot,
# another pid namespace: cannot tell); SERVER: postgres, mongo or mysql.
# An entry not understood: `bad - FILE REASON`. An entry that names no
# server (an engine's own change, a parameter: server.name null) is taken for
# the server of setup's at its address (the NAME=ADDRESS arguments after
# $1); one at another address is not listed.
journal_entries() {
    python3 - "$@" <<'PY'
import fcntl, glob, json, os, sys

at_address = dict(reversed(pair.split("=", 1)) for pair in sys.argv[2:])
host = open("/proc/sys/kernel/hostname").read().strip()

def held(lock):
    # The owner's lock file in the journal, held (flock) while it runs: the
    # kernel lets it go however the owner ends. None: no lock to go by.
    if not isinstance(lock, str) or "/" in lock:
        return None
    try:
        f = open(os.path.join(sys.argv[1], "changes", lock))
    except OSError:
        return None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return "dead"
        except BlockingIOError:
            return "alive"
        except OSError:
            return None

def one_line(value):
    # One field of a tab-separated line, never empty.
    return " ".join(str(value).split()) or "?"

boot = open("/proc/sys/kernel/random/boot_id").read().strip()
namespace = os.readlink("/proc/self/ns/pid")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "changes", "*.json"))):
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        if not isinstance(entry, dict) or entry.get("schema") != "ghbench-server-change/1":
            raise ValueError("not of schema ghbench-server-change/1")
        server = entry["server"]
        if not isinstance(server, dict):
            raise ValueError("its server is not an object")
        # Only setup's own servers, by address as well as name: another
        # checkout's (or a test's) postgres is not this one's.
        name = server.get("name")
        address = server.get("address")
        if name is None:
            name = at_address.get(address)
        if name is None or at_address.get(address) != name:
            continue
        if name not in ("postgres", "mongo", "mysql"):
            raise ValueError("server.name %r is none of postgres, mongo, mysql" % (name,))
        if entry.get("change") not in ("memory-limit", "disk-limit", "stopped", "parameter"):
            raise ValueError("change %r is none of memory-limit, disk-limit, stopped, parameter" % (entry.get("change"),))
        # A restart as setup leaves the server undoes either.
        if entry.get("undo") not in ("restart", "parameter"):
            raise ValueError("undo %r is none of restart, parameter" % (entry.get("undo"),))
        owner = entry["owner"]
        pid, ticks, owner_boot, owner_ns = owner["pid"], owner["start_ticks"], owner["boot_id"], owner["pid_ns"]
        if not (isinstance(pid, int) and isinstance(ticks, int) and isinstance(owner_boot, str) and isinstance(owner_ns, str)):
            raise ValueError("owner's pid, start_ticks, boot_id or pid_ns is of the wrong type")
    except KeyError as e:
        print("bad\t-\t%s\tit has no %s" % (path, one_line(e)))
        continue
    except (OSError, ValueError, TypeError, AttributeError) as e:
        print("bad\t-\t%s\t%s" % (path, one_line(e)))
        continue
    state = held(entry.get("lock"))
    if state is not None:
        pass
    elif owner_boot.strip() != boot:
        # The machine restarted since, unless the entry is another machine's.
        state = "dead" if owner.get("host") in (None, host) else "unknown"
    elif owner_ns != namespace:
        state = "unknown"
    else:
        try:
            with open("/proc/%d/stat" % pid) as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2:].split()
            state = "alive" if fields[0] not in ("Z", "X", "x") and int(fields[19]) == ticks else "dead"
        except FileNotFoundError:
            state = "dead"
        except (OSError, ValueError, IndexError):
            # A process this user cannot look at (hidepid) is not taken for ended.
            state = "unknown"
    print("\t".join([state, name, path, str(pid), one_line(owner.get("command", "?")),
                     one_line(entry.get("made_at", "?")), one_line(entry.get("said", entry["change"]))]))
PY
}
