"""Validates rendered elicitgate manifests; run by check.sh inside deploy/kubernetes/.venv.

    validate.py render FILE --kube-version V [--kube-version V ...] --config-out PATH --env-out PATH
        Every document strictly against the Kubernetes schemas of each version V
        (kubernetes-validate; an unknown field, type or kind is an error) or, for the
        Prometheus Operator's monitoring.coreos.com kinds, against the CRD's schema made
        strict the same way. Then what the deployment relies on: the Pod Security Standard
        "restricted", the preStop sleep and grace period against timeouts.shutdown_grace, the
        configuration mounted as a directory, several replicas only on Redis state and with a
        PodDisruptionBudget. Writes the ConfigMap's elicitgate.yaml to PATH and the names of
        the environment variables the pod takes from Secrets to --env-out, one a line.
    validate.py self-test FILE --kube-version V
        Mutated copies of FILE's documents (an unknown field in the Deployment, in the
        PodMonitor, an unknown kind) must each fail: the strict validation is not a no-op.
    validate.py same-but-state A B
        The two configurations are equal apart from `state`.
    validate.py same FILE_A FILE_B
        The two manifests hold the same objects (comments, order and layout aside).
"""

import argparse
import copy
import re
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

CONFIGMAP = "elicitgate"
CONFIG_KEY = "elicitgate.yaml"


def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def name_of(doc):
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


# --- the Prometheus Operator's custom resources -------------------------------------------

def _strict(schema):
    """additionalProperties: false wherever an object lists its properties (as
    kubernetes-validate's strict schemas do), recursively."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and "(?i)" in pattern[1:]:
            # Go's RE2 takes `^(?i)…` (the CRD's spelling); Python wants the flag first.
            schema["pattern"] = "(?i)" + pattern.replace("(?i)", "")
        for value in schema.values():
            _strict(value)
    elif isinstance(schema, list):
        for value in schema:
            _strict(value)
    return schema


def monitoring_schema(kind, api_version):
    """The JSON schema of a monitoring.coreos.com kind, from the operator's CRD as generated
    into cloudcoil's models (field names as in the CRD, patterns and required fields kept)."""
    if api_version != "monitoring.coreos.com/v1":
        raise LookupError(f"no schema for {api_version} {kind}")
    from cloudcoil.models.prometheus_operator import v1

    model = getattr(v1, kind, None)
    if model is None:
        raise LookupError(f"no schema for {api_version} {kind}")
    return _strict(model.model_json_schema(by_alias=True, mode="validation"))


def validate_doc(doc, versions):
    api_version = doc.get("apiVersion", "")
    if api_version.split("/")[0] == "monitoring.coreos.com":
        schema = monitoring_schema(doc.get("kind"), api_version)
        jsonschema.validate(doc, schema)
        return "CRD schema (prometheus-operator v0.80.1), strict"
    for version in versions:
        kubernetes_validate.validate(doc, version, strict=True)
    return f"Kubernetes {', '.join(versions)}, strict"


# --- what the deployment relies on ---------------------------------------------------------

