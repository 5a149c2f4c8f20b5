"""The TFRecord schema, shared by the writer (create_tfrecords) and the reader (data)."""

import tensorflow as tf

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
}


def serialize(jpeg: bytes, label: int, height: int, width: int) -> bytes:
    def int64(v: int) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))

    example = tf.train.Example(
        features=tf.train.Features(
            feature={
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpeg])),
                "label": int64(label),
                "height": int64(height),
                "width": int64(width),
            }
        )
    )
    # Deterministic: map order otherwise varies by process, and shards would differ byte-wise between runs.
    return example.SerializeToString(deterministic=True)


def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
    return tf.io.parse_single_example(serialized, FEATURES)
