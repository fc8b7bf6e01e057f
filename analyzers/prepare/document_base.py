"""What the JSON documents of the prepare and category stages share.

`ComparisonScope` is whether a run is one trace on its own or two traces compared; the manifest
declares it and every metrics document repeats it. `OmitNone` is the serialisation rule of
documents whose absent values are left out rather than written as null.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

ComparisonScope = Literal["standalone", "comparative"]


class OmitNone(BaseModel):
    """Serialises without the keys whose value is None.

    A subclass that names keys in `OMIT_WHEN_NONE` drops only those (the others stay null);
    the default drops every None-valued key. Raw nested dicts are left alone.
    """

    OMIT_WHEN_NONE: ClassVar[frozenset[str] | None] = None

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        omit = self.OMIT_WHEN_NONE
        return {
            k: v
            for k, v in handler(self).items()
            if not (v is None and (omit is None or k in omit))
        }