def duration_seconds(text):
    match = re.fullmatch(r"(\d+)(ms|s|m|h)?", str(text).strip())
    if not match:
        raise ValueError(f"unreadable duration {text!r}")
    value, unit = int(match.group(1)), match.group(2) or "s"
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def restricted_problems(pod):
    """The Pod Security Standard "restricted" (v1.30 and later), for one pod spec."""
    problems = []
    psc = pod.get("securityContext", {})
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            problems.append(f"{key} is set")
    allowed_volumes = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                       "persistentVolumeClaim", "projected", "secret"}
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= allowed_volumes:
            problems.append(f"volume {volume['name']}: {sorted(kinds - allowed_volumes)}")
    containers = pod.get("initContainers", []) + pod.get("containers", [])
    for c in containers:
        sc = c.get("securityContext", {})
        where = f"container {c['name']}"
        if sc.get("privileged"):
            problems.append(f"{where}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation is not false")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            problems.append(f"{where}: capabilities do not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{where}: adds capabilities {caps['add']}")
        if not sc.get("runAsNonRoot", psc.get("runAsNonRoot")):
            problems.append(f"{where}: runAsNonRoot is not true")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            problems.append(f"{where}: runs as uid 0")
        seccomp = sc.get("seccompProfile", psc.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{where}: seccompProfile is {seccomp!r}")
        for port in c.get("ports", []):
            if port.get("hostPort"):
                problems.append(f"{where}: hostPort")
        # Not in the standard, asked of elicitgate's pod all the same.
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{where}: readOnlyRootFilesystem is not true")
    return problems


def check_render(docs, config):
    problems = []
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    deployments = by_kind.get("Deployment", [])
    if len(deployments) != 1:
        return [f"expected one Deployment, found {len(deployments)}"]
    deployment = deployments[0]
    pod = deployment["spec"]["template"]["spec"]
    problems += restricted_problems(pod)
    if pod.get("securityContext", {}).get("seccompProfile", {}).get("type") != "RuntimeDefault":
        problems.append("pod seccompProfile is not RuntimeDefault")
    (gateway,) = [c for c in pod["containers"] if c["name"] == "elicitgate"]

    # Shutdown: preStop sleep + shutdown_grace must fit in the grace period.
    sleep = gateway.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds")
    if sleep is None:
        problems.append("no preStop sleep action")
        sleep = 0
    grace = pod.get("terminationGracePeriodSeconds", 30)
    shutdown = duration_seconds(config.get("timeouts", {}).get("shutdown_grace", "30s"))
    if grace < sleep + shutdown + 1:
        problems.append(f"terminationGracePeriodSeconds {grace} < preStop {sleep} s"
                        f" + shutdown_grace {shutdown:g} s + 1")

    # The configuration: the ConfigMap mounted as a directory (no subPath), the file that
    # `serve --config` names inside it.
    mounts = [m for m in gateway.get("volumeMounts", [])]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    config_mounts = [m for m in mounts
                     if volumes.get(m["name"], {}).get("configMap", {}).get("name") == CONFIGMAP]
    if len(config_mounts) != 1:
        problems.append("the ConfigMap is not mounted exactly once")
    else:
        mount = config_mounts[0]
        if "subPath" in mount or "subPathExpr" in mount:
            problems.append("the ConfigMap is mounted with subPath: reloads would never arrive")
        wanted = f"{mount['mountPath'].rstrip('/')}/{CONFIG_KEY}"
        if wanted not in gateway.get("args", []):
            problems.append(f"serve does not read {wanted}")

    # Probes and ports as elicitgate serves them.
    ports = {p["name"]: p["containerPort"] for p in gateway.get("ports", [])}
    listen_port = int(str(config.get("listen", "")).rsplit(":", 1)[-1] or 0)
    admin_port = int(str(config.get("admin_listen", "")).rsplit(":", 1)[-1] or 0)
    if ports.get("mcp") != listen_port or ports.get("admin") != admin_port:
        problems.append(f"container ports {ports} do not match listen/admin_listen")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = gateway.get(probe, {}).get("httpGet", {})
        if get.get("path") != path or get.get("port") != "admin":
            problems.append(f"{probe} is not {path} on the admin port")
    limits = gateway.get("resources", {}).get("limits", {})
    if "memory" not in limits:
        problems.append("no memory limit")

    # Several replicas only on shared state, with a disruption budget.
    replicas = deployment["spec"].get("replicas", 1)
    env = {e["name"] for e in gateway.get("env", [])}
    if "ELICITGATE__AUDIT__SALT" not in env:
        problems.append("the audit salt is not set from the environment")
    backend = config.get("state", {}).get("backend", "memory")
    if replicas > 1:
        if backend != "redis":
            problems.append(f"{replicas} replicas on state.backend {backend}")
        if "ELICITGATE__STATE__REDIS__URL" not in env and "cluster" not in config.get(
                "state", {}).get("redis", {}):
            problems.append("no Redis URL for the replicas")
        if not by_kind.get("PodDisruptionBudget"):
            problems.append(f"{replicas} replicas without a PodDisruptionBudget")
    if not by_kind.get("NetworkPolicy"):
        problems.append("no NetworkPolicy")

    # What the configuration sends out must be let out: trace export and syslog audit go to
    # ports the NetworkPolicy's egress must name (a policy that drops them fails silently).
    problems += egress_problems(by_kind.get("NetworkPolicy", []), config)

    # Monitoring as shipped must fire: the alerts match `job="elicitgate"`, and the rules the
    # operator loads are deploy/prometheus/alerts.yml's.
    for monitor in by_kind.get("PodMonitor", []):
        label = monitor["spec"].get("jobLabel")
        job = deployment["spec"]["template"]["metadata"].get("labels", {}).get(label or "")
        if job != ALERT_JOB:
            problems.append(f"PodMonitor job would be {job or '<namespace>/' + name_of(monitor)!r},"
                            f" the alerts expect {ALERT_JOB!r} (set jobLabel)")
    for rule in by_kind.get("PrometheusRule", []):
        if rule["spec"].get("groups") != alert_groups():
            problems.append("PrometheusRule differs from deploy/prometheus/alerts.yml"
                            " (regenerate: validate.py prometheus-rule)")
    return problems


def _port(target, default):
    """The port of `http(s)://host:port/…` or `host:port` (the scheme's default if none)."""
    rest = target.split("://", 1)[-1].split("/", 1)[0]
    if rest.rsplit(":", 1)[-1].isdigit() and not rest.endswith("]"):
        return int(rest.rsplit(":", 1)[-1])
    if target.startswith("https://"):
        return 443
    return default


def egress_problems(policies, config):
    needs = []
    endpoint = (config.get("telemetry") or {}).get("endpoint")
    if endpoint:
        needs.append(("telemetry.endpoint (OTLP)", _port(str(endpoint), 4318)))
    syslog = ((config.get("audit") or {}).get("syslog") or {}).get("address")
    if syslog:
        needs.append(("audit.syslog.address", _port(str(syslog), 514)))
    problems = []
    for policy in policies:
        rules = policy["spec"].get("egress", [])
        # A rule without `ports` lets every port out.
        open_ports = {p.get("port") for r in rules for p in r.get("ports", [])}
        if any("ports" not in r for r in rules):
            continue
        for what, port in needs:
            if port not in open_ports:
                problems.append(f"NetworkPolicy egress does not allow port {port} for {what}")
    return problems


ALERT_JOB = "elicitgate"
ALERTS = Path(__file__).resolve().parent.parent / "prometheus" / "alerts.yml"
RULE_FILE = (Path(__file__).resolve().parent / "components" / "prometheus-operator"
             / "prometheusrule.yaml")
RULE_HEADER = """# The alert rules of deploy/prometheus/alerts.yml as a PrometheusRule (same groups, same
# rules; deploy/kubernetes/check.sh fails when they differ). Regenerate after editing
# alerts.yml: python3 deploy/kubernetes/validate.py prometheus-rule
"""


def alert_groups():
    return yaml.safe_load(ALERTS.read_text())["groups"]


def cmd_prometheus_rule(args):
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "elicitgate", "labels": {"app.kubernetes.io/name": "elicitgate"}},
        "spec": {"groups": alert_groups()},
    }
    RULE_FILE.write_text(RULE_HEADER + yaml.safe_dump(doc, sort_keys=False, width=100))
    print(f"wrote {RULE_FILE}")
    return 0


