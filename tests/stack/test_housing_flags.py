"""examples/housing/ takes whole-number flags as a tuning study may send them ("2.0"), as docs advise."""

from __future__ import annotations

import argparse

import pytest

from tests.stack.conftest import ROOT


@pytest.fixture
def parse_args(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from housing.task import parse_args

    return parse_args


def test_a_whole_number_given_as_a_double_is_that_number(parse_args) -> None:
    args = parse_args(["--epochs", "2.0", "--batch-size=16.0", "--rows", "400"])
    assert (args.epochs, args.batch_size, args.rows) == (2, 16, 400)
    assert isinstance(args.epochs, int) and isinstance(args.batch_size, int)


def test_a_fraction_is_refused_naming_the_value(parse_args, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--epochs", "2.5"])
    assert "expected a whole number, got '2.5'" in capsys.readouterr().err
    from housing.task import whole_number

    with pytest.raises(argparse.ArgumentTypeError):
        whole_number("16.5")
