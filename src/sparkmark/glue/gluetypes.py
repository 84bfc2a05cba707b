"""``awsglue.gluetypes``: Glue's own type classes, as scripts import them to build or
inspect a DynamicFrame's schema (``frame.schema()``).

A type's ``typeName()`` is its class name without ``Type``, in lower case (``int`` for
``IntegerType``). ``ChoiceType`` holds the types a field takes across records. Types
carry a ``properties`` dict. ``to_spark``/``from_spark`` translate to and from Spark's
types, which sparkmark's frames hold underneath (a choice is Spark's VARIANT).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import types as T

from ..spark_lines import HAS_VARIANT, VariantType
from .paths import quote


class DataType:
    def __init__(self, properties: Mapping[str, Any] | None = None):
        self.properties = dict(properties or {})

    @classmethod
    def typeName(cls) -> str:
        return cls.__name__.removesuffix("Type").lower()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {"dataType": self.typeName(), "properties": self.properties}


class AtomicType(DataType):
    pass


class BinaryType(AtomicType):
    pass


class BooleanType(AtomicType):
    pass


class ByteType(AtomicType):
    pass


class DateType(AtomicType):
    pass


class DoubleType(AtomicType):
    pass


class FloatType(AtomicType):
    pass


class IntegerType(AtomicType):
    @classmethod
    def typeName(cls) -> str:
        return "int"


class LongType(AtomicType):
    pass


class NullType(AtomicType):
    pass


class ShortType(AtomicType):
    pass


class StringType(AtomicType):
    pass


class TimestampType(AtomicType):
    pass


class TimestampNTZType(AtomicType):
    """A timestamp without a time zone (Glue 4's ``timestamp_ntz``)."""

    @classmethod
    def typeName(cls) -> str:
        return "timestamp_ntz"


class UnknownType(AtomicType):
    pass


class DecimalType(AtomicType):
    def __init__(self, precision: int = 10, scale: int = 2, properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.precision, self.scale = precision, scale

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale}, {self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "precision": self.precision, "scale": self.scale}


class EnumType(AtomicType):
    def __init__(self, options: list[str], properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.options = list(options)

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "options": self.options}


class ArrayType(DataType):
    def __init__(self, elementType: DataType | None = None, properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.elementType = elementType if elementType is not None else UnknownType()

    def __repr__(self) -> str:
        return f"ArrayType({self.elementType!r}, {self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "elementType": self.elementType.jsonValue()}


class MapType(DataType):
    def __init__(self, valueType: DataType | None = None, properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.valueType = valueType if valueType is not None else UnknownType()

    def __repr__(self) -> str:
        return f"MapType({self.valueType!r}, {self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "valueType": self.valueType.jsonValue()}


class SetType(DataType):
    """A set of values of one type (Glue's own; Spark holds it as an array)."""

    def __init__(self, elementType: DataType | None = None, properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.elementType = elementType if elementType is not None else UnknownType()

    def __repr__(self) -> str:
        return f"SetType({self.elementType!r}, {self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "elementType": self.elementType.jsonValue()}


class EntityType(DataType):
    """Declared by Glue's library and refused there too: no type of Glue's is an entity."""

    def __init__(
        self, entity: Any = None, base_type: Any = None, properties: Mapping[str, Any] | None = None
    ):
        raise NotImplementedError("EntityType is not supported (AWS Glue's library refuses it as well)")


class ChoiceType(DataType):
    """The types one field takes across records, keyed by type name."""

    def __init__(self, choices: list[DataType] | None = None, properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.choices: dict[str, DataType] = {}
        for choice in choices or ():
            self.add(choice)

    def add(self, choice: DataType) -> None:
        if choice.typeName() in self.choices:
            raise ValueError(f"the choice already holds a {choice.typeName()}")
        self.choices[choice.typeName()] = choice

    def __repr__(self) -> str:
        held = ",".join(repr(self.choices[k]) for k in sorted(self.choices))
        return f"ChoiceType([{held}], {self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "choices": [c.jsonValue() for c in self.choices.values()]}


class Field:
    def __init__(self, name: str, dataType: DataType, properties: Mapping[str, Any] | None = None):
        if not isinstance(dataType, DataType):
            raise TypeError(f"a Field's dataType is a gluetypes DataType, got {type(dataType).__name__}")
        self.name, self.dataType, self.properties = name, dataType, dict(properties or {})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Field) and (self.name, self.dataType) == (other.name, other.dataType)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Field({self.name}, {self.dataType!r}, {self.properties})"

    def jsonValue(self) -> dict[str, Any]:
        return {"name": self.name, "container": self.dataType.jsonValue(), "properties": self.properties}


class StructType(DataType):
    def __init__(self, fields: list[Field] | None = None, properties: Mapping[str, Any] | None = None):
        super().__init__(properties)
        self.fields: list[Field] = []
        self.field_map: dict[str, Field] = {}
        for field in fields or ():
            self.add(field)

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def __repr__(self) -> str:
        return f"StructType([{','.join(repr(f) for f in self.fields)}], {self.properties})"

    def add(self, field: Field) -> None:
        if not isinstance(field, Field):
            raise TypeError("StructType.add takes a Field")
        self.fields.append(field)
        self.field_map[field.name] = field

    def hasField(self, field: Field | str) -> bool:
        return (field.name if isinstance(field, Field) else field) in self.field_map

    def getField(self, field: Field | str) -> Field:
        return self.field_map[field.name if isinstance(field, Field) else field]

    def jsonValue(self) -> dict[str, Any]:
        return {**super().jsonValue(), "fields": [f.jsonValue() for f in self.fields]}


def mergeDataTypes(s1: DataType, s2: DataType) -> DataType:
    """The type that holds values of both: an unknown or null side gives the other; two
    structs merge field by field (a field of one side only is kept), arrays, sets and
    maps by their elements; two different types become a choice of both (choices
    merge, the types they share merged in turn). Properties are not merged."""
    if isinstance(s1, (UnknownType, NullType)):
        return s2
    if isinstance(s2, (UnknownType, NullType)):
        return s1
    if isinstance(s1, ChoiceType) or isinstance(s2, ChoiceType) or type(s1) is not type(s2):
        held = dict(s1.choices) if isinstance(s1, ChoiceType) else {s1.typeName(): s1}
        for other in s2.choices.values() if isinstance(s2, ChoiceType) else [s2]:
            name = other.typeName()
            held[name] = mergeDataTypes(held[name], other) if name in held else other
        return ChoiceType(list(held.values()), s1.properties)
    if isinstance(s1, StructType) and isinstance(s2, StructType):
        fields = [
            Field(f.name, mergeDataTypes(f.dataType, s2.getField(f).dataType), f.properties)
            if s2.hasField(f)
            else f
            for f in s1
        ]
        fields += [f for f in s2 if not s1.hasField(f)]
        return StructType(fields, s1.properties)
    if isinstance(s1, (ArrayType, SetType)) and isinstance(s2, (ArrayType, SetType)):
        return type(s1)(mergeDataTypes(s1.elementType, s2.elementType), s1.properties)
    if isinstance(s1, MapType) and isinstance(s2, MapType):
        return MapType(mergeDataTypes(s1.valueType, s2.valueType), s1.properties)
    return s1


_FROM_SPARK: dict[type, type[DataType]] = {
    T.BinaryType: BinaryType,
    T.BooleanType: BooleanType,
    T.ByteType: ByteType,
    T.DateType: DateType,
    T.DoubleType: DoubleType,
    T.FloatType: FloatType,
    T.IntegerType: IntegerType,
    T.LongType: LongType,
    T.NullType: NullType,
    T.ShortType: ShortType,
    T.StringType: StringType,
    T.TimestampType: TimestampType,
    T.TimestampNTZType: TimestampType,
}
_BY_NAME: dict[str, type[DataType]] = {t.typeName(): t for t in _FROM_SPARK.values()}


def from_spark(
    data_type: T.DataType, held: Mapping[str, list[str]] | None = None, parts: tuple[str, ...] = ()
) -> DataType:
    """Glue's type for a Spark type. ``held`` maps the quoted paths of choice fields
    (``paths.quote``) to the Glue type names their records hold; a choice without an
    entry is UnknownType."""
    if isinstance(data_type, T.StructType):
        return StructType(
            [Field(f.name, from_spark(f.dataType, held, (*parts, f.name))) for f in data_type.fields]
        )
    if isinstance(data_type, T.ArrayType):
        return ArrayType(from_spark(data_type.elementType, held, parts))
    if isinstance(data_type, T.MapType):
        return MapType(from_spark(data_type.valueType, held, parts))
    if isinstance(data_type, T.DecimalType):
        return DecimalType(data_type.precision, data_type.scale)
    if isinstance(data_type, VariantType):
        names = (held or {}).get(quote(list(parts)))
        if not names:
            return UnknownType()
        return ChoiceType([_BY_NAME.get(n, UnknownType)() for n in sorted(set(names))])
    return _FROM_SPARK.get(type(data_type), UnknownType)()


def to_spark(data_type: DataType) -> T.DataType:
    """Spark's type for a Glue type (a choice becomes VARIANT)."""
    if isinstance(data_type, StructType):
        return T.StructType([T.StructField(f.name, to_spark(f.dataType)) for f in data_type.fields])
    if isinstance(data_type, (ArrayType, SetType)):
        return T.ArrayType(to_spark(data_type.elementType))
    if isinstance(data_type, TimestampNTZType):
        return T.TimestampNTZType()
    if isinstance(data_type, MapType):
        return T.MapType(T.StringType(), to_spark(data_type.valueType))
    if isinstance(data_type, DecimalType):
        return T.DecimalType(data_type.precision, data_type.scale)
    if isinstance(data_type, ChoiceType):
        return VariantType() if HAS_VARIANT else T.StringType()
    if isinstance(data_type, EnumType):
        return T.StringType()
    for spark_type, glue_type in _FROM_SPARK.items():
        if type(data_type) is glue_type:
            return spark_type()
    return T.StringType()  # UnknownType


def tree_lines(schema: StructType) -> list[str]:
    """``printSchema``'s text for a Glue schema, as Glue prints it: ``root``, then a line
    per field with Glue's type name (``long``, ``int``, not Spark's ``bigint``,
    ``integer``); a struct's fields, an array's ``element`` and the types a choice holds
    one level further in. (A map's values are shown as its ``value``: Glue's own layout
    for maps is not in its public material.)"""
    lines = ["root"]

    def pad(depth: int) -> str:
        return "|    " * depth + "|-- "

    def inside(data_type: DataType, depth: int) -> None:
        if isinstance(data_type, StructType):
            for field in data_type.fields:
                lines.append(f"{pad(depth)}{field.name}: {field.dataType.typeName()}")
                inside(field.dataType, depth + 1)
        elif isinstance(data_type, (ArrayType, SetType)):
            lines.append(f"{pad(depth)}element: {data_type.elementType.typeName()}")
            inside(data_type.elementType, depth + 1)
        elif isinstance(data_type, MapType):
            lines.append(f"{pad(depth)}value: {data_type.valueType.typeName()}")
            inside(data_type.valueType, depth + 1)
        elif isinstance(data_type, ChoiceType):
            for name, held in data_type.choices.items():
                lines.append(f"{pad(depth)}{name}")
                inside(held, depth + 1)

    inside(schema, 0)
    return lines
