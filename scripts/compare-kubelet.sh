#!/usr/bin/env bash
# Compare klet with the real kubelet (standalone) on the manifests of issue 36
# ("Kubelet fidelity II"), one after the other on one private klet-managed
# containerd. Writes everything under OUT (default: a new temp dir) and prints
# it: the kubelet's /pods (read-only port on loopback) and log, klet's status,
# events and runonce reports, and each agent's sidecar stop order.
#
#   scripts/compare-kubelet.sh [OUT]
#
# Needs root, a built klet (npm run build), Node 24 on PATH and the kubelet
# built by scripts/build-k8s.sh (KUBELET, default /var/cache/klet-k8s/v1.34.4/kubelet).
# Never run it on a runtime anything else uses: the kubelet removes the pods
# it does not know.
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-XXXXXX)}
mkdir -p "$OUT"
KUBELET_EXTRA='allowedUnsafeSysctls: [net.ipv4.klet_no_such_sysctl]'
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"
PORT=$((34000 + RANDOM % 2000))

$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"

# ---- the manifests -----------------------------------------------------
M="$OUT/manifests"
mkdir -p "$M" "$OUT/order-kubelet" "$OUT/order-klet"
# 1. a control-plane pod that dies 1 s after it starts (bad flag / port in use)
cat >"$M/dies.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: dies}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: c
      image: $BB
      command: ["sh", "-c", "echo 'listen tcp :2379: bind: address already in use' >&2; sleep 1; exit 3"]
EOF
# 2. the docs' "Sidecar containers" example (as a pod), a sidecar job with a
#    startup probe, and a pod with two sidecars whose stop order is recorded
cat >"$M/sidecar-docs.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: myapp, labels: {app: myapp}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: myapp
      image: $BB
      command: ['sh', '-c', 'while true; do echo "logging" >> /opt/logs.txt; sleep 1; done']
      volumeMounts: [{name: data, mountPath: /opt}]
  initContainers:
    - name: logshipper
      image: $BB
      restartPolicy: Always
      command: ['sh', '-c', 'tail -F /opt/logs.txt']
      volumeMounts: [{name: data, mountPath: /opt}]
  volumes: [{name: data, emptyDir: {}}]
EOF
cat >"$M/sidejob.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: sidejob}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes: [{name: shared, emptyDir: {}}]
  initContainers:
    - name: shipper
      image: $BB
      restartPolicy: Always
      command: ["sh", "-c", "sleep 2; touch /shared/ready; exec sleep 3600"]
      startupProbe: {exec: {command: ["test", "-f", "/shared/ready"]}, periodSeconds: 1, failureThreshold: 30}
      volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
    - name: c
      image: $BB
      command: ["test", "-f", "/shared/ready"]
      volumeMounts: [{name: shared, mountPath: /shared}]
EOF
sidecar_order() { # $1 hostPath dir
  local c
  echo "apiVersion: v1
kind: Pod
metadata: {name: sidecars}
spec:
  terminationGracePeriodSeconds: 20
  volumes: [{name: out, hostPath: {path: $1, type: Directory}}]"
  for c in init:first: init:second: app:app:'sleep 1; '; do
    IFS=: read -r kind name pre <<<"$c"
    [ "$name" = first ] && echo "  initContainers:"
    [ "$name" = app ] && echo "  containers:"
    echo "    - name: $name
      image: $BB"
    [ "$kind" = init ] && echo "      restartPolicy: Always"
    echo "      command: [\"sh\", \"-c\", \"trap '${pre}echo $name \$(date +%s.%N) >> /out/order; exit 0' TERM; sleep 1000000 & wait\"]
      volumeMounts: [{name: out, mountPath: /out}]"
  done
}
# 4. two pods on one hostPort: the file first in order is the newer one
port_pod() { # name created
  echo "apiVersion: v1
kind: Pod
metadata: {name: $1, creationTimestamp: \"$2\"}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: c
      image: $BB
      command: [sleep, '3600']
      ports: [{containerPort: 80, hostPort: $PORT}]"
}
port_pod newer 2025-06-01T00:00:00Z >"$M/port-a.yaml"
port_pod older 2025-01-01T00:00:00Z >"$M/port-b.yaml"
# 5. a preStop hook that fails, in a container that ignores SIGTERM (Killing's timing)
cat >"$M/prestop.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: prestop}
spec:
  terminationGracePeriodSeconds: 4
  containers:
    - name: badhook
      image: $BB
      command: [sleep, '3600']
      lifecycle: {preStop: {exec: {command: ["sh", "-c", "echo hook failing; exit 7"]}}}
EOF
cat >"$M/envfrom.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: envfrom}
spec:
  containers:
    - name: c
      image: $BB
      command: [sleep, '3600']
      envFrom: [{configMapRef: {name: settings}}]
EOF
cat >"$M/nosandbox.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: nosandbox}
spec:
  securityContext: {sysctls: [{name: net.ipv4.klet_no_such_sysctl, value: '1'}]}
  containers: [{name: c, image: $BB, command: [sleep, '3600']}]
EOF
cat >"$M/unsafe-sysctl.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: unsafe-sysctl}
spec:
  securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}
  containers: [{name: c, image: $BB, command: [sleep, '3600']}]
