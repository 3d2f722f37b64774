"""The cloud room's recipe (hub/z2jh/values.yaml) is valid for the pinned Zero to JupyterHub chart, and says
what `make hub` does: the same scopes, roles, limits and services; its network rules let through the flows the
room needs; its images (hub/Dockerfile) have what a learner's notebooks need.

NOT RUN HERE, and so not tested: rendering the chart (no helm on these machines: the chart's templates are not
vendored, only its values and schema), building the images (no container builder), a cluster (no kind or k3d).
The network test below evaluates our values' rules against the pods' labels the chart's templates give them
(listed in POD_LABELS, from the chart's source), with Kubernetes NetworkPolicy semantics for podSelectors and
ports; the chart's own default rules are not evaluated."""

import copy

import jsonschema
import pytest
import yaml

from trainlab.hub import limits, scopes
from trainlab.paths import REPO

Z2JH = REPO / "hub" / "z2jh"


def merged(defaults, ours):
    """What helm validates: the chart's default values with ours merged over them (maps merge, the rest replaces)."""
    out = copy.deepcopy(defaults)
    for key, value in ours.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.fixture(scope="module")
def values():
    return yaml.safe_load((Z2JH / "values.yaml").read_text())


@pytest.fixture(scope="module")
def validator():
    schema = yaml.safe_load((Z2JH / "chart" / "values.schema.yaml").read_text())
    return jsonschema.Draft7Validator(schema)


