#!/bin/bash
# Fairness under a LIST flood (issue 20): user A LISTs the 10,000 ConfigMaps of a
# namespace at concurrency 64 while user B (bob) GETs single ConfigMaps at concurrency 4.
# Prints B's throughput and p99 alone and under the flood, and what A got.
# A is the user alice (FLOOD_AS=user, the default: A and B share the global-default
# priority level, as two people would) or the service account bench/flooder
# (FLOOD_AS=serviceaccount: a controller relisting, which the bootstrap FlowSchemas put in
# workload-low).
# B_NICE=-10 runs B's client at that niceness. The clients share the machine's cores with
# the server: under the flood, A's client (decrypting some 600 MB/s) and the server keep
# both cores busy, and B's client then waits for a core between requests as much as its
# requests wait in the server. A client on a machine of its own does not; the niceness
# gives B's client the core it asks for, so that what is measured is what the server does.
# A negative niceness needs root (or CAP_SYS_NICE); without it nice warns and runs B at 0.
# usage: [FLOOD_AS=serviceaccount] [B_NICE=-10] BIN=<kapi> APIBENCH=<apibench> fairness.sh [kapi flags...]
#   e.g. fairness.sh --enable-priority-and-fairness=false
set -e
. "$(dirname "$0")/lib.sh"
start_kapi "$@"
K="kubectl --kubeconfig $D/admin.kubeconfig"
# Two users of group bench-users, with certificates from kapi's CA, who may read ConfigMaps.
for user in alice bob; do
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $D/$user.key \
    -subj "/O=bench-users/CN=$user" -out $D/$user.csr 2>/dev/null
  printf "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n" >$D/client.ext
  openssl x509 -req -in $D/$user.csr -CA $D/pki/ca.crt -CAkey $D/pki/ca.key -CAcreateserial \
    -days 1 -extfile $D/client.ext -out $D/$user.crt 2>/dev/null
  UK="kubectl --kubeconfig $D/$user.kubeconfig"
  $UK config set-cluster kapi --server=https://127.0.0.1:$PORT --certificate-authority=$D/pki/ca.crt --embed-certs >/dev/null
  $UK config set-credentials $user --client-certificate=$D/$user.crt --client-key=$D/$user.key --embed-certs >/dev/null
  $UK config set-context default --cluster=kapi --user=$user >/dev/null
  $UK config use-context default >/dev/null
done
$K create clusterrole bench-read --verb=get,list --resource=configmaps,namespaces >/dev/null
$K create clusterrolebinding bench-read --clusterrole=bench-read --group=bench-users >/dev/null
$A --kubeconfig=$D/admin.kubeconfig create --n 10000 --concurrency 32 --namespace bench --size 1024 >/dev/null 2>&1
if [ "${FLOOD_AS:-user}" = serviceaccount ]; then
  $K -n bench create serviceaccount flooder >/dev/null
  $K create clusterrolebinding bench-flooder --clusterrole=bench-read --serviceaccount=bench:flooder >/dev/null
  cp $D/admin.kubeconfig $D/alice.kubeconfig
  FK="kubectl --kubeconfig $D/alice.kubeconfig"
  $FK config set-credentials flooder --token="$($K -n bench create token flooder --duration=1h)" >/dev/null
  $FK config set-context flooder --cluster="$($FK config view -o jsonpath='{.clusters[0].name}')" --user=flooder >/dev/null
  $FK config use-context flooder >/dev/null
fi
get() {
  ${B_NICE:+nice -n $B_NICE} $A --kubeconfig=$D/bob.kubeconfig --json --timeout-s 60 get --n ${GETS:-4000} --concurrency 4 --namespace bench 2>$D/get.err | tee -a $D/get.json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.0f gets/s, p99 %.1f ms, errors %s" % (r["throughput"], r["latency_ms"]["p99"], r["errors"]))'
}
echo "B alone:        $(get || cat $D/get.json $D/get.err)"
$A --kubeconfig=$D/alice.kubeconfig --json --timeout-s 40 --conns 4 list --n 100000 --concurrency 64 --namespace bench >$D/flood.json 2>/dev/null &
FLOOD=$!
sleep 5
if [ -n "$DUMP" ]; then
  # Samples bob's requests in flow control while he runs.
  (sleep 2; for i in $(seq 1 20); do
    curl -sk --cert $D/pki/admin.crt --key $D/pki/admin.key "https://127.0.0.1:$PORT/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1" | grep -c ", bob," ; sleep 0.2
  done | sort | uniq -c) >&2 &
fi
echo "B under flood:  $(get)"
wait $FLOOD || true
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("A (flooding):   %d lists ok (%.1f/s), errors %s" % (r["ok"], r["throughput"], r["errors"]))' $D/flood.json
