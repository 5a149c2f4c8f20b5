"""Every fix the configuration checks print runs as printed.

Each case below is one kind of bad input; together they reach every place in infra/config that makes a
ConfigError (checked against the source: a new check without a case fails here). Every `pulumi config`
command in every fix is then checked as a user would run it: it parses as shell (shlex, and quoting round
trips), names `--stack <the stack>`, writes `vertex-training:` keys, lists in the documented `--path` form,
and, run against the stack's values as the Pulumi CLI runs it, leaves the key it sets without a problem.

The Pulumi CLI is not on these machines: `pulumi config set|rm` is applied as its help describes it
("When setting the config for a path, "true" and "false" are treated as boolean values, and integers are
treated as numbers. All other values are treated as strings"; without --path the value is a string;
`pulumi config set --help`, pulumi/pulumi sdk/go/common/resource/config, read 2026-11-25).
"""

from __future__ import annotations

import ast
import copy
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError, load_config
from infra.config.reader import problems
from infra.config.stack_file import load_stack
from tests.stack.conftest import ROOT, stack_values

CONFIG_DIR = ROOT / "infra" / "config"
NS = "vertex-training"
# Placeholders a user must fill in (their own project, billing account): checked as shell, not applied.
PLACEHOLDER = re.compile(r"^<[A-Za-z_-]+>$")
# Places that only re-wrap an error made elsewhere (the stack named into its fix).
REWRAPS = {("reader.py", "stack_named")}

