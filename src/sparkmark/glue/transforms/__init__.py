"""``awsglue.transforms``: Glue's transform classes, each a thin ``apply`` over DynamicFrame."""

from __future__ import annotations

from typing import Any

from ..dynamicframe import DynamicFrame, DynamicFrameCollection

__all__ = [
    "ALL_TRANSFORMS",
    "ApplyMapping",
    "Coalesce",
    "DropFields",
    "DropNullFields",
    "ErrorsAsDynamicFrame",
    "Filter",
    "FlatMap",
    "GlueTransform",
    "Join",
    "Map",
    "MapToCollection",
    "Relationalize",
    "RenameField",
    "Repartition",
    "ResolveChoice",
    "SelectFields",
    "SelectFromCollection",
    "Spigot",
    "SplitFields",
    "SplitRows",
    "Unbox",
    "Union",
    "UnnestFrame",
    "describe_transform",
    "get_transform",
    "get_transforms",
]


class GlueTransform:
    """Base of the transforms: ``Transform.apply(...)`` or ``Transform()(...)``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define __call__")

    @classmethod
    def apply(cls, *args, **kwargs):
        return cls()(*args, **kwargs)

    @classmethod
    def name(cls) -> str:
        return cls.__name__

    @classmethod
    def describe(cls) -> str:
        return (cls.__doc__ or cls.__name__).strip()


def _pop_common(kwargs: dict) -> dict:
    return {
        k: kwargs.pop(k)
        for k in ("transformation_ctx", "info", "stageThreshold", "totalThreshold")
        if k in kwargs
    }


class ApplyMapping(GlueTransform):
    """Select, rename and cast fields: (source, source type, target, target type)."""

    def __call__(self, frame: DynamicFrame, mappings, case_sensitive: bool = False, **kwargs):
        return frame.apply_mapping(mappings, case_sensitive=case_sensitive, **_pop_common(kwargs))


class ResolveChoice(GlueTransform):
    """Resolve choice fields: cast:T, project:T, make_struct, make_cols."""

    def __call__(
        self, frame: DynamicFrame, specs=None, choice: str = "", database=None, table_name=None, **kwargs
    ):
        return frame.resolveChoice(
            specs=specs, choice=choice, database=database, table_name=table_name, **_pop_common(kwargs)
        )


class Filter(GlueTransform):
    """Keep the records for which f(record) is true."""

    def __call__(self, frame: DynamicFrame, f, **kwargs):
        return frame.filter(f, **_pop_common(kwargs))


class Map(GlueTransform):
    """Replace each record by f(record)."""

    def __call__(self, frame: DynamicFrame, f, **kwargs):
        return frame.map(f, **_pop_common(kwargs))


class Join(GlueTransform):
    """Equality join of frame1 and frame2 on keys1 = keys2."""

    def __call__(self, frame1: DynamicFrame, frame2: DynamicFrame, keys1, keys2, **kwargs):
        return frame1.join(keys1, keys2, frame2, **_pop_common(kwargs))


class SelectFields(GlueTransform):
    """Keep only the given fields."""

    def __call__(self, frame: DynamicFrame, paths, **kwargs):
        return frame.select_fields(paths, **_pop_common(kwargs))


class DropFields(GlueTransform):
    """Drop the given fields."""

    def __call__(self, frame: DynamicFrame, paths, **kwargs):
        return frame.drop_fields(paths, **_pop_common(kwargs))


class RenameField(GlueTransform):
    """Rename one field (nested paths allowed)."""

    def __call__(self, frame: DynamicFrame, old_name: str, new_name: str, **kwargs):
        return frame.rename_field(old_name, new_name, **_pop_common(kwargs))


class DropNullFields(GlueTransform):
    """Drop fields that are null in every record."""

    def __call__(self, frame: DynamicFrame, **kwargs):
        return frame.drop_null_fields(**_pop_common(kwargs))


class Relationalize(GlueTransform):
    """Flatten into a root table and child tables for arrays."""

    def __call__(
        self, frame: DynamicFrame, staging_path: str = "", name: str = "roottable", options=None, **kwargs
    ):
        return frame.relationalize(name, staging_path, options, **_pop_common(kwargs))


class SplitFields(GlueTransform):
    """Split into a frame of the given fields and a frame of the rest."""

    def __call__(
        self, frame: DynamicFrame, paths, name1: str | None = None, name2: str | None = None, **kwargs
    ):
        return frame.split_fields(
            paths, name1 or f"{frame.name}_fields", name2 or f"{frame.name}_rest", **_pop_common(kwargs)
        )


class SplitRows(GlueTransform):
    """Split rows by comparisons: {"path": {">": v}}."""

    def __call__(
        self, frame: DynamicFrame, comparison_dict, name1: str = "frame1", name2: str = "frame2", **kwargs
    ):
        return frame.split_rows(comparison_dict, name1, name2, **_pop_common(kwargs))


class Unbox(GlueTransform):
    """Parse a string field holding JSON into a struct."""

    def __call__(self, frame: DynamicFrame, path: str, format: str = "json", **kwargs):
        common = _pop_common(kwargs)
        return frame.unbox(path, format, **common, **kwargs)


class UnnestFrame(GlueTransform):
    """Flatten nested structs into top-level fields."""

    def __call__(self, frame: DynamicFrame, **kwargs):
        return frame.unnest(**_pop_common(kwargs))


class Spigot(GlueTransform):
    """Write a sample of the frame to a path and pass it on."""

    def __call__(self, frame: DynamicFrame, path: str, options=None, **kwargs):
        return frame.spigot(path, options, kwargs.get("transformation_ctx", ""))


class Union(GlueTransform):
    """The records of both frames."""

    def __call__(self, frame1: DynamicFrame, frame2: DynamicFrame, **kwargs):
        return frame1.union(frame2, **_pop_common(kwargs))


class SelectFromCollection(GlueTransform):
    """One frame of a DynamicFrameCollection."""

    def __call__(self, dfc: DynamicFrameCollection, key: str, **kwargs):
        return dfc.select(key)


class MapToCollection(GlueTransform):
    """Apply a function to each frame of a DynamicFrameCollection."""

    def __call__(self, dfc: DynamicFrameCollection, callable, transformation_ctx: str = "", **kwargs):
        return dfc.map(callable, transformation_ctx)


class FlatMap(GlueTransform):
    """Apply a transform to each frame of a collection, handing it the frame as the
    argument named ``frame_name``; the frames it returns make one collection."""

    def __call__(
        self,
        dfc: DynamicFrameCollection,
        BaseTransform,
        frame_name: str,
        transformation_ctx: str = "",
        **base_kwargs,
    ):
        def one(frame: DynamicFrame, ctx: str):
            return BaseTransform.apply(**{**base_kwargs, frame_name: frame, "transformation_ctx": ctx})

        return dfc.flatmap(one, transformation_ctx)


class ErrorsAsDynamicFrame(GlueTransform):
    """The error records of the frame's history, as a frame."""

    def __call__(self, frame: DynamicFrame, **kwargs):
        return frame.errorsAsDynamicFrame()


