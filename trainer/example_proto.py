"""A record's bytes without TensorFlow: the protobuf wire encoding of the trainer's `tf.train.Example`.

The conversion's worker processes make each record (they import no TensorFlow: trainer/conversion.py), so
the main process only writes bytes. The encoding is the one `SerializeToString(deterministic=True)` gives
(map entries in key order), byte for byte: tests/trainer/test_images.py compares them. Wire format:
protobuf's "Encoding" guide (varints, length-delimited fields, packed repeated scalars; maps as repeated
key=1/value=2 entries); message layout: tensorflow/core/example/example.proto and feature.proto (Example
`features` = 1; Features `feature` = 1, map<string, Feature>; Feature `bytes_list` = 1, `int64_list` = 3;
BytesList/Int64List `value` = 1, int64 packed).
"""

from __future__ import annotations

_LEN = 2  # wire type of length-delimited fields
_INT64_MASK = (1 << 64) - 1  # a negative int64 is encoded as its 64-bit two's complement


def _varint(value: int) -> bytes:
    value &= _INT64_MASK
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, *parts: bytes) -> list[bytes]:
    """A length-delimited field as pieces (tag, length, payload): joined once, the image copied once."""
    return [_varint(number << 3 | _LEN), _varint(sum(map(len, parts))), *parts]


def _bytes_feature(value: bytes) -> list[bytes]:
    return _field(1, *_field(1, value))  # Feature.bytes_list { value }


def _int64_feature(value: int) -> list[bytes]:
    return _field(3, *_field(1, _varint(value)))  # Feature.int64_list { value (packed) }


def serialize(jpeg: bytes, label: int, height: int, width: int) -> bytes:
    """One record of the schema in trainer/records.py (`image`, `label`, `height`, `width`)."""
    features = {
        "image": _bytes_feature(jpeg),
        "label": _int64_feature(label),
        "height": _int64_feature(height),
        "width": _int64_feature(width),
    }
    entries = [
        piece
        for key in sorted(features)
        for piece in _field(1, *_field(1, key.encode()), *_field(2, *features[key]))
    ]
    return b"".join(_field(1, *entries))  # Example.features { feature: map entries }
