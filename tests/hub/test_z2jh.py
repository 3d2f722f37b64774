"""The cloud room's recipe (hub/z2jh/values.yaml) is valid for the pinned Zero to JupyterHub chart, and says
what `make hub` does: the same scopes, roles, limits and services. Not run on a cluster here."""

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
    assert config["FirstUseAuthenticator"]["create_users"] is False
    room = values["hub"]["services"][scopes.ROOM]
    assert room["oauth_client_allowed_scopes"] == [scopes.VIEW]
    assert values["hub"]["loadRoles"]["user"]["scopes"] == scopes.roles([])[0]["scopes"]
    assert scopes.VIEW in values["hub"]["extraConfig"]["trainlab-roster"]
    assert values["cull"]["enabled"] and values["proxy"]["https"]["enabled"]
    assert "trainlab.hub.singleuser" in " ".join(values["singleuser"]["cmd"])
