"""trainerDir / trainerCommand / trainerArgs / dataSource none: the built-in trainer is their defaults."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from infra.components import image
from infra.config import ConfigError, load_config
from infra.config.reader import Reader
from infra.config.trainer import TrainerConfig, entrypoint, entrypoint_conflict, read_trainer
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from infra.workloads.jobs import fingerprint, plan
from tests.stack.conftest import BUILTIN_TRAINER_STACKS, ROOT, cached_run, stack_config, stack_values

# The built-in trainer's arguments per committed stack, as infra/jobs.py wrote them before these keys existed
# (read from the registered jobs at the commit before; paths are recomputed with the formula of that time).
PINNED_HYPERPARAMETER_ARGS = {
    "local": ["64", "2", "1", "16", "0.001", "none", "off", "densenet121"],
    "dev": ["160", "3", "1", "32", "0.001", "imagenet", "auto", "densenet121"],
    "prod": ["224", "10", "5", "64", "0.001", "imagenet", "auto", "densenet121"],
    "cassava": ["224", "5", "3", "64", "0.001", "imagenet", "auto", "resnet50"],
}
FLAGS = ["--image-size", "--epochs", "--fine-tune-epochs", "--batch-size", "--learning-rate", "--weights"]
FLAGS += ["--mixed-precision", "--backbone"]


@pytest.mark.parametrize("stack", BUILTIN_TRAINER_STACKS)
def test_the_built_in_stacks_register_the_same_training_job_as_before(stack: str) -> None:
    cfg = stack_config(stack)
    run = cached_run(stack)
    jobs = {job.name: job.inputs for job in run.by_type(RESOURCE_TYPE)}
    assert sorted(jobs) == ["data-prep", "train"]
    # The training hash as it was computed before: code, data, hyperparameters and machine only.
    data_hash = run.outputs["data_dir"].rsplit("/", 1)[1]
    assert jobs["data-prep"]["display_name"] == f"vertex-training-{stack}-data-{data_hash[:8]}"
    train_hash = fingerprint(
        {
            "data": data_hash,
            "hyperparameters": asdict(cfg.hyperparameters),
            "code": image.content_hash(),
            "machine": [cfg.machine_type, cfg.accelerator_type, cfg.accelerator_count, cfg.worker_count],
        }
    )
    root = run.outputs["data_dir"].rsplit("/data/", 1)[0]
    expected_args = [
        "--data-dir",
        run.outputs["data_dir"],
        "--checkpoint-dir",
        f"{root}/checkpoints/{train_hash}",
    ]
    for flag, value in zip(FLAGS, PINNED_HYPERPARAMETER_ARGS[stack], strict=True):
        expected_args += [flag, value]
    if cfg.hyperparameters.num_classes:
        expected_args += ["--num-classes", str(cfg.hyperparameters.num_classes)]
    train = jobs["train"]
    assert train["display_name"] == f"vertex-training-{stack}-train-{train_hash[:8]}"
    assert train["base_output_dir"] == f"{root}/runs/{train_hash}"
    for pool in train["worker_pools"]:
        assert pool["command"] == ["python", "-m", "trainer.task"]
        assert pool["args"] == expected_args
        # The deliberate changes, local only: no GPU for a job that asked for none (quiet local runs), and the
        # trainer directory's parent on the path, as for any trainer directory.
        local = {"CUDA_VISIBLE_DEVICES": "-1", "PYTHONPATH": str(ROOT)} if cfg.is_local else {}
        assert set(pool["env"]) == {"TF_CPP_MIN_LOG_LEVEL", "PYTHONUNBUFFERED", *local}
        assert {k: pool["env"][k] for k in local} == local
    assert jobs["data-prep"]["worker_pools"][0]["command"] == ["python", "-m", "trainer.create_tfrecords"]


def test_no_special_case_for_the_built_in_trainer_outside_its_defaults() -> None:
    mentions = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "infra").rglob("*.py")
        if "trainer.task" in path.read_text()
    ]
    assert mentions == ["infra/config/trainer.py"]


def _error(stack: str = "dev", **overrides: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(stack_values(stack, **overrides), stack)
    return caught.value


OWN = {
    "trainerDir": "examples/housing",
    "trainerCommand": ["python", "-m", "housing.task"],
    "dataSource": "none",
}


@pytest.mark.parametrize(
    ("overrides", "key", "words"),
    [
        ({"trainerDir": "../elsewhere"}, "trainerDir", "outside the project"),
        ({"trainerDir": "/opt/mytrainer"}, "trainerDir", "must be relative"),
        ({"trainerDir": "no-such-dir"}, "trainerDir", "is not a directory"),
        ({"trainerDir": "docs"}, "trainerDir", "neither a Dockerfile nor a requirements.txt"),
        ({**OWN, "trainerCommand": None}, "trainerCommand", "is required"),
        ({**OWN, "trainerArgs": ["--lr", "{learning_rte}"]}, "trainerArgs", "{learning_rte}"),
        ({**OWN, "trainerArgs": ["--x", "{"]}, "trainerArgs", "brace"),
        ({**OWN, "trainerArgs": ["{epochs:>3}"]}, "trainerArgs", "format"),
        ({**OWN, "trainerArgs": ["--data", "{data_dir}"]}, "trainerArgs", "no dataDir"),
        ({**OWN, "trainerArgs": ["--n", "{num_classes}"]}, "trainerArgs", "not set"),
        ({**OWN, "trainerArgs": ["--config", f"{ROOT}/conf.yaml"]}, "trainerArgs", "cannot read"),
        ({**OWN, "trainerArgs": ["--config=~/conf.yaml"]}, "trainerArgs", "cannot read"),
        ({**OWN, "trainerCommand": ["python", str(ROOT / "train.py")]}, "trainerCommand", "cannot read"),
        ({**OWN, "dataSource": "synthetic"}, "dataSource", "trainerDir is housing/"),
        ({**OWN, "dataDir": "/home/me/data"}, "dataDir", "not readable by a cloud job"),
        ({"dataDir": "gs://b/d"}, "dataDir", "only used with dataSource none"),
    ],
)
def test_mistakes_name_the_key_and_the_fix(overrides: dict, key: str, words: str) -> None:
    error = _error(**overrides)
    assert error.key == key and words in str(error) and "Fix:" in str(error)


def test_own_trainer_paths_and_placeholders() -> None:
    cfg = load_config(
        stack_values(
            "dev",
            **OWN,
            dataDir="gs://shared/houses",
            trainerArgs=[
                "--data={data_dir}",
                "--lr",
                "{learning_rate}",
                "--in",
                "/gcs/shared/x",
                "/app/conf",
                3,
            ],
        ),
        "dev",
    )
    assert cfg.trainer.args == (
        "--data={data_dir}",
        "--lr",
        "{learning_rate}",
        "--in",
        "/gcs/shared/x",
        "/app/conf",
        "3",
    )
    job = plan(cfg, data_code="d", trainer_code="t")
    assert job.data_dir == "gs://shared/houses" and not job.prepares_data
    # A local stack may pass local paths: its job runs on this machine.
    local = load_config(stack_values("housing", trainerArgs=["--config", f"{ROOT}/conf.yaml"]), "housing")
    assert local.trainer.args == ("--config", f"{ROOT}/conf.yaml")


def test_another_command_line_gets_its_own_run_and_checkpoint_paths() -> None:
    builtin = plan(stack_config("dev"), data_code="d", trainer_code="t")
    other = plan(stack_config("dev", trainerArgs=["--epochs", "{epochs}"]), data_code="d", trainer_code="t")
    assert builtin.checkpoint_dir != other.checkpoint_dir and builtin.data_dir == other.data_dir


def _dir(tmp_path: Path, dockerfile: str | None) -> Path:
    mine = tmp_path / "mine"
    mine.mkdir(parents=True)
    (mine / "requirements.txt").write_text("")
    if dockerfile is not None:
        (mine / "Dockerfile").write_text(dockerfile)
    return mine


def _read(tmp_path: Path, **values: object):
    reader = Reader({f"vertex-training:{k}": v for k, v in {"trainerDir": "mine", **values}.items()})
    cfg = stack_config("dev", **OWN)
    return read_trainer(reader, cfg.hyperparameters, cfg.data, "vertex", root=tmp_path)


def test_the_dockerfile_entrypoint_is_the_default_command_and_a_different_command_wins(tmp_path) -> None:
    mine = _dir(tmp_path, 'FROM python:3.11\nENTRYPOINT ["python", "train.py"]\n')
    assert entrypoint(mine / "Dockerfile") == ("python", "train.py")
    assert _read(tmp_path).command == ("python", "train.py")
    assert entrypoint_conflict(_read(tmp_path)) is None
    other = _read(tmp_path, trainerCommand=["python", "other.py"])
    warning = entrypoint_conflict(other)
    assert warning and "trainerCommand wins" in warning and "['python', 'train.py']" in warning
    shell = TrainerConfig(dir=_dir(tmp_path / "s", "FROM x\nENTRYPOINT python run.py\n"), command=("python",))
    assert entrypoint(shell.dir / "Dockerfile") == ("/bin/sh", "-c", "python run.py")
    assert entrypoint_conflict(TrainerConfig(dir=_dir(tmp_path / "n", None), command=("python",))) is None


def test_a_shell_form_entrypoint_with_arguments_asks_for_trainer_command(tmp_path) -> None:
    _dir(tmp_path, "FROM x\nENTRYPOINT python run.py\n")
    assert _read(tmp_path).command == ("/bin/sh", "-c", "python run.py")  # no arguments: runs as Docker would
    with pytest.raises(ConfigError, match="shell-form ENTRYPOINT") as caught:
        _read(tmp_path, trainerArgs=["--epochs", "{epochs}"])
    assert caught.value.key == "trainerArgs" and "trainerCommand" in str(caught.value)
    assert _read(tmp_path, trainerArgs=["--x"], trainerCommand=["python", "run.py"]).args == ("--x",)


def test_a_local_cpu_job_sees_no_gpu_and_runs_quieter_unless_overridden() -> None:
    from infra.workloads.jobs import job_env

    assert job_env({}, local_cpu=True) == {
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONUNBUFFERED": "1",
        "CUDA_VISIBLE_DEVICES": "-1",
    }
    overridden = job_env({"TF_CPP_MIN_LOG_LEVEL": "0", "CUDA_VISIBLE_DEVICES": "0"}, local_cpu=True)
    assert overridden["TF_CPP_MIN_LOG_LEVEL"] == "0" and overridden["CUDA_VISIBLE_DEVICES"] == "0"
    assert "CUDA_VISIBLE_DEVICES" not in job_env({})  # cloud jobs: the machine decides


def test_a_local_job_imports_its_trainer_from_the_directorys_parent() -> None:
    from infra.workloads.jobs import code_env

    assert code_env(ROOT / "examples" / "housing", "local")["PYTHONPATH"] == str(ROOT / "examples")
    assert code_env(ROOT / "trainer", "local") == {"PYTHONPATH": str(ROOT)}
    assert code_env(ROOT / "examples" / "housing", "vertex") == {}  # the image's /app/housing


def test_a_copied_create_tfrecords_does_not_make_another_trainer_dir_prepare_data(tmp_path) -> None:
    """The data job runs the built-in trainer's module: another trainerDir must say dataSource none."""
    mine = _dir(tmp_path, None)
    (mine / "create_tfrecords.py").write_text("")
    reader = Reader(
        {"vertex-training:trainerDir": "mine", "vertex-training:trainerCommand": ["python", "x.py"]}
    )
    cfg = stack_config("dev")  # dataSource synthetic
    with pytest.raises(ConfigError, match="trainerDir is mine/") as caught:
        read_trainer(reader, cfg.hyperparameters, cfg.data, "vertex", root=tmp_path)
    assert caught.value.key == "dataSource" and "dataSource none" in str(caught.value)