EOF
# 6. a kubeadm-shaped static pod dumped with kubectl get -o yaml (mirror
#    annotation, old creationTimestamp), and the same without the annotation
kubeadm_pod() { # name annotation
  echo "apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: kube-system
  creationTimestamp: \"2024-01-01T00:00:00Z\"
  labels: {component: $1, tier: control-plane}
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.1:2379$2
spec:
  priorityClassName: system-node-critical
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  terminationGracePeriodSeconds: 1
  containers:
    - name: $1
      image: $BB
      imagePullPolicy: IfNotPresent
      command: [sleep, '3600']
      resources: {requests: {cpu: 100m, memory: 100Mi}}"
}
kubeadm_pod etcd-dumped $'\n    kubernetes.io/config.mirror: 0123456789abcdef0123456789abcdef' >"$M/etcd-dumped.yaml"
kubeadm_pod etcd-old '' >"$M/etcd-old.yaml"

# ---- the kubelet -------------------------------------------------------
MK="$OUT/manifests-kubelet"
cp -r "$M" "$MK"
sidecar_order "$OUT/order-kubelet" >"$MK/sidecars.yaml"
START=$(date +%s.%N)
run_kubelet "$MK" main
sleep 8; kpods "$OUT/kubelet-pods-8s.json"
sleep 22; kpods "$OUT/kubelet-pods-30s.json"
echo "$(date +%s.%N) remove sidecars prestop" >"$OUT/kubelet-removed.txt"
mv "$MK/sidecars.yaml" "$MK/prestop.yaml" "$OUT/"
sleep 12; kpods "$OUT/kubelet-pods-removed.json"
# Empty the static pod path: the kubelet stops and removes every pod of its own.
empty_kubelet "$MK"
sleep 2
stop_kubelet
# A single file as staticPodPath.
run_kubelet "$M/dies.yaml" single
sleep 5; kpods "$OUT/kubelet-single-pods.json"
mv "$M/dies.yaml" "$M/dies.yaml.off"; sleep 8; stop_kubelet; mv "$M/dies.yaml.off" "$M/dies.yaml"
echo "kubelet done $START"

# ---- klet sync ---------------------------------------------------------
MS="$OUT/manifests-klet"
cp -r "$M" "$MS"
sidecar_order "$OUT/order-klet" >"$MS/sidecars.yaml"
$KLET sync --manifest-dir "$MS" --file-check-frequency 1s --allowed-unsafe-sysctls net.ipv4.klet_no_such_sysctl --cgroups-per-qos=false --enforce-node-allocatable=none "${COMMON[@]}" >"$OUT/klet-sync.log" 2>&1 &
SPID=$!
sleep 8; $KLET status -o json "${COMMON[@]}" >"$OUT/klet-status-8s.json"
sleep 22; $KLET status -o json "${COMMON[@]}" >"$OUT/klet-status-30s.json"
echo "$(date +%s.%N) remove sidecars prestop" >"$OUT/klet-removed.txt"
rm "$MS/sidecars.yaml" "$MS/prestop.yaml"
sleep 12; $KLET status -o json "${COMMON[@]}" >"$OUT/klet-status-removed.json"
$KLET events -o json "${COMMON[@]}" >"$OUT/klet-events.json"
rm -f "$MS"/*.yaml
sleep 10
kill "$SPID"; wait "$SPID" || true; SPID=''
$KLET delete --all "${COMMON[@]}" >/dev/null 2>&1 || true

# ---- runonce: the kubelet's deprecated --runonce, then klet runonce -------
mkdir -p "$OUT/runonce"
cp "$M/dies.yaml" "$M/sidejob.yaml" "$M/port-a.yaml" "$M/port-b.yaml" "$M/sidecar-docs.yaml" "$OUT/runonce/"
d="$OUT/kubelet-runonce"
kubelet_config "$OUT/runonce" "$d"
# v1.34 refuses it: "invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated".
"$KUBELET" --config "$d/config.yaml" --root-dir "$d/root" --hostname-override "$NODE" \
  --runonce --enable-server=false --v=3 >"$d/kubelet.log" 2>&1 && echo 0 >"$d/rc.txt" || echo $? >"$d/rc.txt"
umount "$d/root" 2>/dev/null || true
$KLET runonce --manifest-dir "$OUT/runonce" --cleanup -o json --cgroups-per-qos=false --enforce-node-allocatable=none "${COMMON[@]}" >"$OUT/klet-runonce.json" 2>"$OUT/klet-runonce.err" || true
$KLET runonce --pod-manifest-path "$M/sidejob.yaml" --cleanup -o json --cgroups-per-qos=false --enforce-node-allocatable=none "${COMMON[@]}" >"$OUT/klet-runonce-single.json" 2>"$OUT/klet-runonce-single.err" || true
echo "results in $OUT"
