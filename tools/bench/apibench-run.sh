#!/bin/bash
# One run: fresh data dir, start kapi (env from caller), idle RSS 3 s after READY, then
# apibench creates and gets (server CPU per op), then RSS again.
. "$(dirname "$0")/lib.sh"
start_kapi "$@"
sleep 3
IDLE=$(rss)
C=$($A --kubeconfig=$D/admin.kubeconfig --server-pid $PID --http1 create --n 5000 --concurrency 32 --size 1024 2>&1 | grep -oE "[0-9.]+ ms/op" | head -1)
G=$($A --kubeconfig=$D/admin.kubeconfig --server-pid $PID --http1 get --n 20000 --concurrency 32 2>&1 | grep -oE "[0-9.]+ ms/op" | head -1)
AFTER=$(rss)
echo "idle $((IDLE/1024)) MiB; create $C; get $G; after $((AFTER/1024)) MiB"
