"""metrics.json's figures from the exported model's predictions: pure functions, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from trainer.export import classification_metrics


def test_binary_keeps_accuracy_at_one_half_and_binary_cross_entropy() -> None:
    probs = np.array([[0.9], [0.2], [0.6], [0.4]])
    labels = np.array([1.0, 0.0, 0.0, 1.0])
    m = classification_metrics(probs, labels, ["cats", "dogs"])
    p = probs[:, 0]
    bce = -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    assert m["val_accuracy"] == 0.5 and m["val_loss"] == pytest.approx(bce)
    assert m["confusion_matrix"] == [[1, 1], [1, 1]]
    assert m["per_class_accuracy"] == {"cats": 0.5, "dogs": 0.5}


def test_n_classes_confusion_matrix_rows_are_true_classes() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    labels = np.array([0, 1, 2, 1, 2])
    m = classification_metrics(probs, labels, ["a", "b", "c"])
    assert m["confusion_matrix"] == [[1, 0, 0], [1, 1, 0], [0, 0, 2]]  # one "b" predicted as "a"
    assert m["per_class_accuracy"] == {"a": 1.0, "b": 0.5, "c": 1.0}
    assert m["val_accuracy"] == pytest.approx(0.8)
    assert m["val_loss"] == pytest.approx(-np.mean(np.log([0.7, 0.8, 0.8, 0.3, 0.6])))


def test_a_class_without_validation_images_has_no_accuracy() -> None:
    m = classification_metrics(np.array([[0.9, 0.05, 0.05]]), np.array([0]), ["a", "b", "c"])
    assert m["per_class_accuracy"] == {"a": 1.0, "b": None, "c": None}


def test_a_diverged_run_writes_valid_json(tmp_path) -> None:
    """NaN/inf (a loss that diverged under mixed precision) become null: strict JSON readers accept it."""
    import json

    from trainer.export import METRICS_FILE, write_metrics

    write_metrics(str(tmp_path), {"val_loss": float("nan"), "history": {"loss": [0.5, float("inf")]}})
    text = (tmp_path / METRICS_FILE).read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"val_loss": None, "history": {"loss": [0.5, None]}}
