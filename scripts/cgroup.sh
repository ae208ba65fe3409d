# shellcheck shell=bash
# What scripts/setup.sh and scripts/down.sh share about sizes and the memory
# cgroups the servers run in (`GHBENCH_MEMORY`). Sourced, not run.

# A size as ghbench reads one: a number and its unit, binary (KiB MiB GiB TiB
# PiB) or decimal (KB MB GB TB PB; a bare K M G T P is decimal too).
size_bytes() {
    local text=${1// /} number unit factor
    [[ $text =~ ^([0-9]+(\.[0-9]+)?)([A-Za-z]*)$ ]] || return 1
    number=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3],,}
    case $unit in
        ''|b) factor=1 ;; k|kb) factor=1000 ;; ki|kib) factor=1024 ;;
        m|mb) factor=1000000 ;; mi|mib) factor=1048576 ;;
        g|gb) factor=1000000000 ;; gi|gib) factor=1073741824 ;;
        t|tb) factor=1000000000000 ;; ti|tib) factor=1099511627776 ;;
        p|pb) factor=1000000000000000 ;; pi|pib) factor=1125899906842624 ;;
        *) return 1 ;;
    esac
    awk -v n="$number" -v f="$factor" 'BEGIN { printf "%.0f\n", n * f }'
}

# A size as PostgreSQL reads one: its units are binary (kB MB GB TB), a bare
# number counts 8kB pages (shared_buffers' unit).
pg_size_bytes() {
    local text=${1// /} unit
    [[ $text =~ ^([0-9]+)(kB|MB|GB|TB)?$ ]] || return 1
    case ${BASH_REMATCH[2]} in
        '') unit=8192 ;; kB) unit=1024 ;; MB) unit=1048576 ;; GB) unit=1073741824 ;; TB) unit=1099511627776 ;;
    esac
    awk -v n="${BASH_REMATCH[1]}" -v u="$unit" 'BEGIN { printf "%.0f\n", n * u }'
}

# A size as MySQL and MariaDB read one: a number of bytes, or with K, M, G or
# T (either case; binary) after it (innodb_buffer_pool_size's forms).
mysql_size_bytes() {
    local text=${1// /} unit
    [[ $text =~ ^([0-9]+)([kKmMgGtT])?$ ]] || return 1
    case ${BASH_REMATCH[2],,} in
        '') unit=1 ;; k) unit=1024 ;; m) unit=1048576 ;; g) unit=1073741824 ;; t) unit=1099511627776 ;;
    esac
    awk -v n="${BASH_REMATCH[1]}" -v u="$unit" 'BEGIN { printf "%.0f\n", n * u }'
}

# The memory cgroup a server of this checkout runs in: ghbench/<checkout>-<server>.
cgroup_name() { printf 'ghbench/%s-%s' "$(printf '%s' "$GHBENCH_HOME" | md5sum | cut -c1-12)" "$1"; }

# Where a cgroup hierarchy is mounted: `cgroup_mount memory` (v1) or `cgroup_mount 2`.
cgroup_mount() {
    awk -v want="$1" '{ for (i = 7; i <= NF; i++) if ($i == "-") {
        if (want == "2" && $(i + 1) == "cgroup2") print $5
        else if ($(i + 1) == "cgroup" && ("," $(i + 3) ",") ~ ("," want ",")) print $5
        break } }' /proc/self/mountinfo | head -n 1
}

# Removes server $1's cgroups once nothing runs in them (memory, blkio, v2),
# and their disk throttle rules whether or not they can be removed.
remove_memory_cgroups() {
    local name base
    name=$(cgroup_name "$1")
    base=$(cgroup_mount blkio); if [ -n "$base" ] && [ -d "$base/$name" ]; then clear_disk_rules "$base/$name" v1; fi
    base=$(cgroup_mount 2); if [ -n "$base" ] && [ -d "$base/$name" ]; then clear_disk_rules "$base/$name" v2; fi
    for base in "$(cgroup_mount memory)" "$(cgroup_mount blkio)" "$(cgroup_mount 2)"; do
        if [ -n "$base" ] && [ -d "$base/$name" ] && [ -z "$(cat "$base/$name/cgroup.procs" 2>/dev/null)" ]; then
            rmdir "$base/$name" 2>/dev/null || true
        fi
    done
}

# The whole disk (major:minor) the folder $1 is stored on: a throttle is set
# on a disk, not a partition. Fails, saying why, where no block device holds
# it (tmpfs, overlay, a network filesystem: device major 0).
block_device_under() {
    local number major minor dev sys
    # The device number as glibc's major(3) and minor(3) take it apart (stat's
    # %Hd and %Ld need coreutils 9).
    number=$(stat -c '%d' "$1") || { echo "$1 cannot be read"; return 1; }
    major=$(( ((number >> 8) & 0xfff) | ((number >> 32) & ~0xfff) ))
    minor=$(( (number & 0xff) | ((number >> 12) & ~0xff) ))
    dev=$major:$minor
    if [ "$major" = 0 ]; then
        echo "$1 is on $(stat -f -c %T "$1"), which no block device holds: a disk limit throttles the reads of a block device; keep the servers' data on a disk (GHBENCH_HOME on one)"
        return 1
    fi
    [ -e "/sys/dev/block/$dev" ] || { echo "the block device $dev of $1 is not in /sys/dev/block"; return 1; }
    sys=$(readlink -f "/sys/dev/block/$dev")
    if [ -e "$sys/partition" ]; then dev=$(cat "$(dirname "$sys")/dev"); fi
    echo "$dev"
}

# Hands controllers $2 ("+memory +io") down from the v2 root $1 to its
# ghbench folder's children: a v2 child gets a controller only when every
# parent does.
hand_down() {
    local parent
    for parent in "$1" "$1/ghbench"; do
        mkdir -p "$parent" && echo "$2" >"$parent/cgroup.subtree_control" 2>/dev/null || return 1
    done
}

# This machine's memory in MiB (MemTotal).
machine_mb() { awk '/^MemTotal:/ { printf "%d\n", $2 / 1024 }' /proc/meminfo; }

# Removes every throttle rule of the block I/O cgroup folder $1 (cgroup $2:
# v1 or v2): v1 drops a rule written as 0, v2 one written as max.
clear_disk_rules() {
    local file device rest rules
    if [ "$2" = v1 ]; then
        for file in "$1"/blkio.throttle.{read,write}_{bps,iops}_device; do
            [ -e "$file" ] || continue
            rules=$(cat "$file")
            while read -r device rest; do
                [ -n "$device" ] && echo "$device 0" >"$file" 2>/dev/null || true
            done <<<"$rules"
        done
    elif [ -e "$1/io.max" ]; then
        rules=$(cat "$1/io.max")
        while read -r device rest; do
            [ -n "$device" ] && echo "$device riops=max rbps=max wiops=max wbps=max" >"$1/io.max" 2>/dev/null || true
        done <<<"$rules"
    fi
}
