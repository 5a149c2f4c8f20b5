"""Capacity keys: machine shapes (family and accelerator must fit), checked with the CustomJob's own rules."""

from __future__ import annotations

from infra.config.reader import ConfigError


def check_machine(keys: tuple[str, str, str], machine: str, accelerator: str | None, count: int) -> None:
    """Family/accelerator compatibility via the CustomJob resource's own validator (the rules live once)."""
    from infra.vertex.spec import validate

    pool = {"machine_type": machine, "accelerator_type": accelerator, "accelerator_count": count}
    probe = {
        "runner": "local",
        "display_name": "config-check",
        "base_output_dir": "config-check",
        "timeout_seconds": 1,
        "worker_pools": [{**pool, "image_uri": "config-check", "command": ["true"]}],
    }
    fields = dict(zip(("machine_type", "accelerator_type", "accelerator_count"), keys, strict=True))
    for prop, reason in validate({k: v for k, v in probe.items() if v is not None}):
        field = prop.rsplit(".", 1)[-1]
        if field in fields:
            raise ConfigError(
                fields[field], reason, "pick a matching machine type and accelerator (docs/stack.md)"
            )