def secret_env(docs):
    names = []
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        for c in doc["spec"]["template"]["spec"]["containers"]:
            for e in c.get("env", []):
                if "secretKeyRef" in e.get("valueFrom", {}):
                    names.append(e["name"])
    return names


def embedded_config(docs):
    maps = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == CONFIGMAP]
    if len(maps) != 1 or CONFIG_KEY not in maps[0].get("data", {}):
        raise SystemExit(f"no ConfigMap {CONFIGMAP} with {CONFIG_KEY}")
    return maps[0]["data"][CONFIG_KEY]


# --- commands -------------------------------------------------------------------------------

def cmd_render(args):
    docs = load_docs(args.file)
    failed = False
    for doc in docs:
        try:
            how = validate_doc(doc, args.kube_version)
            print(f"  ok    {name_of(doc):40} {how}")
        except (jsonschema.ValidationError, kubernetes_validate.ValidationError) as e:
            failed = True
            path = "/".join(str(p) for p in e.absolute_path) if hasattr(e, "absolute_path") else ""
            print(f"  FAIL  {name_of(doc):40} {e.message} at {path or '(top)'}")
        except (kubernetes_validate.SchemaNotFoundError, LookupError) as e:
            failed = True
            print(f"  FAIL  {name_of(doc):40} no schema: {e}")
    text = embedded_config(docs)
    config = yaml.safe_load(text)
    problems = check_render(docs, config)
    for problem in problems:
        print(f"  FAIL  {problem}")
    if not problems:
        print("  ok    restricted pod security, preStop + grace >= shutdown_grace,"
              " config mounted as a directory, replicas vs state")
    with open(args.config_out, "w", encoding="utf-8") as f:
        f.write(text)
    with open(args.env_out, "w", encoding="utf-8") as f:
        f.write("".join(f"{n}\n" for n in secret_env(docs)))
    return 1 if failed or problems else 0


