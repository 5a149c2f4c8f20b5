"""Three classes end to end on CPU: a folder of generated images -> TFRecords -> softmax model -> export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.trainer.helpers import SIZE, make_class_folder, make_folder_data

# Well above chance (1/3): the shared run trains from scratch for 3 + 1 epochs on 153 images, unseeded, and
# its fine-tuning epoch moves the batch-norm statistics; seen on this machine (2026-11-27): 0.77 to 1.0 (0.95
# after head epoch 2 and 0.77 after fine-tuning in the same run), so 0.9 failed now and then.
MIN_ACCURACY = 2 / 3


@pytest.mark.slow
def test_three_classes_train_export_and_report_per_class(trained: dict) -> None:
    import tensorflow as tf

    from trainer import data, export, model, phases

    assert trained["rc"] == 0, trained["log"][-3000:]
    assert "densenet121, 3 classes" in trained["log"]
    metrics = json.loads((trained["model_dir"] / "metrics.json").read_text())
    print(f"3-class val_accuracy={metrics['val_accuracy']:.4f} val_loss={metrics['val_loss']:.4f}")
    assert metrics["val_accuracy"] >= MIN_ACCURACY
    assert metrics["class_names"] == ["blue", "green", "red"]
    confusion = np.array(metrics["confusion_matrix"])
    assert confusion.shape == (3, 3) and confusion.sum() == metrics["valid_images"] == 39
    assert np.trace(confusion) / confusion.sum() == pytest.approx(metrics["val_accuracy"])
    per_class = confusion.diagonal() / confusion.sum(axis=1)
    assert list(metrics["per_class_accuracy"]) == ["blue", "green", "red"]
    np.testing.assert_allclose(list(metrics["per_class_accuracy"].values()), per_class)

    # The reloaded SavedModel returns [None, 3] probabilities equal to the trained Keras model's.
    images, labels = next(iter(data.valid_dataset(str(trained["data"]), SIZE, 64)))
    net = model.build(SIZE, None, num_classes=3)
    phases.load_done(net, str(trained["model_dir"].parent / "checkpoints" / metrics["run_id"]), "fine_tune")
    serve = tf.saved_model.load(str(trained["model_dir"])).signatures["serving_default"]
    served = serve(images=tf.cast(images, tf.float32))[export.SIGNATURE_OUTPUT].numpy()
    assert served.shape == (len(images), 3)
    np.testing.assert_allclose(served, net(images, training=False).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(served.sum(axis=1), 1.0, rtol=1e-5)
    assert np.mean(served.argmax(axis=1) == labels.numpy()) == pytest.approx(metrics["val_accuracy"])


def test_num_classes_contradicting_the_data_fails_before_training(tmp_path: Path) -> None:
    from trainer import task

    make_class_folder(tmp_path / "images", ["a", "b", "c"], per_class=3)
    make_folder_data(tmp_path / "images", tmp_path / "d")
    with pytest.raises(SystemExit) as exc:
        task.main(
            ["--data-dir", str(tmp_path / "d"), "--model-dir", str(tmp_path / "m"), "--num-classes", "5"]
        )
    assert "--num-classes 5 contradicts" in str(exc.value) and "Pass --num-classes 3" in str(exc.value)
    assert not (tmp_path / "m").exists()
