"""Every request the job providers send to Google stays byte-for-byte the same (issue 39): the props recorded
for each committed stack and each job kind (requests.py, requests.json) go through today's providers against
the same refusing fakes, and each Create request (one per shape of the chain) and each object written to Cloud
Storage before a submission must equal the recorded one."""

from __future__ import annotations

import json

import pytest

from tests.compat.requests import GOLDEN, PROVIDERS, VARIANTS, sent_requests

RECORDED = json.loads(GOLDEN.read_text())


def test_the_recording_covers_every_stack_and_every_kind() -> None:
    stacks = {VARIANTS[key.split("/")[0]][0] for key in RECORDED}
    assert stacks == {"dev", "prod", "cassava", "local", "housing"}
    assert {entry["type"] for entry in RECORDED.values()} == set(PROVIDERS)
    # Fallback chains are recorded shape by shape: the prod training job tries eight.
    assert len(RECORDED["prod/train"]["sent"]["creates"]) == 8


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_provider_sends_the_recorded_requests(name: str) -> None:
    entry = RECORDED[name]
    sent = sent_requests(entry["type"], entry["props"])
    assert len(sent["creates"]) == len(entry["sent"]["creates"])
    for now, then in zip(sent["creates"], entry["sent"]["creates"], strict=True):
        assert json.dumps(now, sort_keys=True) == json.dumps(then, sort_keys=True)
    assert sent["written"] == entry["sent"]["written"]