class Repartition(GlueTransform):
    """The frame in ``num_partitions`` partitions (a shuffle)."""

    def __call__(self, frame: DynamicFrame, num_partitions: int, **kwargs):
        return frame.repartition(num_partitions)


class Coalesce(GlueTransform):
    """The frame in at most ``num_partitions`` partitions (a shuffle only with ``shuffle``)."""

    def __call__(self, frame: DynamicFrame, num_partitions: int, shuffle: bool = False, **kwargs):
        return frame.coalesce(num_partitions, shuffle)


ALL_TRANSFORMS = {
    ApplyMapping, Coalesce, DropFields, DropNullFields, ErrorsAsDynamicFrame, Filter, FlatMap, Join, Map,
    MapToCollection, Relationalize, RenameField, Repartition, ResolveChoice, SelectFields,
    SelectFromCollection, Spigot, SplitFields, SplitRows, Unbox, Union, UnnestFrame,
}  # fmt: skip


def get_transforms() -> set[GlueTransform]:
    """An instance of each transform."""
    return {transform() for transform in ALL_TRANSFORMS}


def get_transform(name: str) -> GlueTransform | None:
    """The transform called ``name`` (case-insensitive), or None."""
    return next((t() for t in ALL_TRANSFORMS if t.name().lower() == name.lower()), None)


def describe_transform(name: str) -> str:
    """A transform's description as JSON (``{}`` for an unknown name)."""
    import json

    found = get_transform(name)
    described = {"name": found.name(), "description": found.describe()} if found else {}
    return json.dumps(described, sort_keys=True, indent=4, separators=(",", ": "))
