"""TensorFlow's `tf.train.Example` as protobuf message classes, for reading TFRecord files (tfrecords.py) with no
TensorFlow installed: the schema of TensorFlow's `example.proto` and `feature.proto` (Apache-2.0) declared as a
descriptor, from which protobuf makes the classes and does all the parsing.

    message BytesList { repeated bytes value = 1; }
    message FloatList { repeated float value = 1 [packed = true]; }
    message Int64List { repeated int64 value = 1 [packed = true]; }
    message Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
    message Features { map<string, Feature> feature = 1; }
    message Example { Features features = 1; }

The classes live in a pool of their own, so that another copy of the schema (TensorFlow's, the tfrecord package's)
in the same process does not clash with them.
"""

from __future__ import annotations

import functools
from typing import Any

PACKAGE = "tensorflow"


def _file() -> Any:
    from google.protobuf import descriptor_pb2

    field = descriptor_pb2.FieldDescriptorProto
    repeated, optional = field.LABEL_REPEATED, field.LABEL_OPTIONAL
    proto = descriptor_pb2.FileDescriptorProto(name="fastdata/tf_example.proto", package=PACKAGE, syntax="proto3")

    def message(name: str, *fields: tuple[str, int, int, int, str | None]) -> Any:
        m = proto.message_type.add(name=name)
        for fname, number, label, kind, type_name in fields:
            f = m.field.add(name=fname, number=number, label=label, type=kind)
            if type_name is not None:
                f.type_name = type_name
        return m

    packed = descriptor_pb2.FieldOptions(packed=True)
    message("BytesList", ("value", 1, repeated, field.TYPE_BYTES, None))
    message("FloatList", ("value", 1, repeated, field.TYPE_FLOAT, None)).field[0].options.CopyFrom(packed)
    message("Int64List", ("value", 1, repeated, field.TYPE_INT64, None)).field[0].options.CopyFrom(packed)
    feature = message("Feature", *[(name, number, optional, field.TYPE_MESSAGE, f".{PACKAGE}.{kind}")
                                   for number, (name, kind) in enumerate(
                                       [("bytes_list", "BytesList"), ("float_list", "FloatList"),
                                        ("int64_list", "Int64List")], start=1)])
    feature.oneof_decl.add(name="kind")
    for f in feature.field:
        f.oneof_index = 0
    features = message("Features", ("feature", 1, repeated, field.TYPE_MESSAGE, f".{PACKAGE}.Features.FeatureEntry"))
    entry = features.nested_type.add(name="FeatureEntry")
    entry.field.add(name="key", number=1, label=optional, type=field.TYPE_STRING)
    entry.field.add(name="value", number=2, label=optional, type=field.TYPE_MESSAGE, type_name=f".{PACKAGE}.Feature")
    entry.options.map_entry = True
    message("Example", ("features", 1, optional, field.TYPE_MESSAGE, f".{PACKAGE}.Features"))
    return proto


@functools.cache
def example_class() -> Any:
    """The message class of tf.train.Example."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.Example"))
