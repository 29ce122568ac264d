#!/usr/bin/env bash
# Compare the pod DNS and /etc/hosts of klet with the real kubelet's
# (standalone), one after the other on one private klet-managed containerd:
# each pod copies its /etc/resolv.conf, /etc/hosts and hostname to a hostPath
# dir, and the two agents' copies are diffed (pod IPs replaced by POD_IP).
# Two passes per agent: with clusterDNS 10.96.0.10, clusterDomain
# cluster.local and a test resolver file; then without clusterDNS and with
# resolvConf "" (MissingClusterDNS, the loopback nameserver).
#
#   scripts/compare-dns.sh [OUT]
#
# Needs root, a built klet (npm run build), Node 24 on PATH and the kubelet
# built by scripts/build-k8s.sh (KUBELET, default /var/cache/klet-k8s/v1.34.4/kubelet).
# Never run it on a runtime anything else uses: the kubelet removes the pods
# it does not know.
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-dns-XXXXXX)}
mkdir -p "$OUT"
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"

$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"
RESOLV="$OUT/resolv.conf"
printf '# test\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch corp.example lab.example.\noptions edns0 ndots:2\n' >"$RESOLV"

# ---- the manifests: each pod copies what it sees to /out/<pod>.* ----------
manifests() { # dir outdir pass
  local d="$1" o="$2"
  mkdir -p "$d" "$o"
  pod() { # name spec-lines
    cat >"$d/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: kdns}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: out, hostPath: {path: $o, type: Directory}}]
  containers:
    - name: c
      image: $BB
      command: ["sh", "-c", "cat /etc/resolv.conf > /out/$1.resolv; cat /etc/hosts > /out/$1.hosts; hostname > /out/$1.hostname; exec sleep 3600"]
      volumeMounts: [{name: out, mountPath: /out}]
$2
EOF
  }
  pod cf "  hostname: box
  subdomain: db
  hostAliases: [{ip: 123.45.67.89, hostnames: [foo, bar]}]"
  if [ "$3" = 2 ]; then return; fi
  pod fqdn "  hostname: box
  subdomain: db
  setHostnameAsFQDN: true"
  pod dflt "  dnsPolicy: Default"
  pod none "  dnsPolicy: None
  dnsConfig: {nameservers: [1.1.1.1, 1.0.0.1, 8.8.8.8], searches: [x.example, x.example], options: [{name: ndots, value: '1'}, {name: edns0}]}"
  pod cf-ns "  dnsConfig: {nameservers: [1.1.1.1, 1.0.0.1, 8.8.8.8]}"
  pod hostnet "  hostNetwork: true
  hostAliases: [{ip: 123.45.67.89, hostnames: [foo, bar]}]"
  pod hostnet-cf "  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  dnsConfig: {options: [{name: ndots, value: '3'}, {name: timeout, value: '2'}]}"
  pod longsearch "  dnsConfig: {searches: [$(seq -s, -f 's%g.example' 1 30)]}"
  pod "name-of-sixty-five-characters-so-the-hostname-is-cut-to-sixty-3" ""
}

# ---- the kubelet -------------------------------------------------------
wait_files() { # dir count
  for _ in $(seq 90); do [ "$(ls "$1" | grep -c '\.hostname$')" -ge "$2" ] && return; sleep 1; done
  echo "only $(ls "$1" | grep -c '\.hostname$') of $2 pods wrote their files in $1" >&2
}
for pass in 1 2; do
  if [ $pass = 1 ]; then DNSCFG=$'clusterDNS: [10.96.0.10]\nclusterDomain: cluster.local'; RC="$RESOLV"; N=9; else DNSCFG=''; RC=''; N=1; fi
  manifests "$OUT/m-kubelet-$pass" "$OUT/kubelet-$pass-out" $pass
  KUBELET_EXTRA="$DNSCFG"$'\n'"resolvConf: \"$RC\""
  run_kubelet "$OUT/m-kubelet-$pass" "$pass"
  wait_files "$OUT/kubelet-$pass-out" $N
  sleep 3
  empty_kubelet "$OUT/m-kubelet-$pass"
  stop_kubelet

  manifests "$OUT/m-klet-$pass" "$OUT/klet-$pass-out" $pass
  if [ $pass = 1 ]; then FLAGS=(--cluster-dns 10.96.0.10 --cluster-domain cluster.local --resolv-conf "$RESOLV"); else FLAGS=(--resolv-conf ''); fi
  $KLET sync --manifest-dir "$OUT/m-klet-$pass" --file-check-frequency 1s --cgroups-per-qos=false --enforce-node-allocatable=none "${FLAGS[@]}" "${COMMON[@]}" >"$OUT/klet-$pass-sync.log" 2>&1 &
  SPID=$!
  wait_files "$OUT/klet-$pass-out" $N
  sleep 3
  $KLET events -o json "${COMMON[@]}" >"$OUT/klet-$pass-events.json" 2>&1 || true
  rm -f "$OUT/m-klet-$pass"/*.yaml
  sleep 8
  kill "$SPID"; wait "$SPID" || true; SPID=''
  $KLET delete --all "${COMMON[@]}" >/dev/null 2>&1 || true

  # Pod IPs differ between the runs.
  for a in kubelet klet; do
    for f in "$OUT/$a-$pass-out"/*.hosts; do sed -i -E 's/^10\.[0-9]+\.[0-9]+\.[0-9]+\t/POD_IP\t/' "$f"; done
  done
  diff -r "$OUT/kubelet-$pass-out" "$OUT/klet-$pass-out" >"$OUT/diff-$pass.txt" && echo "pass $pass: identical" || echo "pass $pass: differences in $OUT/diff-$pass.txt"
  grep -E 'reason="(MissingClusterDNS|DNSConfigForming|CheckLimitsForResolvConf)"' "$OUT/kubelet-$pass/kubelet.log" | sed -E 's/^.*"Event occurred" //' | sort | uniq -c >"$OUT/kubelet-$pass-dns-events.txt" || true
done
echo "results in $OUT"
