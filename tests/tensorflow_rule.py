"""Which tests train, by rule rather than by hand, and a check at run time that no other test does.

A test trains when some process of its, its own or one it starts at any depth (a trainer, a local job that
runs one, an example trainer, TFRecords written in-process), imports TensorFlow. The collection hook marks
by rule every test that does:
- every test under tests/trainer/;
- every test that uses a training fixture (`TRAINING_FIXTURES`, directly or through another fixture);
- every test marked `slow` by hand (the older name of the same thing).
Marked tests get the `tensorflow` mark and an xdist group: one per shared trained model (`trained`,
`interrupted_runs`, `tiny_data`), one per module for the other tests that train (their module-scoped fixtures
built once) and for a module whose fixture trains again from a shared model (it runs on whichever worker is
free). `trained` and `interrupted_runs` are built once per session whichever worker asks first, and read by
the others (tests/session_builds.py). Under xdist the groups run first, in that order (the Makefile keeps
xdist from reordering them by size).

At run time every Python process the session starts loads tests/tensorflow_guard_site/sitecustomize.py
(first on PYTHONPATH; a process whose environment drops PYTHONPATH is not seen), which records an import of
TensorFlow with the test it was started under; a test without the mark that is named by such a record fails
at teardown. Imports in the pytest process itself do not count: a full run's collection imports TensorFlow
anyway (test modules import trainer modules), so tests/stack's in-process checks of the trainer's CLI cost
nothing there, and `-m "not tensorflow"` (which does not collect tests/trainer/) must judge them alike. The
training happens in started processes, and each of those is seen. tests/test_tensorflow_rule.py shows both
halves work.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.tensorflow_guard_site import sitecustomize as guard

MARK = "tensorflow"
GROUP = "tensorflow"
TRAINING_DIRS = ("tests/trainer/",)
# The session's shared trained models (and data), longest to build first: each one's tests form one group.
SHARED_MODELS = ("trained", "interrupted_runs", "tiny_data")
TRAINING_FIXTURES = frozenset(SHARED_MODELS)
HAND_MARKS = ("slow",)
GUARD_SITE = Path(guard.__file__).parent
# Two workers share two cores: one thread per TensorFlow op (TensorFlow reads these when it starts).
TF_THREADS = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "2"}
_records = pytest.StashKey[Path]()
_seen = pytest.StashKey[set[str]]()


def training_reason(path: str, fixturenames: Iterable[str], marks: Iterable[str]) -> str | None:
    """Why a test at `path` (relative to the project root, with /) trains, or None."""
    if path.startswith(TRAINING_DIRS):
        return f"it is under {path.split('/')[0]}/{path.split('/')[1]}/"
    fixtures = sorted(TRAINING_FIXTURES.intersection(fixturenames))
    if fixtures:
        return f"it uses the training fixture {fixtures[0]}"
    hand = [m for m in marks if m in (MARK, *HAND_MARKS)]
    if hand:
        return f"it is marked {hand[0]}"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARK}: trains with TensorFlow (marked by rule, tests/tensorflow_rule.py)"
    )
    records = Path(tempfile.mkdtemp(prefix="tf-records-"))
    config.stash[_records] = records
    config.stash[_seen] = set()
    os.environ[guard.RECORDS_ENV] = str(records)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(GUARD_SITE) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(GUARD_SITE), *filter(None, paths)])
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        for name, value in TF_THREADS.items():
            os.environ.setdefault(name, value)


def pytest_unconfigure(config: pytest.Config) -> None:
    records = config.stash.get(_records, None)
    if records is not None:
        shutil.rmtree(records, ignore_errors=True)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m "not tensorflow"` does not import tests/trainer/ (its modules import TensorFlow: seconds)."""
    if config.getoption("markexpr", "") != f"not {MARK}":
        return None
    try:
        relative = collection_path.relative_to(config.rootpath).as_posix() + "/"
    except ValueError:
        return None
    return True if relative.startswith(TRAINING_DIRS) else None


def group_of(path: str, fixturenames: Iterable[str], trains_again: bool = False) -> str:
    """The xdist group of a test that trains: the shared trained model it uses, else its module (whose
    module-scoped fixtures are then built once). A module whose own fixture trains again from a shared model
    (`trains_again`) is a group of its own, so that another worker runs it while the shared model's tests go
    on (the shared model itself is built once per session whatever the worker: tests/conftest.py)."""
    names = set(fixturenames)
    shared = [name for name in SHARED_MODELS if name in names]
    return f"{GROUP}-{shared[0]}" if shared and not trains_again else f"{GROUP}-{path.split('::')[0]}"


