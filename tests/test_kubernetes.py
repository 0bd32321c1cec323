"""The course on Zero to JupyterHub (deploy/kubernetes/), checked as far as a machine without a
cluster can.

* The values (deploy/kubernetes/values.yaml, and every values-*.yaml overlay over it), merged
  over the chart's defaults as Helm merges them, validate against the chart's values schema
  (chart 4.4.0: tests/z2jh_chart/, the course's reference data); misspelled keys fail.
* The chart's own hub configuration (its jupyterhub_config.py and z2jh.py of 4.4.0, vendored in
  tests/z2jh_chart/ too) turns the values into KubeSpawner settings, and KubeSpawner renders the
  student and instructor pods with the values' pre-spawn hook. The pods validate strictly against
  Kubernetes 1.31's and 1.32's API schemas (kubernetes-validate), share no writable volume between users,
  keep the variant secret from students and run nothing privileged.
* The course service's manifests (course-service.yaml) validate, and its NetworkPolicy admits
  the hub's and the users' pods only.

Faked: what a running chart supplies to its hub (the mounted values and Secret, the Services'
names and ports in the environment) and the Kubernetes API client KubeSpawner would talk to.
"""
from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
K8S = REPO / "deploy" / "kubernetes"
CHART = Path(__file__).resolve().parent / "z2jh_chart"
#: the course's reference copy of the chart's schema and defaults, which tests/z2jh_chart/ holds too
REFERENCE = Path(os.environ.get("Z2JH_REFERENCE", REPO.parent / "shared" / "reference" / "z2jh-4.4.0"))
KUBERNETES = ("1.31", "1.32")          # the releases a university's cluster runs next term
SECRET = "0123456789abcdef" * 4          # a variant secret as `autograder variants --init-secret` writes one
OVERLAYS = sorted(p.name for p in K8S.glob("values-*.yaml"))


def test_the_vendored_schema_and_defaults_are_the_reference_copy():
    if not (REFERENCE / "values.schema.json").exists():
        pytest.skip(f"no reference copy at {REFERENCE} to compare with (set Z2JH_REFERENCE)")
    for name in ("values.schema.json", "values.yaml"):
        assert (CHART / name).read_bytes() == (REFERENCE / name).read_bytes(), name


# ---- Helm's merge and the chart's schema --------------------------------------------------------------
def helm_merge(base: dict, over: dict) -> dict:
    """`over` merged into `base` as Helm merges a values file: maps recursively, a null deletes the
    key, lists and scalars replace."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load(name: str) -> dict:
    return yaml.safe_load((K8S / name).read_text()) or {}


def merged(*files: str, extra: dict | None = None) -> dict:
    """The chart's defaults, then values.yaml, then each file named (an overlay), then `extra`."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for f in ("values.yaml", *files):
        values = helm_merge(values, load(f))
    return helm_merge(values, extra or {})


