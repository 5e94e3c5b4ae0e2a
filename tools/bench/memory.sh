#!/bin/bash
# Memory of stored objects and after LIST bursts (issue 20): RSS idle, after creating 10,000
# ConfigMaps of 1 KiB (memory per object), after 20 LISTs of all of them at concurrency 8,
# and 10 s later.
# usage: BIN=<kapi> APIBENCH=<apibench> memory.sh [kapi flags...]
. "$(dirname "$0")/lib.sh"
start_kapi "$@"
sleep 3
IDLE=$(rss)
IDLE_ANON=$(anon)
$A --kubeconfig=$D/admin.kubeconfig create --n 10000 --concurrency 32 --namespace bench --size 1024 >/dev/null 2>&1
sleep 3
STORED=$(rss)
STORED_ANON=$(anon)
$A --kubeconfig=$D/admin.kubeconfig list --n 20 --concurrency 8 --namespace bench >/dev/null 2>&1
AFTER=$(rss)
sleep 10
LATER=$(rss)
echo "idle $((IDLE/1024)) MiB; 10,000 x 1 KiB stored $((STORED/1024)) MiB ($(( (STORED-IDLE)*1024/10000 )) B/object, $(( (STORED_ANON-IDLE_ANON)*1024/10000 )) B of it anonymous); after 20 LISTs $((AFTER/1024)) MiB; 10 s later $((LATER/1024)) MiB"