def test_the_values_file_validates_against_the_pinned_charts_schema(values, validator):
    defaults = yaml.safe_load((Z2JH / "chart" / "values.yaml").read_text())
    errors = sorted(validator.iter_errors(merged(defaults, values)), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_the_schema_test_can_fail(values, validator):
    defaults = yaml.safe_load((Z2JH / "chart" / "values.yaml").read_text())
    broken = merged(defaults, {**values, "singleuser": {**values["singleuser"], "memory": {"limitt": "3G"}}})
    assert any("limitt" in e.message for e in validator.iter_errors(broken))


def test_the_cloud_room_has_make_hubs_scopes_limits_and_services(values):
    per = limits.per_learner()
    assert values["singleuser"]["memory"] == {"limit": f"{per.memory_limit_mb}M", "guarantee": f"{per.memory_guarantee_mb}M"}
    config = values["hub"]["config"]
    assert config["JupyterHub"]["custom_scopes"] == scopes.CUSTOM_SCOPES
    assert config["Spawner"]["server_token_scopes"] == scopes.SERVER_TOKEN
    assert config["JupyterHub"]["authenticator_class"] == "trainlab.hub.auth.RoomAuthenticator"
    assert config["RoomAuthenticator"]["create_users"] is False and config["RoomAuthenticator"]["state_folder"]
    state = config["RoomAuthenticator"]["state_folder"]  # `--codes` reads who claimed from <state>/passwords.dbm
    assert config["RoomAuthenticator"]["dbm_path"] == f"{state}/passwords.dbm"
    assert values["hub"]["services"][scopes.ROOM]["environment"]["TRAINLAB_HUB_STATE"] == state
    room = values["hub"]["services"][scopes.ROOM]
    assert room["oauth_client_allowed_scopes"] == [scopes.VIEW]
    assert values["hub"]["loadRoles"]["user"]["scopes"] == scopes.roles([])[0]["scopes"]
    assert scopes.VIEW in values["hub"]["extraConfig"]["trainlab-roster"]
    assert values["cull"]["enabled"] and values["proxy"]["https"]["enabled"]
    assert "trainlab.hub.singleuser" in " ".join(values["singleuser"]["cmd"])


# The labels the chart's templates put on each pod (jupyterhub/templates/*/deployment.yaml and the
# singleuser pods KubeSpawner starts, chart 4.x): what the podSelectors below must match.
POD_LABELS = {
    "hub": {"app": "jupyterhub", "component": "hub", "release": "room", "hub.jupyter.org/network-access-proxy-api": "true"},
    "proxy": {"app": "jupyterhub", "component": "proxy", "release": "room", "hub.jupyter.org/network-access-hub": "true"},
    "learner": {"app": "jupyterhub", "component": "singleuser-server", "release": "room",
                "hub.jupyter.org/network-access-hub": "true"},
}


def matches(rule_peers, labels):
    return any(set(peer.get("podSelector", {}).get("matchLabels", {}).items()) <= set(labels.items())
               for peer in rule_peers)


def allows(rules, direction, peer_labels, port):
    """Whether one of these NetworkPolicy rules (ingress: from, egress: to) admits the peer on port."""
    side = "from" if direction == "ingress" else "to"
    return any(any(p.get("port") == port for p in rule.get("ports", [])) and matches(rule.get(side, []), peer_labels)
               for rule in rules)


@pytest.mark.parametrize("source, target", [("learner", "hub"), ("hub", "hub"), ("proxy", "hub")])
def test_the_rooms_flows_to_the_room_view_are_let_through_both_ways(values, source, target):
    """Learners' checks post records to http://hub:8011 (their egress and the hub's ingress), the hub calls its
    own service (z2jh #3871), the proxy routes the instructor's view there (on Cilium only an explicit egress
    rule does: z2jh #3187). The chart's singleuser egress allows the hub on 8081 only (privateIPs false)."""
    policies = {"hub": values["hub"]["networkPolicy"], "proxy": values["proxy"]["chp"]["networkPolicy"],
                "learner": values["singleuser"]["networkPolicy"]}
    port = 8011
    assert allows(policies[source].get("egress", []), "egress", POD_LABELS[target], port), f"{source} egress"
    assert allows(policies[target].get("ingress", []), "ingress", POD_LABELS[source], port), f"{target} ingress"
    assert values["singleuser"]["extraEnv"]["TRAINLAB_ROOM_URL"].startswith(f"http://hub:{port}/")


def test_the_network_check_can_fail(values):
    assert not allows(values["hub"]["networkPolicy"]["ingress"], "ingress", {"component": "autohttps"}, 8011)
    assert not allows(values["singleuser"]["networkPolicy"]["egress"], "egress", POD_LABELS["hub"], 8081)


def test_the_images_have_what_a_learner_needs_and_the_hub_no_torch():
    dockerfile = (REPO / "hub" / "Dockerfile").read_text()
    singleuser, hub = dockerfile.split("AS hub")[0].split("AS singleuser")[1], dockerfile.split("AS hub")[1]
    assert "g++" in singleuser  # notebook 04's C++ kernels build with torch.utils.cpp_extension
    assert "download.pytorch.org/whl/cpu" in singleuser  # the CPU wheel, not PyPI's CUDA one
    assert "trainlab.checks --warm" in singleuser  # reference runs and the data set cached in the image
    assert "requirements-hub.txt" not in singleuser and '"jupyterhub==${JUPYTERHUB_VERSION}"' in singleuser
    version = dockerfile.split("ARG JUPYTERHUB_VERSION=")[1].split()[0]
    assert version.startswith("5."), "k8s-hub 4.x runs JupyterHub 5: its learners' singleuser must be 5.x too"
    assert "torch" not in hub.replace("no torch", "")
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", "build", "work", "data/*"} <= set(ignored) and "!data/published.toml" in ignored


def test_the_hub_and_room_service_do_not_load_torch():
    """Neither the hub's configuration, its authenticator nor the room view imports torch (the lazy package
    root): the hub image has none, and a hub's memory is its own."""
    from tests.hub.hubserver import require_hub_environment

    python = require_hub_environment()
    probe = ("import sys, resource\nimport trainlab.hub.room, trainlab.hub.config, trainlab.hub.auth\n"
             "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules), "
             "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)")
    import subprocess

    done = subprocess.run([python, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, _ = done.stdout.rsplit(" ", 1)
    assert loaded == "[]", done.stdout
