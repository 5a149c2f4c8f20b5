"""The real dynamic-provider host takes over the state of the custom role the bootstrap no longer makes: its
diff against the role's own stored state asks for a replacement (which deletes the role), and against its
own state for nothing; create and delete touch nothing in Google Cloud (no emulator is even set)."""

from __future__ import annotations

from google.protobuf import struct_pb2
from pulumi.runtime.rpc import UNKNOWN

from infra.bootstrap import retired
from infra.bootstrap.retired import RESOURCE_TYPE, RetiredCustomRole
from tests.engine.host import plain
from tests.fakes.pulumi_mocks import run_program

ROLE = "projects/my-gcp-project/roles/vertexTrainingDeploy"
# What pulumi-gcp stored for the role a bootstrap of the earlier version created (IAMCustomRole outputs).
ROLE_STATE = {
    "id": ROLE,
    "name": ROLE,
    "project": "my-gcp-project",
    "roleId": "vertexTrainingDeploy",
    "title": "Vertex training deploy extras",
    "description": "Permissions of vt-ci-deploy that no narrow predefined role holds.",
    "permissions": ["serviceusage.services.generateServiceIdentity"],
    "stage": "GA",
    "deleted": False,
}


def recorded() -> struct_pb2.Struct:
    run = run_program(
        lambda: RetiredCustomRole("deploy-extras-role", "my-gcp-project", "vertexTrainingDeploy"),
        project="vertex-training-bootstrap",
        stack="ci",
    )
    return run.one(RESOURCE_TYPE).struct


def struct(value: dict) -> struct_pb2.Struct:
    found = struct_pb2.Struct()
    found.update(value)
    return found


def test_the_roles_state_is_replaced_once_and_the_marker_then_stays(start_host) -> None:
    host = start_host()
    try:
        news = host.check(recorded(), struct(ROLE_STATE))
        assert list(news.failures) == []
        assert plain(news.inputs)[retired.MARKER] == ROLE
        # Against the role's state (found through the alias): replace it; the engine deletes the role then.
        diff = host.diff(ROLE, struct(ROLE_STATE), news.inputs)
        assert diff.changes == diff.DIFF_SOME and list(diff.replaces) == [retired.MARKER]
        assert not diff.deleteBeforeReplace  # the marker first, then the role goes
        created = host.create(news.inputs)
        assert created.id == ROLE and plain(created.properties)[retired.MARKER] == ROLE
        # The next `up`: the marker against its own state changes nothing.
        again = host.diff(created.id, created.properties, news.inputs)
        assert again.changes == again.DIFF_NONE
        host.delete(created.id, created.properties)  # destroy of the bootstrap: nothing to delete
        assert UNKNOWN not in str(plain(created.properties))
    finally:
        host.stop()


def test_the_marker_takes_the_roles_name_and_type_and_is_never_protected() -> None:
    opts = retired.options()
    (alias,) = opts.aliases
    assert alias.type_ == retired.CUSTOM_ROLE_TYPE == "gcp:projects/iAMCustomRole:IAMCustomRole"
    assert alias.name is ... or alias.name is None  # the same name: only the type differs
    assert opts.protect is False
