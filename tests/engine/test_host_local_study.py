"""A local study deleted and re-created in the same directory (`pulumi destroy`, then `pulumi up` with the
same output dir) through the real dynamic-provider host: the new study's trials count only what they report
themselves, never the metric files the deleted study's trials left there."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.dynamic.dynamic import serialize_provider

from infra.vertex.tuning_provider import TuningJobProvider
from tests.engine.host import plain
from tests.vertex.test_local_tuning import local_props

SILENT = "import argparse; argparse.ArgumentParser().parse_known_args()"  # trains nothing, reports nothing


def struct(props: dict) -> struct_pb2.Struct:
    """Inputs as the engine sends them: the props and the serialized provider."""
    return json_format.ParseDict(
        {**props, "__provider": serialize_provider(TuningJobProvider())}, struct_pb2.Struct()
    )


def test_a_recreated_local_study_does_not_read_the_deleted_studys_metrics(start_host, tmp_path: Path) -> None:
    host = start_host()
    first = local_props(tmp_path, max_trial_count=2, parallel_trial_count=2, max_failed_trial_count=2)
    checked = host.check(struct(first))
    assert list(checked.failures) == []
    created = host.create(checked.inputs)
    outs = plain(created.properties)
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert [t["metric"] for t in outs["trials"]] == [2.0, 3.0]
    host.delete(created.id, created.properties)
    stale = tmp_path / "study" / "1" / "hypertune" / "output.metrics"
    assert stale.is_file()  # what `pulumi destroy` leaves: the deleted study's trial outputs

    # The same study dir, a trainer that now reports nothing: every trial is INFEASIBLE, the study fails.
    silent = {**first, "worker_pools": [{**first["worker_pools"][0], "command": ["python", "-c", SILENT]}]}
    again = host.check(struct(silent))
    assert list(again.failures) == []
    with pytest.raises(grpc.RpcError) as failed:  # the host answers a failed Create with the provider's error
        host.create(again.inputs)
    details = failed.value.details()
    assert "JOB_STATE_FAILED" in details and "reported no score" in details, details
    assert "3.0" not in details.split("Failed trials:")[0]