def schema_errors(values: dict) -> list[str]:
    schema = json.loads((CHART / "values.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(values)]


@pytest.mark.parametrize("overlay", [None, *OVERLAYS])
def test_values_validate_against_the_charts_schema(overlay):
    """values.yaml (with each values-*.yaml overlay, such as the LTI login's) over the defaults."""
    values = merged(*([overlay] if overlay else []))
    assert schema_errors(values) == []


@pytest.mark.parametrize("typo", [{"singleuser": {"storage": {"capacty": "2Gi"}}},
                                  {"cull": {"timout": 3600}},
                                  {"hub": {"servics": {"course": {"url": "http://x:1"}}}},
                                  {"cull": {"timeout": "an hour"}}])
def test_a_misspelled_key_or_wrong_type_fails_the_schema(typo):
    assert schema_errors(merged(extra=typo))


def test_the_values_pin_the_chart_and_images():
    """The chart's version in every command; fixed image tags (not `latest`), the same for both
    images."""
    text = (K8S / "values.yaml").read_text() + (K8S / "README.md").read_text()
    installs = re.findall(r"helm upgrade --install .*?(?=\n\S|\n\n)", text, re.S)
    assert installs and all("--version 4.4.0" in cmd for cmd in installs), installs
    values = load("values.yaml")
    tag = values["singleuser"]["image"]["tag"]
    assert tag and tag != "latest"
    # one place for the tag: the instructors' image names none, the manifests carry image_tag.py's mark
    assert ":" not in values["custom"]["roofline"]["instructorImage"].rpartition("/")[2]
    literal = {f.name for f in K8S.iterdir() if f.is_file() and f.name != "values.yaml" and tag in f.read_text()}
    assert literal <= {"README.md"}, f"the image tag written out in {sorted(literal)}"


# ---- the chart's hub configuration, KubeSpawner's pods --------------------------------------------------
RELEASE = "roofline"      # as README.md's helm command and course-service.yaml's selectors
NAMESPACE = "roofline"


def chart_hub_config(values: dict, monkeypatch):
    """The traitlets Config the chart's jupyterhub_config.py (4.4.0) builds from `values`, as the
    hub pod loads it: z2jh reads the values and the chart's Secret from mounted files there; here
    from `values` and a stand-in Secret."""
    values = {**values, "Chart": {"Name": "jupyterhub", "Version": "4.4.0"},
              "Release": {"Name": RELEASE, "Namespace": NAMESPACE}}
    secret = {"hub.config.JupyterHub.cookie_secret": "c" * 64, "hub.config.CryptKeeper.keys": "0f" * 32,   # 32 bytes in hex, as the chart generates
              **{f"hub.services.{k}.apiToken": "t" * 32 for k in values["hub"].get("services") or {}}}
    spec = importlib.util.spec_from_file_location("z2jh", CHART / "z2jh.py")
    z2jh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(z2jh)
    monkeypatch.setattr(z2jh, "_load_config", lambda: copy.deepcopy(values))
    # the chart's ConfigMap of resource names (fullnameOverride "": unprefixed names)
    monkeypatch.setattr(z2jh, "_get_config_value", lambda key: key)

    def get_secret_value(key, default="never-explicitly-set"):
        if key in secret:
            return secret[key]
        if default != "never-explicitly-set":
            return default
        raise KeyError(key)

    monkeypatch.setattr(z2jh, "get_secret_value", get_secret_value)
    monkeypatch.setitem(sys.modules, "z2jh", z2jh)
    for var, value in {"HUB_SERVICE_PORT": "8081", "PROXY_API_SERVICE_PORT": "8001", "POD_NAMESPACE": NAMESPACE,
                       "ROOFLINE_VARIANT_SECRET": SECRET}.items():
        monkeypatch.setenv(var, value)
    # the chart selects tornado's curl client (pycurl), process-wide: not in a test process
    from tornado.httpclient import AsyncHTTPClient

    monkeypatch.setattr(AsyncHTTPClient, "configure", classmethod(lambda cls, *a, **kw: None))
    monkeypatch.setattr(sys, "path", list(sys.path))      # the chart's file adds its own folder
    from traitlets.config import Config

    c = Config()
    ns = {"get_config": lambda: c, "__file__": str(CHART / "jupyterhub_config.py"), "__name__": "jupyterhub_config"}
    exec(compile((CHART / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"), ns)
    HUB_NAMESPACES[id(c)] = ns       # what extraConfig defined (an overlay's authenticator class), for the tests
    return c


#: id(config) -> the namespace the chart's jupyterhub_config.py (and so hub.extraConfig) ran in
HUB_NAMESPACES: dict[int, dict] = {}


def render_pod(c, name: str, groups: list[str], monkeypatch) -> dict:
    """The pod KubeSpawner 7 makes for user `name` in hub `groups`, after the pre-spawn hook, as
    the API server would receive it."""
    import kubespawner.spawner
    from kubernetes_asyncio.client import ApiClient
    from kubespawner import KubeSpawner

    # no cluster: KubeSpawner's Kubernetes client is never used to render a pod
    monkeypatch.setattr(kubespawner.spawner, "load_config", lambda **kw: None)
    monkeypatch.setattr(kubespawner.spawner, "shared_client", lambda name: None)
    user = types.SimpleNamespace(name=name, id=1, escaped_name=name, url=f"/user/{name}/", server=None,
                                 groups=[types.SimpleNamespace(name=g) for g in groups])
    hub = types.SimpleNamespace(url="http://hub:8081/hub/", public_host="", base_url="/hub/",
                                api_url="http://hub:8081/hub/api")
    spawner = KubeSpawner(_mock=True, config=c, user=user, hub=hub)
    spawner.api_token = "u" * 32

    async def make():
        hooked = spawner.run_pre_spawn_hook()
        if hooked is not None:
            await hooked
        manifest = await spawner.get_pod_manifest()
        async with ApiClient() as api:
            return api.sanitize_for_serialization(manifest)

    pod = asyncio.run(make())
    return {"apiVersion": "v1", "kind": "Pod", **pod}


@pytest.fixture(scope="module")
def pods():
    """The base values' pods: two students and an instructor."""
    mp = pytest.MonkeyPatch()
    try:
        c = chart_hub_config(merged(), mp)
        return {"ada": render_pod(c, "ada", ["students"], mp), "grace": render_pod(c, "grace", ["students"], mp),
                "alice": render_pod(c, "alice", ["instructors"], mp), "config": c}
    finally:
        mp.undo()


def validate(manifest: dict) -> None:
    for version in KUBERNETES:
        kubernetes_validate.validate(manifest, version, strict=True)


def test_the_pods_validate_strictly_against_kubernetes(pods):
    for who in ("ada", "alice"):
        validate(pods[who])


def test_a_misspelled_key_inside_a_pod_is_caught_by_kubernetes(monkeypatch):
    """The chart's schema does not look inside extraVolumes; the pod's validation does."""
    typo = {"singleuser": {"storage": {
        "extraVolumes": [{"name": "data", "persistentVolumeClaim": {"claimname": "course-data"}}],
        "extraVolumeMounts": [{"name": "data", "mountPath": "/srv/data", "readOnly": True}]}}}
    values = merged(extra=typo)
    assert schema_errors(values) == []
    pod = render_pod(chart_hub_config(values, monkeypatch), "ada", ["students"], monkeypatch)
    with pytest.raises(kubernetes_validate.ValidationError, match="claimname"):
        validate(pod)


def writable_shared(pods: dict[str, dict]) -> set[str]:
    """The volumes that pods of different users can write: the same claim, host path, NFS share
    or other shared source mounted without readOnly by two users."""
    writers: dict[str, set[str]] = {}
    for user, pod in pods.items():
        spec = pod["spec"]
        sources = {v["name"]: v for v in spec.get("volumes") or []}
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            for m in container.get("volumeMounts") or []:
                v = sources[m["name"]]
                if m.get("readOnly") or v.get("persistentVolumeClaim", {}).get("readOnly"):
                    continue
                if "persistentVolumeClaim" in v:
                    key = "claim " + v["persistentVolumeClaim"]["claimName"]
                elif "hostPath" in v:
                    key = "host " + v["hostPath"]["path"]
                elif "nfs" in v:
                    key = f"nfs {v['nfs']['server']}:{v['nfs']['path']}"
                elif set(v) & {"emptyDir", "secret", "configMap", "downwardAPI", "projected", "ephemeral"}:
                    continue        # of this pod alone (secrets and config maps are mounted read-only)
                else:
                    key = "volume " + json.dumps({k: x for k, x in v.items() if k != "name"}, sort_keys=True)
                writers.setdefault(key, set()).add(user)
    return {key for key, users in writers.items() if len(users) > 1}


def test_no_volume_is_writable_by_two_users(pods, monkeypatch):
    assert writable_shared({u: pods[u] for u in ("ada", "grace", "alice")}) == set()
    # each has a home of their own, mounted writable
    claims = {u: {v["persistentVolumeClaim"]["claimName"] for v in pods[u]["spec"]["volumes"]
                  if "persistentVolumeClaim" in v} for u in ("ada", "grace", "alice")}
    assert all(len(c) == 1 for c in claims.values()) and len(set.union(*claims.values())) == 3
    # what the kit used to do, the exchange on one ReadWriteMany claim, is caught
    shared = {"singleuser": {"storage": {
        "extraVolumes": [{"name": "nbgrader-exchange", "persistentVolumeClaim": {"claimName": "nbgrader-exchange"}}],
        "extraVolumeMounts": [{"name": "nbgrader-exchange", "mountPath": "/srv/nbgrader/exchange"}]}}}
    c = chart_hub_config(merged(extra=shared), monkeypatch)
    old = {u: render_pod(c, u, ["students"], monkeypatch) for u in ("ada", "grace")}
    assert writable_shared(old) == {"claim nbgrader-exchange"}


def reaches_secret(pod: dict, secret_name: str, secret_value: str) -> list[str]:
    """How a pod could read the Kubernetes Secret `secret_name` (or holds its value)."""
    spec, found = pod["spec"], []
    for v in spec.get("volumes") or []:
        if v.get("secret", {}).get("secretName") == secret_name:
            found.append(f"volume {v['name']}")
        for s in v.get("projected", {}).get("sources") or []:
            if s.get("secret", {}).get("name") == secret_name:
                found.append(f"projected volume {v['name']}")
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        for e in container.get("env") or []:
            if e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == secret_name:
                found.append(f"env {e['name']}")
        for e in container.get("envFrom") or []:
            if e.get("secretRef", {}).get("name") == secret_name:
                found.append("envFrom")
    if spec.get("automountServiceAccountToken") is not False:
        found.append("a service account token (the Kubernetes API)")
    if secret_value in json.dumps(pod):
        found.append("the secret's value")
    return found


def test_a_student_pod_cannot_reach_the_variant_secret(pods, monkeypatch):
    name = load("values.yaml")["custom"]["roofline"]["variantSecret"]
    for student in ("ada", "grace"):
        assert reaches_secret(pods[student], name, SECRET) == []
    # the grader (an instructor's pod) has it, read-only
    assert reaches_secret(pods["alice"], name, SECRET) == ["volume variant-secret"]
    mount = [m for m in pods["alice"]["spec"]["containers"][0]["volumeMounts"] if m["name"] == "variant-secret"]
    assert mount and mount[0]["readOnly"] is True
    # a values file that gives every user's pod the Secret is caught
    leak = {"singleuser": {"extraEnv": {"LEAK": {"valueFrom": {"secretKeyRef": {"name": name, "key": "variant-secret"}}}}}}
    pod = render_pod(chart_hub_config(merged(extra=leak), monkeypatch), "ada", ["students"], monkeypatch)
    assert reaches_secret(pod, name, SECRET) == ["env LEAK"]


def test_the_hub_hands_a_student_their_own_variant_key_only(pods):
    """The hook's HMAC is course_lib's student_key (the hub's image has no course_lib)."""
    from course_lib.questions.variants import KEY_ENV, STUDENT_ENV, student_key

    for student in ("ada", "grace"):
        env = {e["name"]: e.get("value") for e in pods[student]["spec"]["containers"][0]["env"]}
        assert env[STUDENT_ENV] == student
        assert env[KEY_ENV] == student_key(SECRET.encode(), student)
    env = {e["name"]: e.get("value") for e in pods["alice"]["spec"]["containers"][0]["env"]}
    assert KEY_ENV not in env and env["AUTOGRADER_VARIANT_SECRET"].startswith("/etc/roofline/variant-secret/")


def privileged(pod: dict) -> list[str]:
    """What in a pod runs privileged or may gain privileges."""
    spec, found = pod["spec"], []
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(flag):
            found.append(flag)
    pod_user = (spec.get("securityContext") or {}).get("runAsUser")
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            found.append(f"{c['name']}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{c['name']}: may gain privileges (allowPrivilegeEscalation not false)")
        if (sc.get("capabilities") or {}).get("add"):
            found.append(f"{c['name']}: adds capabilities {sc['capabilities']['add']}")
        uid = sc.get("runAsUser", pod_user)
        if uid is None or uid == 0:
            found.append(f"{c['name']}: may run as root (runAsUser {uid})")
    return found


def test_no_pod_runs_privileged(pods, monkeypatch):
    for who in ("ada", "alice"):
        assert privileged(pods[who]) == [], who
    # the chart's default for cloud metadata (a privileged iptables init container) is caught
    default = {"singleuser": {"cloudMetadata": {"blockWithIptables": True}}}
    pod = render_pod(chart_hub_config(merged(extra=default), monkeypatch), "ada", ["students"], monkeypatch)
    assert any("block-cloud-metadata: privileged" in f for f in privileged(pod))


def restricted(pod_or_template: dict) -> list[str]:
    """What keeps a pod out of Pod Security's "restricted" level (the baseline and restricted
    rules of Kubernetes 1.31/1.32's Pod Security Standards that a pod spec can break)."""
    spec, found = pod_or_template["spec"], []
    psc = spec.get("securityContext") or {}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(flag):
            found.append(flag)
    allowed = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= allowed:
            found.append(f"volume {v['name']}: {sorted(kinds - allowed)}")
    if (psc.get("seccompProfile") or {}).get("type") == "Unconfined":
        found.append("pod: seccomp Unconfined")
    if (psc.get("appArmorProfile") or {}).get("type") == "Unconfined":
        found.append("pod: AppArmor Unconfined")
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        sc, name = c.get("securityContext") or {}, c["name"]
        if sc.get("privileged"):
            found.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation not false")
        if not (sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True):
            found.append(f"{name}: runAsNonRoot not true")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            found.append(f"{name}: runAsUser 0")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccomp {seccomp}")
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            found.append(f"{name}: AppArmor Unconfined")
        if sc.get("procMount", "Default") != "Default":
            found.append(f"{name}: procMount {sc['procMount']}")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            found.append(f"{name}: capabilities not dropped")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: adds capabilities {caps['add']}")
        if c.get("ports") and any(port.get("hostPort") for port in c["ports"]):
            found.append(f"{name}: hostPort")
    return found


def test_students_and_instructors_pods_meet_pod_security_restricted(pods):
    """Students' pods (and instructors', unless grading runs in them: gradeInPod) are admitted by
    a namespace labelled pod-security.kubernetes.io/enforce=restricted; so is the course service."""
    for who in ("ada", "grace", "alice"):
        assert restricted(pods[who]) == [], who
    assert restricted(service_docs()["Deployment"]["spec"]["template"]) == []
    # what the kit used to give students (the runtime's defaults: no seccomp, no runAsNonRoot) is caught
    default = copy.deepcopy(pods["ada"])
    for key in ("seccompProfile", "runAsNonRoot"):
        default["spec"]["securityContext"].pop(key)
    default["spec"]["containers"][0]["securityContext"] = {"runAsUser": 1000, "allowPrivilegeEscalation": False}
    assert {"notebook: runAsNonRoot not true", "notebook: seccomp None", "notebook: capabilities not dropped"} \
        <= set(restricted(default))


def test_instructors_get_their_image_resources_and_pull_secret(pods):
    roofline = load("values.yaml")["custom"]["roofline"]
    alice, ada = pods["alice"]["spec"], pods["ada"]["spec"]
    assert alice["containers"][0]["image"] == roofline["instructorImage"] + ":" + load("values.yaml")["singleuser"]["image"]["tag"]
    assert ada["containers"][0]["image"].startswith(load("values.yaml")["singleuser"]["image"]["name"] + ":")
    # the answer key's image: its pull secret in instructors' pods only, and no puller on any node
    assert {"name": roofline["instructorImagePullSecret"]} in alice.get("imagePullSecrets", [])
    assert roofline["instructorImagePullSecret"] not in json.dumps(ada)
    pulled = merged()["prePuller"]["extraImages"]
    assert roofline["instructorImage"] not in json.dumps(pulled)
    for spec in (ada, alice):       # every user's server has guarantees and limits
        res = spec["containers"][0]["resources"]
        assert set(res["requests"]) >= {"cpu", "memory"} and set(res["limits"]) >= {"cpu", "memory"}
    assert alice["containers"][0]["resources"]["limits"]["cpu"] == float(roofline["instructorResources"]["cpuLimit"])


def test_grading_in_the_instructors_pod_gets_the_sandboxs_settings(monkeypatch):
    """custom.roofline.gradeInPod: bubblewrap in the instructor's pod needs user namespaces, mount
    and a fresh /proc (README.md, "Grading"): those settings, in instructors' pods alone."""
    c = chart_hub_config(merged(extra={"custom": {"roofline": {"gradeInPod": True}}}), monkeypatch)
    alice = render_pod(c, "alice", ["instructors"], monkeypatch)
    ada = render_pod(c, "ada", ["students"], monkeypatch)
    sc = alice["spec"]["containers"][0]["securityContext"]
    assert sc["seccompProfile"] == {"type": "Unconfined"} and sc["appArmorProfile"] == {"type": "Unconfined"}
    assert sc["procMount"] == "Unmasked" and alice["spec"]["hostUsers"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert privileged(alice) == [] and restricted(alice) != [] and restricted(ada) == []
    validate(alice)


def test_a_user_in_neither_group_gets_no_server(pods, monkeypatch):
    from tornado import web

    with pytest.raises(web.HTTPError) as e:
        render_pod(pods["config"], "mallory", [], monkeypatch)
    assert e.value.status_code == 403 and "neither" in e.value.log_message


def test_the_hub_config_has_the_course_service_and_culling(pods):
    c = pods["config"]
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert services["course"]["url"] == load("values.yaml")["singleuser"]["extraEnv"]["COURSE_SERVICE_URL"]
    assert services["course"]["api_token"] and "jupyterhub-idle-culler" in services
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["course-service"]["services"] == ["course"]
    assert "access:services!service=course" in roles["user"]["scopes"]
    assert "access:services!service=course" in c.Spawner.server_token_scopes


# ---- the course service's manifests -----------------------------------------------------------------------
def service_docs() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all((K8S / "course-service.yaml").read_text()) if d}


def test_the_course_services_manifests_validate():
    docs = service_docs()
    assert set(docs) == {"StorageClass", "PersistentVolumeClaim", "Deployment", "Service", "NetworkPolicy"}
    for doc in docs.values():
        validate(doc)
    assert docs["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteOnce"]
    # day 2: deleting the claim (or the namespace) keeps the store's volume
    assert docs["PersistentVolumeClaim"]["spec"]["storageClassName"] == docs["StorageClass"]["metadata"]["name"]
    assert docs["StorageClass"]["reclaimPolicy"] == "Retain"


def selects(selector: dict, labels: dict) -> bool:
    """Whether a Kubernetes label selector (matchLabels, matchExpressions) selects `labels`."""
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return True
    ok = all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())
    for e in selector.get("matchExpressions") or []:
        has, value = e["key"] in labels, labels.get(e["key"])
        ok &= {"In": has and value in e.get("values", []), "NotIn": not has or value not in e.get("values", []),
               "Exists": has, "DoesNotExist": not has}[e["operator"]]
    return ok


# the hub's pod labels: the chart's hub/deployment.yaml (matchLabelsLegacyAndModern) for release RELEASE
HUB_POD = {"component": "hub", "app": "jupyterhub", "release": RELEASE, "app.kubernetes.io/component": "hub",
           "app.kubernetes.io/name": "jupyterhub", "app.kubernetes.io/instance": RELEASE}
PROXY_POD = {**HUB_POD, "component": "proxy", "app.kubernetes.io/component": "proxy"}


def admitted(policy: dict, labels: dict, port: int) -> bool:
    """Whether `policy`'s ingress rules admit a pod with `labels` (same namespace) on `port`."""
    for rule in policy["spec"].get("ingress") or []:
        ports = [p["port"] for p in rule.get("ports") or []]
        if ports and port not in ports:
            continue
        peers = rule.get("from")
        if not peers:
            return True
        for peer in peers:
            if "ipBlock" in peer:
                return True     # any address: every pod
            if "namespaceSelector" in peer and peer["namespaceSelector"] != {} and "podSelector" not in peer:
                continue        # other namespaces' pods only
            if selects(peer.get("podSelector") or {}, labels):
                return True
    return False


def test_the_network_policy_admits_the_hub_and_users_pods_only(pods):
    docs = service_docs()
    policy, deployment, service = docs["NetworkPolicy"], docs["Deployment"], docs["Service"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selects(policy["spec"]["podSelector"], pod_labels) and "Ingress" in policy["spec"]["policyTypes"]
    port = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    for rule in policy["spec"]["ingress"]:
        assert rule.get("from") and all(set(peer) == {"podSelector"} for peer in rule["from"]), rule
    assert admitted(policy, HUB_POD, port)
    assert admitted(policy, pods["ada"]["metadata"]["labels"], port)
    assert admitted(policy, pods["alice"]["metadata"]["labels"], port)
    assert not admitted(policy, PROXY_POD, port)
    assert not admitted(policy, {"app": "something-else"}, port)
    # an open policy would be caught
    assert admitted({"spec": {"ingress": [{}]}}, PROXY_POD, port)
    # users' pods may leave for the service (the chart blocks private addresses) and it for the hub
    egress = load("values.yaml")["singleuser"]["networkPolicy"]["egress"]
    assert any(selects(to["podSelector"], pod_labels) and port in [p["port"] for p in rule["ports"]]
               for rule in egress for to in rule["to"])
    assert pod_labels.get("hub.jupyter.org/network-access-hub") == "true"
    # the Service and the URL users' pods and the hub use lead to that pod and port
    assert selects({"matchLabels": service["spec"]["selector"]}, pod_labels)
    url = load("values.yaml")["hub"]["services"]["course"]["url"]
    assert url == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}"


def test_the_service_runs_with_the_charts_token_on_its_own_volume(pods):
    docs = service_docs()
    spec = docs["Deployment"]["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["JUPYTERHUB_API_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hub",
                                                                       "key": "hub.services.course.apiToken"}
    assert env["JUPYTERHUB_SERVICE_NAME"]["value"] in load("values.yaml")["hub"]["services"]
    # the command is the service's own command line, as its parser reads it
    from course_hub.service.app import parser

    assert container["command"][:3] == ["python", "-m", "course_hub.service"]
    args = parser().parse_args(container["command"][3:])
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert args.store == mounts["store"] and args.answer_key
    assert Path(args.secret_file).parent == Path(mounts["variant-secret"])
    group = args.instructors_hub_group
    assert group == load("values.yaml")["custom"]["roofline"]["instructorsGroup"]
    assert f"read:groups!group={group}" in load("values.yaml")["hub"]["loadRoles"]["course-service"]["scopes"]
    assert privileged(docs["Deployment"]["spec"]["template"]) == []
    assert spec["securityContext"]["runAsUser"] != load("values.yaml")["singleuser"]["uid"]
    claim = docs["PersistentVolumeClaim"]["metadata"]["name"]
    for who in ("ada", "alice"):
        assert claim not in json.dumps(pods[who]["spec"]["volumes"])
    # the README's release name is the one the policy's selectors name
    readme = (K8S / "README.md").read_text()
    assert re.search(r"helm upgrade --install (\S+) jupyterhub/jupyterhub", readme).group(1) == RELEASE


# ---- the images -------------------------------------------------------------------------------------------
def pins(dockerfile: str) -> dict[str, str]:
    text = (K8S / dockerfile).read_text()
    block = re.search(r"RUN pip install \\\n(.*?)\n\n", text, re.S).group(1)
    reqs = re.findall(r'"([^"]+)"', block)
    out = {}
    for r in reqs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][0-9A-Za-z.*]*)", r)
        assert m, f"{dockerfile}: {r!r} is not pinned with =="
        out[m.group(1).lower()] = m.group(2)
    return out


def test_the_images_pin_every_package_and_jupyterhub_5_5():
    student, instructor = pins("student.Dockerfile"), pins("instructor.Dockerfile")
    # the instructors' image: the students' packages, plus the `lms` extra's (export --lms)
    import tomllib

    lms = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["lms"]
    lms = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in lms}
    assert {k: v for k, v in instructor.items() if k not in lms} == student and set(instructor) - set(student) == lms
    assert student["jupyterhub"] == "5.5.*" and student["nbgrader"] == "0.9.6"
    assert all("*" not in v for k, v in student.items() if k != "jupyterhub")
    for f in ("student.Dockerfile", "instructor.Dockerfile"):
        base = re.search(r"^FROM (\S+)", (K8S / f).read_text(), re.M).group(1)
        assert re.fullmatch(r"python:3\.(1[1-9])\.\d+-slim-\w+", base), base   # nbgrader 0.9.6: Python >= 3.11


def test_the_images_jupyter_settings_use_the_course_service_as_exchange(tmp_path):
    """jupyter_settings.py, as the Dockerfiles run it: nbgrader's exchange is the course service's."""
    from traitlets.config import Config

    subprocess.run([sys.executable, str(K8S / "jupyter_settings.py"), "--kit", str(REPO / "deploy"),
                    "--prefix", str(tmp_path / "env"), "--course-id", "roofline",
                    "--instructor-dir", str(tmp_path / "instructor"), "--course-dir", "/home/jovyan/roofline-course"],
                   check=True, capture_output=True, text=True)
    c = Config()
    exec(compile((tmp_path / "env/etc/jupyter/nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"),
         {"get_config": lambda: c})
    assert c.CourseDirectory.course_id == "roofline"
    assert c.ExchangeFactory.exchange == "course_hub.nbexchange.Exchange" and "root" not in c.Exchange
    off = json.loads((tmp_path / "env/etc/jupyter/jupyter_server_config.d/roofline-hub.json").read_text())
    on = json.loads((tmp_path / "instructor/jupyter_server_config.d/roofline-instructor.json").read_text())
    assert not any(off["ServerApp"]["jpserver_extensions"].values())
    assert all(on["ServerApp"]["jpserver_extensions"].values())
    loaded = (tmp_path / "instructor/nbgrader_config.py").read_text()
    assert 'load_subconfig("/home/jovyan/roofline-course/nbgrader_config.py")' in loaded
    # the instructors' tools are the one-machine kit's, guard included (setup.sh's arrays)
    kit = (REPO / "deploy" / "jupyterhub" / "setup.sh").read_text()

    def bash_array(name: str) -> set[str]:
        return set(re.search(rf"^{name}=\(([^)]*)\)", kit, re.M).group(1).split())

    assert set(on["ServerApp"]["jpserver_extensions"]) == bash_array("INSTRUCTOR_SERVER_EXTENSIONS")
    assert "autograder.outputs.formgrader_guard" in on["ServerApp"]["jpserver_extensions"]
    lab = json.loads((tmp_path / "instructor/labconfig/page_config.json").read_text())
    assert set(lab["disabledExtensions"]) == bash_array("INSTRUCTOR_LAB_PLUGINS")


# ---- what the schema does not see: hub.config's traits, every overlay's pods ----------------------------
def test_hub_configs_sections_name_real_traits():
    """hub.config is free-form to the chart's schema: each trait it sets must exist on its class
    (JupyterHub's own classes and KubeSpawner's; an authenticator's section where it is installed)."""
    import importlib

    classes = {"JupyterHub": "jupyterhub.app:JupyterHub", "Authenticator": "jupyterhub.auth:Authenticator",
               "Spawner": "jupyterhub.spawner:Spawner", "KubeSpawner": "kubespawner:KubeSpawner",
               "GenericOAuthenticator": "oauthenticator.generic:GenericOAuthenticator",
               "LTI11Authenticator": "ltiauthenticator.lti11.auth:LTI11Authenticator",
               "LTI13Authenticator": "ltiauthenticator.lti13.auth:LTI13Authenticator"}
    checked = 0
    for overlay in [None, *OVERLAYS]:
        config = merged(*([overlay] if overlay else []))["hub"]["config"]
        for section, traits in config.items():
            if section not in classes:
                continue        # a class this test does not know: add it to `classes` to check it
            module, _, name = classes[section].partition(":")
            try:
                cls = getattr(importlib.import_module(module), name)
            except ImportError:
                continue        # the hub image's authenticator, not installed here
            unknown = set(traits) - set(cls.class_traits(config=True))
            assert not unknown, f"hub.config.{section}: no such setting {sorted(unknown)}"
            checked += 1
    assert checked >= 3
    typo = {"JupyterHub": {"load_group": {}}}
    from jupyterhub.app import JupyterHub

    assert set(typo["JupyterHub"]) - set(JupyterHub.class_traits(config=True)) == {"load_group"}


@pytest.mark.parametrize("overlay", [None, *OVERLAYS])
def test_every_overlays_pods_keep_the_guarantees(overlay, monkeypatch):
    """Each values-*.yaml over values.yaml: the pods still validate, share nothing writable, keep
    the secret from students and run unprivileged."""
    c = chart_hub_config(merged(*([overlay] if overlay else [])), monkeypatch)
    rendered = {"ada": render_pod(c, "ada", ["students"], monkeypatch),
                "grace": render_pod(c, "grace", ["students"], monkeypatch),
                "alice": render_pod(c, "alice", ["instructors"], monkeypatch)}
    secret = merged(*([overlay] if overlay else []))["custom"]["roofline"]["variantSecret"]
    for who, pod in rendered.items():
        validate(pod)
        assert privileged(pod) == [], who
    assert writable_shared(rendered) == set()
    assert reaches_secret(rendered["ada"], secret, SECRET) == [] == reaches_secret(rendered["grace"], secret, SECRET)


# ---- every overlay starts the hub: JupyterHub's own start-up with the chart's configuration -----------------
def start_hub(c, tmp_path, monkeypatch):
    """JupyterHub initialised with the chart's configuration `c` as the hub pod would be, up to the
    point where it would start serving: its database (in memory here), roles, users and groups
    (load_groups; where JupyterHub refuses the configuration it raises here), services, spawners
    and the proxy's settings. Nothing is listened on or connected to."""
    from jupyterhub.app import JupyterHub
    from jupyterhub.crypto import CryptKeeper

    monkeypatch.chdir(tmp_path)         # the hub's working files (its cookie secret, its pid) go here
    # the chart's hub Deployment sets it from its Secret (hub.config.ConfigurableHTTPProxy.auth_token)
    monkeypatch.setenv("CONFIGPROXY_AUTH_TOKEN", "p" * 32)
    c.JupyterHub.db_url = "sqlite://"   # the chart's sqlite-pvc database, in memory
    # the hub's singleton, as `jupyterhub` makes it: CryptKeeper (auth_state's keys) reads its config
    CryptKeeper.clear_instance()
    app = JupyterHub.instance(config=c)
    try:
        asyncio.run(app.initialize([]))
        return app
    finally:
        JupyterHub.clear_instance()
        CryptKeeper.clear_instance()


@pytest.mark.parametrize("overlay", [None, *OVERLAYS])
def test_every_overlay_starts_the_hub(overlay, tmp_path, monkeypatch):
    """JupyterHub's start-up refuses some combinations the chart's schema admits (load_groups with
    an authenticator that manages groups: "Group management has been offloaded to the
    authenticator"); each overlay's configuration gets through it."""
    c = chart_hub_config(merged(*([overlay] if overlay else [])), monkeypatch)
    app = start_hub(c, tmp_path, monkeypatch)
    from jupyterhub import orm

    roofline = merged()["custom"]["roofline"]
    groups = {g.name for g in app.db.query(orm.Group)}
    if not app.authenticator.manage_groups:     # else the authenticator makes them at each login
        assert {roofline["instructorsGroup"], roofline["studentsGroup"]} <= groups
    assert "course" in app._service_map and app.spawner_class.__name__ == "KubeSpawner"


def test_load_groups_with_manage_groups_is_refused_at_start_up(tmp_path, monkeypatch):
    """What the LTI overlay used to do: the start-up test catches it."""
    both = {"hub": {"config": {"Authenticator": {"manage_groups": True}}}}
    c = chart_hub_config(merged(extra=both), monkeypatch)
    with pytest.raises(ValueError, match="offloaded to the authenticator"):
        start_hub(c, tmp_path, monkeypatch)


def test_under_lti_the_lms_roles_decide_the_image_and_the_variant_key(tmp_path, monkeypatch):
    """An LMS launch through the overlay's own authenticator: its instructor gets the instructors'
    image and settings (the course values' as_instructor), its student their variant key."""
    from course_lib.questions.variants import KEY_ENV, student_key

    values = merged("values-lti.yaml")
    c = chart_hub_config(values, monkeypatch)
    ns = HUB_NAMESPACES[id(c)]
    monkeypatch.setitem(ns, "RECORD", str(tmp_path / "lti" / "launches.jsonl"))   # the hub's volume
    auth = ns["CourseLTI13Authenticator"](config=c)
    lti = "https://purl.imsglobal.org/spec/lti/claim/"

    def launch(sub, role):
        claims = {"iss": "https://canvas.instructure.com", "sub": sub, "given_name": sub.title(),
                  lti + "deployment_id": sorted(ns["DEPLOYMENTS"])[0],
                  lti + "roles": [f"http://purl.imsglobal.org/vocab/lis/v2/membership#{role}"]}
        return asyncio.run(auth.authenticate(None, claims))

    teacher, student = launch("t-1", "Instructor"), launch("s-1", "Learner")
    roofline = values["custom"]["roofline"]
    pod = render_pod(c, teacher["name"], teacher["groups"], monkeypatch)
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert container["image"] == f'{roofline["instructorImage"]}:{values["singleuser"]["image"]["tag"]}'
    assert container["resources"]["limits"]["cpu"] == float(roofline["instructorResources"]["cpuLimit"])
    assert env["AUTOGRADER_VARIANT_SECRET"].startswith("/etc/roofline/variant-secret/")
    assert env["JUPYTER_CONFIG_PATH"] == "/etc/roofline/instructor" and KEY_ENV not in env
    validate(pod)
    pod = render_pod(c, student["name"], student["groups"], monkeypatch)
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert pod["spec"]["containers"][0]["image"].startswith(values["singleuser"]["image"]["name"] + ":")
    assert env[KEY_ENV] == student_key(SECRET.encode(), student["name"]) and "JUPYTER_CONFIG_PATH" not in env
    assert reaches_secret(pod, roofline["variantSecret"], SECRET) == []
    validate(pod)


# ---- what the images hold: the Dockerfiles' steps simulated on a temporary tree (no Docker here) -----------
def dockerfile_stages(name: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(stage name, [(instruction, arguments)])] of deploy/kubernetes/`name`, continuation lines
    joined and comments dropped; an unnamed stage is called by its index."""
    lines, joined = [], ""
    for line in (K8S / name).read_text().splitlines():
        if not joined and line.lstrip().startswith("#"):
            continue
        joined += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            if joined.strip():
                lines.append(joined.strip())
            joined = ""
    stages: list[tuple[str, list]] = []
    for line in lines:
        op, _, args = line.partition(" ")
        if op.upper() == "FROM":
            m = re.search(r"\s+AS\s+(\S+)$", args, re.I)
            stages.append((m.group(1) if m else str(len(stages)), []))
        if stages:
            stages[-1][1].append((op.upper(), args.strip()))
    return stages


def dockerignore() -> list[tuple[bool, re.Pattern]]:
    """The root .dockerignore's patterns as (excludes, regex), in order (Docker: the last pattern
    that matches a path or one of its parent folders decides)."""
    out = []
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        rx = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                rx, i = rx + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                rx, i = rx + ".*", i + 2
            elif pattern[i] == "*":
                rx, i = rx + "[^/]*", i + 1
            elif pattern[i] == "?":
                rx, i = rx + "[^/]", i + 1
            else:
                rx, i = rx + re.escape(pattern[i]), i + 1
        out.append((not negate, re.compile(rx + r"\Z")))
    return out


def in_context(rel: str) -> bool:
    """Whether the file `rel` (relative to the checkout's root) reaches the builder."""
    parts = rel.split("/")
    excluded = False
    for excludes, rx in dockerignore():
        if any(rx.match("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            excluded = excludes
    return not excluded


def copy_step(args: str, context: Path, root: Path) -> None:
    """A COPY from the build context into the simulated file system `root`: only what
    .dockerignore admits; a folder's contents into the destination, as Docker copies."""
    *sources, dest = args.split()
    for src in sources:
        base = context / src
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        assert files, f"COPY {src}: nothing there"
        for f in files:
            rel = f.relative_to(context).as_posix()
            if not in_context(rel):
                continue
            if base.is_file():
                target = root / dest.lstrip("/") / f.name if dest.endswith("/") else root / dest.lstrip("/")
            else:
                target = root / dest.lstrip("/") / f.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.read_bytes())


def run_step(args: str, root: Path) -> None:
    """A RUN of a build stage, on the simulated file system: its absolute paths under `root`,
    `python` and `pip` this interpreter's."""
    script = re.sub(r"(?<![\w/.$-])/(?=(src|out|wheel|kit|usr/local)\b)", str(root) + "/", args)
    script = re.sub(r"(?<![\w/.-])pip(?= )", f"{sys.executable} -m pip", script)
    script = re.sub(r"(?<![\w/.-])python(?= )", sys.executable, script)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(["bash", "-c", script], env={**env, "COURSE_ID": "roofline", "PIP_NO_INDEX": "1"},
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


SECRETS_IN_A_CHECKOUT = ["variant-secret", ".autograder/variant-secret", "course_lib/questions/variant-secret",
                         "course_lib/x.secret", "deploy/kubernetes/values.yaml", "deploy/kubernetes/values-lti.yaml",
                         "gradebook.db", "autograder/.autograder/key", ".git/config", ".venv/pyvenv.cfg"]


def test_no_build_context_holds_a_secret():
    """Both images build from the checkout's root: .dockerignore admits every file they copy and
    nothing that can hold a secret (the variant secret, the values with the OAuth client secret);
    no COPY takes the whole checkout or deploy/ (a file deleted in a later layer stays in its layer)."""
    for rel in SECRETS_IN_A_CHECKOUT:
        assert not in_context(rel), rel
    for name in ("student.Dockerfile", "instructor.Dockerfile"):
        for stage, steps in dockerfile_stages(name):
            for op, args in steps:
                if op in ("COPY", "ADD") and not args.startswith("--from="):
                    *sources, _ = args.split()
                    for src in sources:
                        assert src.strip("/") not in ("", ".", "deploy", "deploy/kubernetes"), f"{name}: COPY {src}"
                        assert in_context(src.strip("/")), f"{name}: COPY {src} is kept out by .dockerignore"
    # what the kit used to do is caught
    assert in_context("deploy/kubernetes/jupyter_settings.py") and not in_context("deploy/kubernetes/README.md")


def test_the_student_image_holds_no_answer(tmp_path):
    """student.Dockerfile's build stage run on a temporary tree (its COPY and RUN steps, this
    interpreter for its python and pip), then what its final stage takes from it (the wheel):
    the project's own key check finds no solver, take-away, practice truth or secret, and the
    final stage copies nothing from the build context itself."""
    from autograder.authoring.student_build import key_problems

    stages = dockerfile_stages("student.Dockerfile")
    final_name, final = stages[-1]
    root = tmp_path / "build"
    for op, args in final:
        if op in ("COPY", "ADD"):
            assert args.startswith("--from="), f"the image's own stage copies {args} from the build context"
    sources = {m.group(1) for op, args in final if op == "COPY" for m in [re.match(r"--from=(\S+)", args)]}
    built = {name for name, _ in stages}
    assert sources <= built and final_name not in sources
    for name in sources:
        for op, args in dict(stages)[name]:
            if op == "COPY":
                copy_step(args, REPO, root)
            elif op == "RUN":
                run_step(args, root)
    wheels = []
    for op, args in final:
        if op == "COPY":
            src = args.split()[1]
            found = root / src.lstrip("/")
            wheels += sorted(found.rglob("*.whl")) if found.is_dir() else []
    assert len(wheels) == 1, wheels
    import zipfile

    installed = tmp_path / "site-packages"
    zipfile.ZipFile(wheels[0]).extractall(installed)
    assert (installed / "course_lib").is_dir() and (installed / "course_hub" / "nbexchange").is_dir()
    assert not (installed / "autograder").exists()
    assert key_problems(installed / "course_lib", practice=False) == []
    # and the check finds what the public student repository's copy holds (practice truths)
    (installed / "course_lib" / "questions" / "practice.json").write_text("{}")
    assert key_problems(installed / "course_lib", practice=False)


def test_the_culler_stops_students_servers_only_and_homes_outlive_users(tmp_path, monkeypatch):
    """Day 2: the idle culler's scopes (as the hub resolves them) reach the students' group only,
    so a quiet instructor's grading is never stopped; a deleted user's home volume stays."""
    from jupyterhub import orm, scopes

    c = chart_hub_config(merged(), monkeypatch)
    assert c.KubeSpawner.delete_pvc is False
    app = start_hub(c, tmp_path, monkeypatch)
    culler = app.db.query(orm.Service).filter_by(name="jupyterhub-idle-culler").one()
    granted = scopes.get_scopes_for(culler)
    students = merged()["custom"]["roofline"]["studentsGroup"]
    assert any(s.startswith("delete:servers") for s in granted)
    assert all(s.endswith(f"!group={students}") for s in granted if ":servers" in s or ":users" in s), granted


# ---- grading a class on Kubernetes: the shards' Indexed Job and the merge (grading.yaml) -------------------
def grading_docs() -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d
            for d in yaml.safe_load_all((K8S / "grading.yaml").read_text()) if d}


def expand(command: list[str], env: dict[str, str]) -> list[str]:
    """The container's command as the kubelet runs it: $(VAR) replaced from its env."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), part) for part in command]


def test_the_grading_job_grades_n_shards_and_merges_them_on_one_named_volume():
    """Every manifest validates; the Indexed Job's pod i runs `grade A --shard i/N` (as the
    autograder's own parser reads it) with N its completions, and the merge Job merges the same
    assignment; both mount the one ReadWriteMany claim at the course folder they run in."""
    from autograder.cli import parser

    docs = grading_docs()
    for doc in docs.values():
        validate(doc)
    job, merge = docs[("Job", "roofline-grade")], docs[("Job", "roofline-merge")]
    claim = docs[("PersistentVolumeClaim", "roofline-grading-course")]
    assert job["spec"]["completionMode"] == "Indexed"
    n = job["spec"]["completions"]
    assert n >= 2 and job["spec"]["parallelism"] == n
    grade = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in grade["env"] if "value" in e}
    shards = set()
    for i in range(n):
        argv = expand(grade["command"], {**env, "JOB_COMPLETION_INDEX": str(i)})
        assert argv[:3] == ["python", "-m", "autograder"]
        args = parser().parse_args(argv[3:])
        assert args.command == "grade" and not args.submissions and not args.no_sandbox
        shards.add(args.shard)
        assignment = args.assignment
    assert shards == {f"{i}/{n}" for i in range(n)}
    container = merge["spec"]["template"]["spec"]["containers"][0]
    margs = parser().parse_args(expand(container["command"], {e["name"]: e["value"] for e in container["env"]})[3:])
    assert margs.command == "merge" and margs.assignment == assignment
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for c, pod in ((grade, job), (container, merge)):
        spec = pod["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec["volumes"]}
        mount = next(m for m in c["volumeMounts"] if "persistentVolumeClaim" in volumes[m["name"]])
        assert volumes[mount["name"]]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
        assert c["workingDir"].startswith(mount["mountPath"] + "/") and not mount.get("readOnly")
        assert spec["automountServiceAccountToken"] is False and pod["metadata"]["namespace"] == "roofline-grading"


def test_only_the_grading_pods_get_the_sandboxs_privileges():
    """The shards' pods carry bubblewrap's settings (the hook's gradeInPod ones) and nothing more
    (no privileged container, no capability); the merge runs no student code and is "restricted";
    the namespace that admits the shards is their own, never the students'."""
    docs = grading_docs()
    job, merge = docs[("Job", "roofline-grade")], docs[("Job", "roofline-merge")]
    template = job["spec"]["template"]
    assert privileged(template) == []
    assert sorted(restricted(template)) == ["grade: AppArmor Unconfined", "grade: procMount Unmasked",
                                            "grade: seccomp Unconfined"]
    assert template["spec"]["hostUsers"] is False and template["spec"]["nodeSelector"]
    assert restricted(merge["spec"]["template"]) == []
    ns = docs[("Namespace", "roofline-grading")]
    assert ns["metadata"]["name"] != NAMESPACE
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    # the instructors' image's pull secret, the same as the hook's
    secret = load("values.yaml")["custom"]["roofline"]["instructorImagePullSecret"]
    for pod in (job, merge):
        assert pod["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": secret}]


def test_the_image_tag_has_one_place(tmp_path):
    """image_tag.py prints values.yaml's tag and writes it into the manifests' images: a new tag
    in values.yaml reaches the hook's instructors, the course service and the grading Jobs."""
    spec = importlib.util.spec_from_file_location("image_tag", K8S / "image_tag.py")
    image_tag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(image_tag)
    tag = load("values.yaml")["singleuser"]["image"]["tag"]
    assert image_tag.tag() == tag
    other = tmp_path / "values.yaml"
    other.write_text((K8S / "values.yaml").read_text().replace(f'tag: "{tag}"', 'tag: "2031.2.7"'))
    assert image_tag.tag(other) == "2031.2.7"
    for name in ("course-service.yaml", "grading.yaml"):
        docs = [d for d in yaml.safe_load_all(image_tag.render((K8S / name).read_text(), "2031.2.7")) if d]
        images = re.findall(r"'image': '([^']+)'", str(docs))
        assert images and all(i.endswith(":2031.2.7") for i in images), (name, images)


def test_the_grading_jobs_wait_to_be_started():
    """The Jobs are created suspended: the shards would otherwise start before the course is in
    their volume, and the merge before the shards finished."""
    docs = grading_docs()
    assert docs[("Job", "roofline-grade")]["spec"]["suspend"] is True
    assert docs[("Job", "roofline-merge")]["spec"]["suspend"] is True


def test_the_readmes_agree_on_grading_in_shards():
    """autograder/README.md points at the kit's Indexed Job, which exists and runs the command it
    quotes; the kit's README describes it and no longer says there is none."""
    autograder = (REPO / "autograder" / "README.md").read_text()
    kit = (K8S / "README.md").read_text()
    assert "deploy/kubernetes/grading.yaml" in autograder and (K8S / "grading.yaml").exists()
    quoted = re.search(r"`(python -m autograder grade A --shard \$\(JOB_COMPLETION_INDEX\)/N)`", autograder).group(1)
    assert quoted in kit
    job = grading_docs()[("Job", "roofline-grade")]
    command = " ".join(job["spec"]["template"]["spec"]["containers"][0]["command"])
    assert command.startswith("python -m autograder grade $(ASSIGNMENT) --shard $(JOB_COMPLETION_INDEX)/$(SHARDS)")
    assert "not part of this kit" not in kit and "Indexed Job" in kit


@pytest.mark.parametrize("overlay", [None, *OVERLAYS])
def test_any_login_name_becomes_a_name_the_course_service_accepts(overlay, monkeypatch):
    """The hub's authenticator (the values' own, or an overlay's) gives every login a name the
    course service admits (course_hub.names.UNIX_USER), the same at every login, different for
    different people; a name already in that grammar is kept."""
    from jupyterhub.app import JupyterHub

    from course_hub.names import UNIX_USER

    c = chart_hub_config(merged(*([overlay] if overlay else [])), monkeypatch)
    cls = JupyterHub(config=c).authenticator_class
    JupyterHub.clear_instance()
    auth = cls(config=c)
    logins = ["Ada.Lovelace@uni.example.edu", "ada.lovelace@other.example.edu", "Grace Hopper", "1234567",
              "ünïcødé", "x" * 80, "ada"]
    names = [auth.normalize_username(n) for n in logins]
    assert all(UNIX_USER.fullmatch(n) for n in names), names
    assert len(set(names)) == len(names) and names[-1] == "ada"
    assert names == [auth.normalize_username(n) for n in logins]