FALLBACK_T4 = {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_TESLA_T4"}
TUNING = {"metric": "val_accuracy", "goal": "MAXIMIZE", "maxTrials": 2, "parameters": {"learningRate": {}}}

# (stack, overrides): one kind of bad input each (None removes a key).
CASES: list[tuple[str, dict[str, Any]]] = [
    ("dev", {"budgetUsd": -5}),
    ("dev", {"budgetUsd": 30}),
    ("dev", {"machinetype": "n1-standard-8"}),
    ("dev", {"maxTrials": 4}),
    ("dev", {"fallback": [FALLBACK_T4]}),
    ("dev", {"zzzz": 1}),
    ("dev", {"gcpProject": None}),
    ("dev", {"gcpProject": "my-training-dev"}),
    ("dev", {"gcpProject": "Bad_Project"}),
    ("dev", {"region": "us-central1-a"}),
    ("dev", {"acceleratorCount": 0}),
    ("dev", {"acceleratorType": "none", "acceleratorCount": 1}),
    ("dev", {"workerCount": -1}),
    ("dev", {"dataMachineType": "N1_STANDARD"}),
    ("dev", {"machineType": "n1-standrd-4"}),
    ("dev", {"machineType": "n2-standard-8"}),
    ("dev", {"machineType": "n1-standard-4", "acceleratorCount": 8}),
    ("dev", {"fallbacks": [{"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_TESLA_T9"}]}),
    ("dev", {"fallbacks": [{"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_L4"}]}),
    ("dev", {"fallbacks": [{"machineType": "g2-standrd-4", "acceleratorType": "NVIDIA_L4"}]}),
    ("dev", {"fallbacks": ["g2-standard-4"]}),
    ("dev", {"fallbacks": [{"machine": "g2-standard-4"}]}),
    ("dev", {"fallbacks": "g2-standard-4"}),
    ("dev", {"fallbacks": [{"reservationAffinity": "any"}]}),
    ("dev", {"fallbacks": [{"reservationAffinity": {"kind": "ANY_RESERVATION"}}]}),
    ("dev", {"fallbacks": [{"schedulingStrategy": "CHEAP"}]}),
    ("dev", {"fallbackRegions": "us-east4"}),
    ("dev", {"schedulingStrategy": "STANDARD"}),
    ("dev", {"schedulingStrategy": "cheap"}),
    ("dev", {"spot": "maybe"}),
    ("dev", {"timeoutSeconds": 0}),
    ("dev", {"timeoutSeconds": 999999999}),
    ("dev", {"timeoutSeconds": "soon"}),
    ("dev", {"timeoutSeconds": 1.5}),
    ("dev", {"queueTimeoutSeconds": True}),
    ("dev", {"imageBuilder": "kaniko"}),
    ("dev", {"region": 5}),
    ("dev", {"billingAccount": None}),
    ("dev", {"billingAccount": "12345"}),
    ("dev", {"budgetCurrency": "usd"}),
    ("dev", {"budgetThresholds": [0.5, 0.5]}),
    ("dev", {"budgetThresholds": [20]}),
    ("dev", {"budgetThresholds": "0.5"}),
    ("dev", {"budgetEmails": ["not-an-address"]}),
    ("dev", {"budgetEmails": [f"u{i}@example.com" for i in range(9)]}),
    ("dev", {"budgetEmails": "me@example.com"}),
    ("dev", {"dataSource": "folder"}),
    ("dev", {"dataFolder": "gs://b/images"}),
    ("dev", {"dataSource": "folder", "dataFolder": "/home/me/images"}),
    ("dev", {"imageSize": 0}),
    ("dev", {"tfdsName": "Cats Vs Dogs"}),
    ("dev", {"dataSource": "synthetic", "tfdsName": "cassava"}),
    ("dev", {"dataDir": "gs://b/data"}),
    ("dev", {"dataSource": "none", "dataDir": "/home/me/data"}),
    ("dev", {"dataSource": "none", "dataReplicas": 2}),
    ("dev", {"fineTuneEpochs": -1}),
    ("dev", {"numClasses": 1}),
    ("dev", {"experiment": "Dev"}),
    ("dev", {"experiment": "dev-runs", "tensorboard": True}),
    ("dev", {"registerModel": True, "modelDisplayName": "x" * 200}),
    ("dev", {"registerModel": True, "modelVersionAliases": ["Bad Alias"]}),
    ("dev", {"modelVersionAliases": "candidate"}),
    ("local", {"registerModel": True}),
    ("dev", {"trainerDir": "/abs/trainer"}),
    ("dev", {"trainerDir": "../elsewhere"}),
    ("dev", {"trainerDir": "no-such-dir"}),
    ("dev", {"trainerDir": "docs"}),
    ("dev", {"trainerCommand": "python -m mytrainer.task"}),
    ("dev", {"trainerCommand": ["python", {"m": 1}]}),
    ("dev", {"trainerArgs": ["--data-dir", "{data_dir"]}),
    ("dev", {"trainerArgs": ["--data-dir", "{data_dir:>10}"]}),
    ("dev", {"trainerArgs": ["--data-dir", f"{ROOT}/data"]}),
    ("dev", {"trainerArgs": ["--data-dir", "{data_folder}"]}),
    ("dev", {"trainerArgs": ["--classes", "{num_classes}"]}),
    ("dev", {"trainerArgs": ["--minutes", "{checkpoint_minutes}"]}),
    ("dev", {"trainerArgs": ["--data", "{data_dir}"], "dataSource": "none"}),
    ("housing", {"dataSource": "synthetic"}),
    ("dev", {"tuning": "grid please"}),
    ("dev", {"trainWithBest": True}),
    ("dev", {"batchPrediction": "gs://b/images"}),
    ("dev", {"batchPrediction": {"images": "gs://b/i", "colour": "red"}}),
    ("dev", {"batchPrediction": {"machineType": "n1-standard-4"}}),
    ("dev", {"batchPrediction": {"images": "gs://b/i", "fallbacks": "europe-west4"}}),
    ("dev", {"batchPrediction": {"images": "gs://b/i", "fallbacks": ["europe-west4"]}}),
    ("dev", {"batchPrediction": {"images": "gs://b/i", "maxReplicaCount": 0}}),
    ("dev", {"batchPrediction": {"images": "gs://b/i", "machineType": "n1-standrd-4"}}),
    ("dev", {"reservationAffinity": {"type": "SPECIFIC_RESERVATION"}}),
    ("dev", {"fallbacks": [{"schedulingStrategy": "STANDARD", "maxHourlyUsd": -1}]}),
    ("dev", {"maxHourlyUsd": "cheap"}),
    ("dev", {"allowUnpricedShapes": "maybe"}),
    ("dev", {"batchPrediction": {"machineType": "n1-standard-4", "images": ""}}),
    ("dev", {"endpoint": {"machineType": "n1-standard-2"}}),  # needs registerModel
    ("prod", {"endpoint": {"replicas": 2}}),
    ("prod", {"endpoint": {"minReplicas": 0, "spot": "yes"}}),
    ("prod", {"endpoint": {"minReplicas": 3, "maxReplicas": 2}}),
    ("dev", {"=epochs": 3}),
    ("dev", {"=vertex-trainin:epochs": 3}),
    (
        "dev",
        {"tuning": {**TUNING, "parameters": {"learningRate": {"values": [0.1, 0.01]}}}, "trainerArgs": []},
    ),
    (
        "dev",
        {
            "tuning": {**TUNING, "parameters": {"learningRate": {"values": [0.1, 0.01]}}},
            "trainerArgs": ["--learning-rate", "{learning_rate}", "{checkpoint_dir}"],
        },
    ),
]


def _values(stack: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The stack's values with the overrides (`=name`: a key name as written, namespace included)."""
    values = stack_values(stack)
    for key, value in overrides.items():
        name = key[1:] if key.startswith("=") else f"{NS}:{key}"
        values.pop(name, None)
        if value is not None:
            values[name] = value
    return values


def _errors(stack: str, values: dict[str, Any]) -> tuple[ConfigError, ...]:
    try:
        load_config(values, stack)
    except ConfigError as error:
        return problems(error)
    return ()


def commands(fix: str) -> Iterator[str]:
    """Each `pulumi config ...` command of a fix (backticked; `a && b` is two)."""
    for quoted in re.findall(r"`([^`]*)`", fix):
        for part in quoted.split(" && "):
            if part.startswith("pulumi config"):
                yield part


def alternatives(fix: str) -> list[list[str]]:
    """The commands of each way a fix offers ("... or ..." outside the commands), in order."""
    ways: list[list[str]] = [[]]
    for piece in re.split(r"(`[^`]*`)", fix):
        if piece.startswith("`"):
            ways[-1] += list(commands(piece))
        elif re.search(r"\bor\b", piece):
            ways.append([])
    return [way for way in ways if way]


def _parse(command: str) -> tuple[str, str, bool, str | None]:
    """(verb, key, path, value) of a `pulumi config set|rm` command as its flags parse."""
    words = shlex.split(command)
    assert words[:2] == ["pulumi", "config"] and words[2] in ("set", "rm"), command
    verb, rest, flags, positional = words[2], words[3:], {}, []
    ended = False
    while rest:
        word = rest.pop(0)
        if not ended and word == "--":
            ended = True
        elif not ended and word == "--stack":
            flags["stack"] = rest.pop(0)
        elif not ended and word == "--path":
            flags["path"] = True
        else:
            assert ended or not word.startswith("-"), f"{word!r} would be read as a flag: {command}"
            positional.append(word)
    assert "stack" in flags, f"no --stack: {command}"
    key = positional[0]
    value = positional[1] if len(positional) > 1 else None
    assert (verb == "rm") == (value is None) and len(positional) <= 2, command
    return verb, key, bool(flags.get("path")), value, flags["stack"]  # type: ignore[return-value]


def _path_value(value: str) -> object:
    if value in ("true", "false"):
        return value == "true"
    return int(value) if re.fullmatch(r"-?[0-9]+", value) else value


def _set_path(values: dict[str, Any], key: str, value: object) -> None:
    """`pulumi config set --path`: `ns:a.b[0].c` into maps and lists, made as needed."""
    namespace, _, path = key.partition(":")
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    name = f"{namespace}:{parts[0]}"
    holder: Any = values
    slot: Any = name
    for part in parts[1:]:
        index = int(part[1:-1]) if part.startswith("[") else part
        current = (
            holder[slot]
            if (isinstance(holder, dict) and slot in holder) or isinstance(holder, list)
            else None
        )
        if current is None:
            current = [] if isinstance(index, int) else {}
            holder[slot] = current
        assert isinstance(current, list) == isinstance(index, int), f"{key}: a path into a {type(current)}"
        if isinstance(index, int):
            while len(current) <= index:
                current.append(None)
        holder, slot = current, index
    holder[slot] = value


def _remove_path(values: dict[str, Any], key: str) -> None:
    namespace, _, path = key.partition(":")
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    holder: Any = values.get(f"{namespace}:{parts[0]}")
    for part in parts[1:-1]:
        holder = holder[int(part[1:-1])] if part.startswith("[") else holder[part]
    last = parts[-1]
    del holder[int(last[1:-1]) if last.startswith("[") else last]


def apply(values: dict[str, Any], command: str, stack: str) -> None:
    verb, key, path, value, named = _parse(command)
    assert named == stack, f"{command} names stack {named}, not {stack}"
    assert key.startswith(f"{NS}:"), command
    if verb == "rm" and path:
        _remove_path(values, key)
    elif verb == "rm":
        values.pop(key, None)
    elif path:
        _set_path(values, key, _path_value(value))
    else:
        values[key] = value


def check_shell(command: str) -> None:
    """Parses as shell, no word's shell syntax (globs such as [0], operators, $) left unquoted, and its
    words quoted again (shlex.join) parse to the same words; a placeholder a user fills in
    (<your-project-id>) is the only unquoted word with shell syntax in it."""
    words = shlex.split(command)
    assert shlex.split(shlex.join(words)) == words
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "", command)
    bare = " ".join(w for w in bare.split() if not PLACEHOLDER.match(w))
    assert not re.search(r"[][*?;&|()<>$`\\!{}~]", bare), f"unquoted shell syntax in {command!r}"


def top(key: str) -> str:
    return key.split(".", 1)[0].split("[", 1)[0]


@pytest.mark.parametrize(("stack", "overrides"), CASES, ids=[f"{s}-{'-'.join(o)}" for s, o in CASES])
def test_every_fix_command_runs_as_printed(stack: str, overrides: dict[str, Any]) -> None:
    values = _values(stack, overrides)
    found = _errors(stack, values)
    assert found, f"{overrides} is not refused"
    for error in found:
        for command in commands(error.fix):
            check_shell(command)
            _parse(command)
        for way in alternatives(error.fix):
            if any(PLACEHOLDER.match(w) for c in way for w in shlex.split(c)):
                continue
            fixed = copy.deepcopy(values)
            for command in way:
                apply(fixed, command, stack)
            left = [p for p in _errors(stack, fixed) if _touches(p, way)]
            assert not left, f"{error}\nafter {way}: {[str(p) for p in left]}"


def _touches(problem: ConfigError, way: list[str]) -> bool:
    """A problem left at what the commands set or removed: a key, or a study entry they name."""
    written = {_parse(c)[1] for c in way if _parse(c)[0] == "set"}
    for command in way:
        verb, key = _parse(command)[:2]
        if verb == "rm" and any(w.startswith(f"{key}.") or w.startswith(f"{key}[") for w in written):
            continue  # cleared to be written entry by entry: judged by the entries
        path = key.partition(":")[2]
        if top(path) not in {top(k) for k in problem.keys}:
            continue
        leaf = re.split(r"[.\[]", path)[1] if "." in path or "[" in path else None
        if leaf is None or leaf in str(problem):
            return True
    return False


def test_a_list_given_as_one_string_is_fixed_element_by_element() -> None:
    (error,) = _errors("dev", _values("dev", {"trainerCommand": "python -m mytrainer.task"}))
    assert list(commands(error.fix)) == [
        "pulumi config rm --stack dev vertex-training:trainerCommand",
        "pulumi config set --stack dev --path 'vertex-training:trainerCommand[0]' python",
        "pulumi config set --stack dev --path 'vertex-training:trainerCommand[1]' -- -m",
        "pulumi config set --stack dev --path 'vertex-training:trainerCommand[2]' mytrainer.task",
    ]


def test_budget_usd_means_budget_amount_and_a_refused_value_gets_no_command_with_it() -> None:
    (error,) = _errors("dev", _values("dev", {"budgetUsd": -5}))
    assert "did you mean vertex-training:budgetAmount?" in error.fix and "budgetEmails" not in error.fix
    assert "-5" not in " ".join(commands(error.fix)), error.fix
    (error,) = _errors("dev", _values("dev", {"budgetUsd": 30}))
    assert "`pulumi config set --stack dev vertex-training:budgetAmount 30`" in error.fix


@pytest.fixture
def own_trainer_dir() -> Iterator[Path]:
    """A trainer directory inside the project (.local/ is git-ignored) with a requirements.txt only."""
    directory = ROOT / ".local" / f"fix-commands-{os.getpid()}"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "requirements.txt").write_text("")
    yield directory
    shutil.rmtree(directory)


