"""Checks rendered Kubernetes manifests against the API types, strictly, offline.

Usage: deploy_manifests_check.py FILE.yaml...   (exit 1 naming every problem)
       deploy_manifests_check.py --args FILE.yaml   (prints each container's args as JSON lines)

Every field of every object must be one the type has (Debian's python3-kubernetes models, the API
of Kubernetes 1.22), of its type, with every required field present (the models' own checks when
deserialized); the few fields newer than those models are listed in NEWER with their type and
version. Quantities, names and label values are checked as the API server would. Then what
sharding needs: an Indexed Job whose shards all run at once, are not retried and do not stop one
another, a pinned image, a run id in names and paths, a ReadWriteMany claim with a storage class.
And what a record sidecar needs (check_sidecar): its upstream another container of the pod, its
probes on its admin port's /healthz and /readyz, its --out on a claimed volume with a --max-disk
budget, and a Service that sends clients to its --listen port.
"""
import json
import re
import sys

import yaml
import kubernetes.client as k8s
from kubernetes.client.api_client import ApiClient

# Fields the models predate: (model, JSON name) -> (Python type, Kubernetes version).
NEWER = {
    ("V1JobSpec", "backoffLimitPerIndex"): (int, "1.29"),
    ("V1JobSpec", "maxFailedIndexes"): (int, "1.29"),
}
KINDS = {("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim", ("v1", "Pod"): "V1Pod",
         ("batch/v1", "Job"): "V1Job", ("apps/v1", "Deployment"): "V1Deployment",
         ("v1", "Service"): "V1Service"}
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

problems = []


def problem(path, text):
    problems.append(f"{path}: {text}")


def check_value(value, type_name, path):
    """Walks `value` as the model type `type_name` says (openapi_types strings)."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            return problem(path, f"expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            check_value(item, type_name[5:-1], f"{path}[{i}]")
    elif type_name.startswith("dict("):
        if not isinstance(value, dict):
            return problem(path, f"expected a map, got {type(value).__name__}")
        inner = type_name[type_name.index(",") + 1:-1].strip()
        for key, item in value.items():
            check_value(item, inner, f"{path}.{key}")
    elif type_name == "str":
        if not isinstance(value, str):
            problem(path, f"expected a string, got {value!r} (quote it)")
    elif type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            problem(path, f"expected an integer, got {value!r}")
    elif type_name == "bool":
        if not isinstance(value, bool):
            problem(path, f"expected true or false, got {value!r}")
    elif type_name in ("object", "datetime", "float"):
        pass
    else:
        model = getattr(k8s, type_name)
        if not isinstance(value, dict):
            return problem(path, f"expected an object ({type_name}), got {value!r}")
        fields = {json_name: python_name for python_name, json_name in model.attribute_map.items()}
        for key, item in value.items():
            if key in fields:
                check_value(item, model.openapi_types[fields[key]], f"{path}.{key}")
            elif (type_name, key) in NEWER:
                expected, version = NEWER[(type_name, key)]
                if not isinstance(item, expected) or isinstance(item, bool):
                    problem(f"{path}.{key}", f"expected {expected.__name__} (Kubernetes {version})")
            else:
                problem(f"{path}.{key}", f"no such field in {type_name}")


class Response:  # what ApiClient.deserialize reads
    def __init__(self, document):
        self.data = json.dumps(document)


def check_required(document, model_name, path):
    known = json.loads(json.dumps(document))
    for (model, key) in NEWER:  # the models would drop them anyway; keep their checks out
        if model == "V1JobSpec":
            known.get("spec", {}).pop(key, None)
    try:
        ApiClient().deserialize(Response(known), model_name)
    except (ValueError, TypeError) as e:
        problem(path, f"rejected by the {model_name} model: {e}")


def walk_dicts(value, path=""):
    if isinstance(value, dict):
        yield path, value
        for key, item in value.items():
            yield from walk_dicts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk_dicts(item, f"{path}[{i}]")


def check_conventions(document, path):
    name = document.get("metadata", {}).get("name", "")
    if not DNS_LABEL.match(name) or len(name) > 63:
        problem(f"{path}.metadata.name", f"'{name}' is not a DNS label (lowercase, digits, '-', at most 63)")
    for where, node in walk_dicts(document):
        for key in ("labels", "matchLabels"):
            for label, text in (node.get(key) or {}).items():
                if not isinstance(text, str) or not LABEL_VALUE.match(text) or len(text) > 63:
                    problem(f"{path}{where}.{key}.{label}", f"'{text}' is not a label value")
        for key in ("requests", "limits"):
            for resource, amount in (node.get(key) or {}).items():
                if not QUANTITY.match(str(amount)):
                    problem(f"{path}{where}.{key}.{resource}", f"'{amount}' is not a quantity")
        image = node.get("image")
        if isinstance(image, str) and ("${" in image or image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]):
            problem(f"{path}{where}.image", f"'{image}' has no pinned tag")
        # $(VAR) in args is expanded by Kubernetes from the container's env only.
        if "args" in node and "name" in node:
            env = {e["name"] for e in node.get("env", [])}
            for arg in node["args"]:
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", str(arg)):
                    if var not in env:
                        problem(f"{path}{where}.args", f"$({var}) is not in the container's env")


def check_sharding(documents):
    by_kind = {}
    for path, document in documents:
        by_kind.setdefault(document["kind"], []).append((path, document))
    claims = {d["metadata"]["name"]: (p, d) for p, d in by_kind.get("PersistentVolumeClaim", [])}
    shared = {volume.get("persistentVolumeClaim", {}).get("claimName")
              for _, job in by_kind.get("Job", []) + by_kind.get("Pod", [])
              for volume in (job["spec"].get("template", {}).get("spec") or job["spec"]).get("volumes", [])}
    for name, (path, claim) in claims.items():
        if not claim["spec"].get("storageClassName"):
            problem(f"{path}.spec.storageClassName", "empty: name a storage class")
        if name in shared and claim["spec"].get("accessModes") != ["ReadWriteMany"]:
            problem(f"{path}.spec.accessModes", "every shard's pod mounts it: ReadWriteMany")
    for path, job in by_kind.get("Job", []):
        spec = job["spec"]
        pod = spec["template"]["spec"]
        if pod.get("restartPolicy") != "Never":
            problem(f"{path}.spec.template.spec.restartPolicy", "a restarted shard would start late")
        if spec.get("completionMode") == "Indexed":
            if not spec.get("completions") == spec.get("parallelism"):
                problem(f"{path}.spec", "completions and parallelism differ: shards would not all run at once")
            if spec.get("backoffLimitPerIndex") != 0:
                problem(f"{path}.spec.backoffLimitPerIndex", "not 0: a retried shard starts late")
            if spec.get("maxFailedIndexes") != spec.get("completions"):
                problem(f"{path}.spec.maxFailedIndexes", "below completions: a failed shard would stop the others")
            labels = spec["template"].get("metadata", {}).get("labels", {})
            spread = pod.get("topologySpreadConstraints") or []
            if not spread:
                problem(f"{path}.spec.template.spec", "no topologySpreadConstraints: shards may share a node")
            for constraint in spread:
                selector = constraint.get("labelSelector", {}).get("matchLabels", {})
                if not selector or any(labels.get(key) != value for key, value in selector.items()):
                    problem(f"{path}...topologySpreadConstraints", "its labelSelector does not select the shards' pods")
        for volume in pod.get("volumes", []):
            claim = volume.get("persistentVolumeClaim", {}).get("claimName")
            if claim and claim not in claims:
                problem(f"{path}...volumes", f"claim '{claim}' is not defined by the manifests checked")
        for container in pod["containers"]:
            if "memory" not in container.get("resources", {}).get("requests", {}):
                problem(f"{path}...containers.{container['name']}", "no memory request")


def flag_values(args):
    """{--flag: value or True} of a command line's flags."""
    values = {}
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            following = args[i + 1] if i + 1 < len(args) else None
            values[arg] = following if following is not None and not following.startswith("--") else True
    return values


def port_number(port, container):
    if isinstance(port, int):
        return port
    for item in container.get("ports", []):
        if item.get("name") == port:
            return item["containerPort"]
    return None


def check_sidecar(documents):
    claims = {d["metadata"]["name"] for _, d in documents if d["kind"] == "PersistentVolumeClaim"}
    services = [(p, d) for p, d in documents if d["kind"] == "Service"]
    for path, deployment in documents:
        if deployment["kind"] != "Deployment":
            continue
        template = deployment["spec"]["template"]
        pod = template["spec"]
        labels = template.get("metadata", {}).get("labels", {})
        for container in pod["containers"]:
            args = [str(a) for a in container.get("args", [])]
            if args[:1] != ["record"]:
                continue
            where = f"{path}...containers.{container['name']}"
            flags = flag_values(args)
            admin = flags.get("--admin-listen")
            if not isinstance(admin, str):
                problem(where, "no --admin-listen: the probes have nothing to ask")
                continue
            admin_host, admin_port = admin.rsplit(":", 1)
            if admin_host not in ("127.0.0.1", "::1") and "--admin-listen-any" not in flags:
                problem(where, "--admin-listen on a non-loopback address needs --admin-listen-any")
            for probe, path_wanted in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                get = container.get(probe, {}).get("httpGet", {})
                if get.get("path") != path_wanted or port_number(get.get("port"), container) != int(admin_port):
                    problem(f"{where}.{probe}", f"not GET {path_wanted} on the admin port {admin_port}")
            upstream = re.match(r"^http://(127\.0\.0\.1|localhost):(\d+)", str(flags.get("--upstream", "")))
            others = {port["containerPort"] for other in pod["containers"] if other is not container
                      for port in other.get("ports", [])}
            if not upstream or int(upstream.group(2)) not in others:
                problem(f"{where}.args", "--upstream is not another container of the pod (http://127.0.0.1:PORT)")
            out = str(flags.get("--out", ""))
            mounts = {m["mountPath"].rstrip("/"): m["name"] for m in container.get("volumeMounts", [])}
            volume = mounts.get(out.rstrip("/"))
            claimed = {v["name"] for v in pod.get("volumes", [])
                       if v.get("persistentVolumeClaim", {}).get("claimName") in claims}
            if volume not in claimed:
                problem(f"{where}.args", f"--out {out} is not a mounted volume with a claim of its own")
            if "--max-disk" not in flags:
                problem(f"{where}.args", "no --max-disk: segments would fill the volume")
            listen_port = int(str(flags.get("--listen", ":8080")).rsplit(":", 1)[1])
            routed = [s for _, s in services
                      if all(labels.get(k) == v for k, v in s["spec"].get("selector", {}).items())
                      and any(port_number(p.get("targetPort", p.get("port")), container) == listen_port
                              for p in s["spec"].get("ports", []))]
            if not routed:
                problem(where, f"no Service sends clients to record's --listen port {listen_port}")


def main(argv):
    if argv[:1] == ["--args"]:
        for document in yaml.safe_load_all(open(argv[1])):
            if document["kind"] not in ("Job", "Deployment"):
                continue
            for container in document["spec"]["template"]["spec"]["containers"]:
                print(json.dumps(container["args"]))
        return 0
    documents = []
    for file in argv:
        text = open(file).read()
        if "${" in text:
            problem(file, "a ${VARIABLE} was left unrendered")
        for i, document in enumerate(yaml.safe_load_all(text)):
            path = f"{file}#{i}"
            model = KINDS.get((document.get("apiVersion"), document.get("kind")))
            if not model:
                problem(path, f"unexpected {document.get('apiVersion')} {document.get('kind')}")
                continue
            check_value(document, model, path)
            check_required(document, model, path)
            check_conventions(document, path)
            documents.append((path, document))
    check_sharding(documents)
    check_sidecar(documents)
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
