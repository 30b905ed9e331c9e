# shellcheck shell=bash
# A server and a client process, the client started once the server is ready; sources
# common.sh (both processes are tracked: ended on exit, also when the script fails).
#
#   pair_run [OPTIONS] SERVER_COMMAND... :: CLIENT_COMMAND...
#     (`::`, not `--`: the commands often hold a `--` of their own)
#     --sock PATH      the server is ready once PATH is a socket (a memif server's);
#                      without it the server is taken as ready at once
#     --settle SECS    wait this long more once it is ready (default 0): for a listener
#                      that the socket does not announce (a TCP side channel)
#     --retry REGEX    a client that fails with output matching REGEX (extended grep,
#                      case-insensitive) found no listener yet: it is started again, up
#                      to --tries times (default 10), 0.5 s apart, while the server lives
#     --out PREFIX     stdout into PREFIX.server.log and PREFIX.client.log (default
#                      $TMP/server.log and $TMP/client.log: PREFIX=$TMP/); stderr into
#                      the same file unless --split-err, which writes PREFIX.server.err.log
#                      and PREFIX.client.err.log
#     --wait SECS      how long the server may take to exit after the client (default 180)
#   Returns 0 when both exited with 0; else 1 with the reason in PAIR_WHY. Either way
#   PAIR_SERVER_RC and PAIR_CLIENT_RC hold the exit statuses (124: still running when
#   given up on; empty: never started) and PAIR_SERVER_LOG, PAIR_CLIENT_LOG (and
#   PAIR_SERVER_ERR, PAIR_CLIENT_ERR) the files written.

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pair_run() {
  local sock='' settle=0 retry='' tries=10 prefix="${TMP:-.}/" split=0 wsecs=180
  while [ $# -gt 0 ]; do
    case "$1" in
      --sock) sock=$2; shift 2 ;;
      --settle) settle=$2; shift 2 ;;
      --retry) retry=$2; shift 2 ;;
      --tries) tries=$2; shift 2 ;;
      --out) prefix=$2; shift 2 ;;
      --split-err) split=1; shift ;;
      --wait) wsecs=$2; shift 2 ;;
      *) break ;;
    esac
  done
  local scmd=() ccmd=()
  while [ $# -gt 0 ] && [ "$1" != "::" ]; do scmd+=("$1"); shift; done
  [ $# -gt 0 ] || { PAIR_WHY="pair_run: no :: between the server and the client"; return 1; }
  shift
  ccmd=("$@")
  PAIR_SERVER_LOG=${prefix}server.log PAIR_CLIENT_LOG=${prefix}client.log
  PAIR_SERVER_ERR=$PAIR_SERVER_LOG PAIR_CLIENT_ERR=$PAIR_CLIENT_LOG
  if [ $split -eq 1 ]; then
    PAIR_SERVER_ERR=${prefix}server.err.log PAIR_CLIENT_ERR=${prefix}client.err.log
  fi
  PAIR_SERVER_RC='' PAIR_CLIENT_RC='' PAIR_WHY=''

  [ -z "$sock" ] || rm -f "$sock" # a previous server's
  _pair_start "$PAIR_SERVER_LOG" "$PAIR_SERVER_ERR" "${scmd[@]}"
  local spid=$_PAIR_PID
  if [ -n "$sock" ]; then
    wait_for "[ -S '$sock' ] || ! kill -0 $spid 2>/dev/null" 30
    if [ ! -S "$sock" ]; then
      _pair_end_server "$spid" 1
      PAIR_WHY="server's socket $sock never appeared (server exit status $PAIR_SERVER_RC)"
      return 1
    fi
  fi
  [ "$settle" = 0 ] || sleep "$settle"

  local try
  for ((try = 1; try <= tries; try++)); do
    _pair_start "$PAIR_CLIENT_LOG" "$PAIR_CLIENT_ERR" "${ccmd[@]}"
    wait "$_PAIR_PID"
    PAIR_CLIENT_RC=$?
    lib_untrack "$_PAIR_PID"
    [ "$PAIR_CLIENT_RC" -eq 0 ] && break
    if [ -z "$retry" ] || ! grep -Eqi -- "$retry" "$PAIR_CLIENT_LOG" "$PAIR_CLIENT_ERR"; then
      PAIR_WHY="client exited with $PAIR_CLIENT_RC"
      break
    fi
    if ! kill -0 "$spid" 2>/dev/null; then
      PAIR_WHY="server exited before the client connected"
      break
    fi
    [ "$try" -lt "$tries" ] || PAIR_WHY="client never connected ($tries tries)"
    sleep 0.5
  done
  _pair_end_server "$spid" "$wsecs"
  if [ -z "$PAIR_WHY" ] && [ "$PAIR_SERVER_RC" -ne 0 ]; then
    PAIR_WHY="server exited with $PAIR_SERVER_RC"
  fi
  [ -z "$PAIR_WHY" ]
}

# _pair_start OUT ERR COMMAND...: COMMAND in the background, tracked; its pid in _PAIR_PID.
_pair_start() {
  local out=$1 err=$2
  shift 2
  if [ "$out" = "$err" ]; then "$@" >"$out" 2>&1 & else "$@" >"$out" 2>"$err" & fi
  _PAIR_PID=$!
  lib_track "$_PAIR_PID"
}

# _pair_end_server PID SECS: waits (at most SECS) for the server; its status (124: it was
# still running and was ended) in PAIR_SERVER_RC.
_pair_end_server() {
  wait_exit "$1" "$2"
  PAIR_SERVER_RC=$?
  if [ "$PAIR_SERVER_RC" -eq 124 ] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null
    wait_exit "$1" 2 >/dev/null || kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
  fi
  lib_untrack "$1"
}