def _extra_errors(trainer_dir: Path, tmp: Path) -> list[ConfigError]:
    """The errors no stack value override reaches: a bad stack name, a missing or broken stack file, a
    trainer directory without an ENTRYPOINT or with a shell-form one."""
    found: list[ConfigError] = []
    relative = str(trainer_dir.relative_to(ROOT))
    attempts = [
        lambda: load_config(stack_values("local"), "Bad_Name"),
        lambda: load_stack("nosuchstack", ROOT),
        lambda: load_config(_values("housing", {"trainerDir": relative, "trainerCommand": None}), "housing"),
    ]
    (tmp / "Pulumi.broken.yaml").write_text("config: [unclosed\n")
    attempts.append(lambda: load_stack("broken", tmp))

    def shell_form() -> None:
        (trainer_dir / "Dockerfile").write_text("FROM python:3.12\nENTRYPOINT python -m mytrainer.task\n")
        load_config(
            _values("housing", {"trainerDir": relative, "trainerCommand": None, "trainerArgs": ["--x"]}),
            "housing",
        )

    attempts.append(shell_form)
    for attempt in attempts:
        with pytest.raises(ConfigError) as raised:
            attempt()
        found += problems(raised.value)
    return found


def test_the_errors_outside_stack_values_print_commands_that_parse(
    own_trainer_dir: Path, tmp_path: Path
) -> None:
    for error in _extra_errors(own_trainer_dir, tmp_path):
        for command in commands(error.fix):
            check_shell(command)
            _parse(command)


def test_the_cases_reach_every_place_that_makes_a_config_error(
    monkeypatch: pytest.MonkeyPatch, own_trainer_dir: Path, tmp_path: Path
) -> None:
    reached: set[tuple[str, int]] = set()
    original = ConfigError.__init__

    def recording(self: ConfigError, *args: Any, **kwargs: Any) -> None:
        frame = sys._getframe(1)
        reached.add((Path(frame.f_code.co_filename).name, frame.f_lineno))
        original(self, *args, **kwargs)

    monkeypatch.setattr(ConfigError, "__init__", recording)
    for stack, overrides in CASES:
        _errors(stack, _values(stack, overrides))
    _extra_errors(own_trainer_dir, tmp_path)
    spans = {}
    for path in CONFIG_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef) or (path.name, function.name) in REWRAPS:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ConfigError":
                    spans[(path.name, node.lineno)] = range(node.lineno, (node.end_lineno or node.lineno) + 1)
    missed = [
        site
        for site, lines in spans.items()
        if not any(name == site[0] and line in lines for name, line in reached)
    ]
    assert not missed, f"no case reaches {sorted(missed)}"
