#!/bin/bash
# One run: fresh data dir, start kapi (env from caller), idle RSS 3 s after READY, then
# apibench creates and gets (server CPU per op), then RSS again.
BIN=${BIN:-$(dirname "$0")/../../target/release/kapi}
A=${APIBENCH:-$(dirname "$0")/../../../shared/apibench/target/release/apibench}
D=$(mktemp -d /tmp/ab-XXXX)
PORT=$((17000 + RANDOM % 1000))
$BIN serve --data-dir $D --secure-port $PORT "$@" >/dev/null 2>&1 &
PID=$!
for i in $(seq 1 300); do
  [ -f $D/admin.kubeconfig ] && curl -sk --cert $D/pki/admin.crt --key $D/pki/admin.key https://127.0.0.1:$PORT/readyz 2>/dev/null | grep -q ok && break
  sleep 0.05
done
sleep 3
IDLE=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
C=$($A --kubeconfig=$D/admin.kubeconfig --server-pid $PID --http1 create --n 5000 --concurrency 32 --size 1024 2>&1 | grep -oE "[0-9.]+ ms/op" | head -1)
G=$($A --kubeconfig=$D/admin.kubeconfig --server-pid $PID --http1 get --n 20000 --concurrency 32 2>&1 | grep -oE "[0-9.]+ ms/op" | head -1)
AFTER=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
echo "idle $((IDLE/1024)) MiB; create $C; get $G; after $((AFTER/1024)) MiB"
kill $PID; wait $PID 2>/dev/null
rm -rf $D
