# Shared by the benchmark scripts: `start_kapi [flags...]` starts $BIN on a fresh data dir
# $D and a random port $PORT, waits until /readyz answers, and stops it (and removes $D)
# when the script exits; $PID is its process, $A the apibench binary, `rss` its RSS and
# `anon` its anonymous RSS in KiB.
BIN=${BIN:-$(dirname "$0")/../../target/release/kapi}
A=${APIBENCH:-$(dirname "$0")/../../../shared/apibench/target/release/apibench}

start_kapi() {
  D=$(mktemp -d /tmp/bench-XXXX)
  PORT=$((17000 + RANDOM % 3000))
  $BIN serve --data-dir $D --secure-port $PORT "$@" >$D.log 2>&1 &
  PID=$!
  trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf $D $D.log' EXIT
  for _ in $(seq 1 300); do
    [ -f $D/admin.kubeconfig ] && curl -sk --cert $D/pki/admin.crt --key $D/pki/admin.key \
      https://127.0.0.1:$PORT/readyz 2>/dev/null | grep -q ok && return
    sleep 0.05
  done
  echo "kapi did not become ready: $(cat $D.log)" >&2
  exit 1
}

rss() { awk '/VmRSS/{print $2}' /proc/$PID/status; }
anon() { awk '/RssAnon/{print $2}' /proc/$PID/status; }