def cmd_self_test(args):
    docs = load_docs(args.file)
    cases = []
    for i, doc in enumerate(docs):
        if doc["kind"] == "Deployment":
            bad = copy.deepcopy(doc)
            bad["spec"]["template"]["spec"]["containers"][0]["bogusField"] = True
            cases.append(("Deployment with an unknown container field", bad))
            bad = copy.deepcopy(doc)
            bad["spec"]["replicas"] = "two"
            cases.append(("Deployment with a string for replicas", bad))
        if doc["kind"] == "PodMonitor":
            bad = copy.deepcopy(doc)
            bad["spec"]["podMetricsEndpoints"][0]["intervall"] = "30s"
            cases.append(("PodMonitor with an unknown endpoint field", bad))
            bad = copy.deepcopy(doc)
            bad["spec"]["podMetricsEndpoints"][0]["interval"] = "thirty seconds"
            cases.append(("PodMonitor with a malformed interval", bad))
            bad = copy.deepcopy(doc)
            del bad["spec"]["selector"]
            cases.append(("PodMonitor without its required selector", bad))
    cases.append(("an unknown kind", {"apiVersion": "example.com/v1", "kind": "Widget",
                                      "metadata": {"name": "w"}}))
    if not any(c[0].startswith("PodMonitor") for c in cases):
        print("  FAIL  self-test needs a render with the PodMonitor")
        return 1
    failed = False
    for what, bad in cases:
        try:
            validate_doc(bad, args.kube_version)
            print(f"  FAIL  accepted: {what}")
            failed = True
        except (jsonschema.ValidationError, kubernetes_validate.ValidationError,
                kubernetes_validate.SchemaNotFoundError, LookupError) as e:
            reason = str(getattr(e, "message", e)).splitlines()[0][:70]
            print(f"  ok    rejected: {what} ({reason})")
    # The monitoring checks of check_render: a PodMonitor without its job label, and rules
    # that drifted from alerts.yml, must each be reported; so must trace export the
    # NetworkPolicy would drop.
    config = yaml.safe_load(embedded_config(docs))
    with_traces = dict(config, telemetry={"endpoint": "http://otel-collector.observability:4318"})
    if egress_problems([d for d in docs if d["kind"] == "NetworkPolicy"], with_traces):
        print("  ok    reported: trace export the NetworkPolicy drops")
    else:
        print("  FAIL  not reported: trace export the NetworkPolicy drops")
        failed = True
    for what, change in (
        ("PodMonitor without jobLabel", lambda d: d["kind"] == "PodMonitor"
         and d["spec"].pop("jobLabel")),
        ("PrometheusRule drifted from alerts.yml", lambda d: d["kind"] == "PrometheusRule"
         and d["spec"]["groups"][0]["rules"].pop()),
    ):
        bad = copy.deepcopy(docs)
        if not any(change(d) for d in bad):
            print(f"  FAIL  self-test needs a render with what '{what}' changes")
            failed = True
        elif check_render(bad, config):
            print(f"  ok    reported: {what}")
        else:
            print(f"  FAIL  not reported: {what}")
            failed = True
    return 1 if failed else 0


def cmd_same_but_state(args):
    a, b = (yaml.safe_load(open(p, encoding="utf-8")) for p in (args.a, args.b))
    a.pop("state", None)
    b.pop("state", None)
    if a != b:
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        print(f"  FAIL  {args.a} and {args.b} differ beyond `state`: {keys}")
        return 1
    print(f"  ok    {args.a} and {args.b} differ only in `state`")
    return 0


def cmd_same(args):
    def key(doc):
        return (doc.get("apiVersion"), doc.get("kind"), doc["metadata"].get("namespace"),
                doc["metadata"].get("name"))

    a, b = ({key(d): d for d in load_docs(p)} for p in (args.a, args.b))
    if a != b:
        diff = sorted(str(k) for k in set(a) | set(b) if a.get(k) != b.get(k))
        print(f"  FAIL  {args.a} is not what {args.b} renders: {diff}")
        return 1
    print(f"  ok    {args.a} is up to date")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("render")
    p.add_argument("file")
    p.add_argument("--kube-version", action="append", required=True)
    p.add_argument("--config-out", required=True)
    p.add_argument("--env-out", required=True)
    p.set_defaults(func=cmd_render)
    p = sub.add_parser("self-test")
    p.add_argument("file")
    p.add_argument("--kube-version", action="append", required=True)
    p.set_defaults(func=cmd_self_test)
    p = sub.add_parser("same-but-state")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_same_but_state)
    p = sub.add_parser("prometheus-rule", help="regenerate the PrometheusRule from alerts.yml")
    p.set_defaults(func=cmd_prometheus_rule)
    p = sub.add_parser("same")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_same)
    args = parser.parse_args()
    sys.exit(args.func(args))


if __name__ == "__main__":
    main()
