# Shared helpers for gregor's scripts. Sourced, not run.

# Installs Debian packages that are missing (the scripts run as root on CI and dev machines;
# elsewhere sudo is used when present).
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
  echo "installing ${missing[*]} ..." >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Asks a ZooKeeper on 127.0.0.1:$1 for `srvr`; succeeds once it serves sessions.
# ZooKeeper answers `srvr` and closes; one that accepted before it could answer (seen while
# it starts) would leave the read waiting, so the probe has a deadline.
zk_serving() {
  local out
  out=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf srvr >&3 && cat <&3' "$1" 2>/dev/null) || return 1
  [[ "$out" == *"Mode:"* ]]
}

# Waits up to $2 seconds for `$1` (a command) to succeed.
wait_for() {
  local cmd=$1 secs=$2 i
  for ((i = 0; i < secs * 10; i++)); do
    eval "$cmd" && return 0
    sleep 0.1
  done
  return 1
}
