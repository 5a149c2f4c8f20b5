"""The TFRecord schema, shared by the writer (create_tfrecords) and the reader (data)."""

import tensorflow as tf

# Made without TensorFlow, in the conversion's worker processes; the same bytes as tf.train.Example's.
from trainer.example_proto import serialize

__all__ = ["FEATURES", "parse", "serialize"]

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
}


def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
    return tf.io.parse_single_example(serialized, FEATURES)