def test_checkpoint_minutes_reaches_the_training_job_and_keeps_its_paths() -> None:
    from infra.workloads.jobs import train_args

    unset = stack_config("dev")
    assert unset.trainer.checkpoint_minutes is None and "--checkpoint-minutes" not in unset.trainer.args
    cfg = stack_config("dev", checkpointMinutes=5)
    job = plan(cfg, data_code="d", trainer_code="t")
    args = train_args(cfg, job)
    assert args[args.index("--checkpoint-minutes") + 1] == "5"
    assert train_args(stack_config("dev", checkpointMinutes="2.5"), job)[-1] == "2.5"  # a string, as set
    # How often backups are made changes no result: the same run and checkpoint dirs, so a job whose
    # cadence changed resumes the same checkpoints.
    assert job == plan(unset, data_code="d", trainer_code="t")
    # An own trainer takes it as a placeholder.
    own = stack_config("dev", **OWN, checkpointMinutes=7, trainerArgs=["--every", "{checkpoint_minutes}"])
    assert train_args(own, plan(own, data_code="d", trainer_code="t")) == ["--every", "7"]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"checkpointMinutes": 0}, "greater than 0"),
        ({"checkpointMinutes": "often"}, "expected a number"),
        ({"checkpointMinutes": 10**6}, "at most"),
        ({**OWN, "trainerArgs": ["--every", "{checkpoint_minutes}"]}, "checkpointMinutes"),
    ],
)
def test_checkpoint_minutes_mistakes(overrides: dict, words: str) -> None:
    error = _error(**overrides)
    assert words in str(error) and "Fix:" in str(error)