def trains_again(item: pytest.Item) -> bool:
    """Whether a module-scoped fixture of the test starts from a shared model (and so trains once more)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d.scope == "module" and TRAINING_FIXTURES.intersection(d.argnames) for ds in defs for d in ds)


def _order(item: pytest.Item) -> int:
    """Longest first: the groups of the shared models, then the other tests that train, then those that
    train again from a shared model (it is built by then), then the rest."""
    if item.get_closest_marker(MARK) is None:
        return len(SHARED_MODELS) + 2
    if trains_again(item):
        return len(SHARED_MODELS) + 1
    names = set(getattr(item, "fixturenames", ()))
    return next((i for i, name in enumerate(SHARED_MODELS) if name in names), len(SHARED_MODELS))


def pytest_itemcollected(item: pytest.Item) -> None:
    """Marks as each test is collected: xdist's loadgroup reads the groups in its own
    pytest_collection_modifyitems, which may run before any other plugin's."""
    config = item.config
    path = item.path.relative_to(config.rootpath).as_posix()
    fixturenames = getattr(item, "fixturenames", ())
    if training_reason(path, fixturenames, [m.name for m in item.iter_markers()]):
        item.add_marker(MARK)
        if config.pluginmanager.hasplugin("xdist"):
            item.add_marker(pytest.mark.xdist_group(group_of(path, fixturenames, trains_again(item))))


def _name_group(item: pytest.Item) -> None:
    """What xdist 3.8's loadgroup does (xdist/remote.py: `item._nodeid = f"{nodeid}@{group}"`), which
    pytest 9 no longer reads (a node's id is `_id`, a NodeId): the controller groups by the id's suffix."""
    groups = sorted({str(m.args[0]) for m in item.iter_markers("xdist_group") if m.args})
    if not groups or "@" in item.nodeid:
        return
    named = f"{item.nodeid}@{'_'.join(groups)}"
    if hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(named)
    else:
        item._nodeid = named


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A pytest session a test starts inherits PYTEST_XDIST_WORKER: only xdist's own workers go on.
    if not os.environ.get("PYTEST_XDIST_WORKER") or not config.pluginmanager.hasplugin("xdist"):
        return
    # Each worker starts on a long group at once; the short tests fill in at the end.
    items.sort(key=_order)
    if getattr(config.option, "loadgroup", False):
        for item in items:
            _name_group(item)


def _test_of(record: dict) -> str:
    """The test id a record's process was started under ("" outside any test)."""
    return str(record.get("test", "")).rsplit(" (", 1)[0]


def unmarked_trainers(
    records: Path, seen: set[str], marked: set[str], session_pid: int | None = None
) -> list[tuple[str, list[str]]]:
    """(test, argv) of each new record whose process was started under a test without the mark; the
    session's own process (`session_pid`, default this one) is not a started one."""
    own = os.getpid() if session_pid is None else session_pid
    found = []
    for file in sorted(records.glob("*.json")):
        if file.name in seen:
            continue
        seen.add(file.name)
        try:
            record = json.loads(file.read_text())
        except (OSError, ValueError):
            continue
        test = _test_of(record)
        if test and test not in marked and record.get("pid") != own:
            found.append((test, [str(a) for a in record.get("argv", [])]))
    return found


def _marked(session: pytest.Session) -> set[str]:
    return {item.nodeid for item in session.items if item.get_closest_marker(MARK)}


def _message(found: list[tuple[str, list[str]]]) -> str:
    lines = [f"{test} trains (process {' '.join(argv)[:300]} imported TensorFlow)" for test, argv in found]
    return (
        "\n".join(lines)
        + f"\nwithout the `{MARK}` mark: use a training fixture or put it under tests/trainer/ "
        "(tests/tensorflow_rule.py), or mark it @pytest.mark.tensorflow."
    )


@pytest.fixture(autouse=True)
def _trains_only_when_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    config = request.config
    if _records not in config.stash:
        return
    found = unmarked_trainers(config.stash[_records], config.stash[_seen], _marked(request.session))
    if found:
        pytest.fail(_message(found), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Processes that imported TensorFlow after their test ended are still counted."""
    config = session.config
    if _records not in config.stash or not session.items:
        return
    found = unmarked_trainers(config.stash[_records], config.stash[_seen], _marked(session))
    if found:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(_message(found), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
