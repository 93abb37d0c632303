"""The image resource: loaded on a scenario's first image (a run of buffers
builds none of these classes)."""
from __future__ import annotations

from kernellab.model import DataResource
from kernellab.modelkit import U32, Bool, Enum, Field, Int, List, Number, VkFormat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar


def _optional_number(description: str) -> Any:
    """A number field that may be absent (None)."""
    return Field(Number, None, description)


class Image(DataResource):
    kind: ClassVar[str] = "image"
    format = VkFormat
    dims = List(Int(1, U32), min_len=2, max_len=4,
                description="[1, width, height, 1] as Arm writes it, or [width, height]")
    shader_access = Enum("readonly", "writeonly", "readwrite", "image_read")
    mips = Int(1, U32, default=1)
    min_filter = Enum("NEAREST", "LINEAR", default=None)
    mag_filter = Enum("NEAREST", "LINEAR", default=None)
    mip_filter = Enum("NEAREST", "LINEAR", default=None)
    border_address_mode = Enum("CLAMP_EDGE", "CLAMP_BORDER", "REPEAT", "MIRRORED_REPEAT", default=None)
    border_color = Enum("FLOAT_TRANSPARENT_BLACK", "FLOAT_OPAQUE_BLACK", "FLOAT_OPAQUE_WHITE",
                        "INT_TRANSPARENT_BLACK", "INT_OPAQUE_BLACK", "INT_OPAQUE_WHITE", "INT_CUSTOM_EXT",
                        "FLOAT_CUSTOM_EXT", default=None)
    custom_border_color = List(Number, default=None, min_len=4, max_len=4)
    tiling = Enum("OPTIMAL", "LINEAR", default=None)
    color_attachment = Bool(default=False, description="dispatch_fragment may render into it")
    # kernellab's extensions (AmberScript's IMAGE and SAMPLER, docs/amber.md); Arm's images are 2-D
    image_type = Enum("2D", "1D", "3D", default="2D",
                      description="kernellab's extension: the VkImageType and view type (1D: height 1)")
    depth = Int(1, U32, default=1, description="kernellab's extension: the depth of a 3D image")
    samples = Int(1, 64, default=1,
                  description="kernellab's extension: samples per texel (1, 2, 4 ... 64); a multisampled image "
                              "is a 2D storage image of one level without src or dst")
    address_modes = List(Enum("CLAMP_EDGE", "CLAMP_BORDER", "REPEAT", "MIRRORED_REPEAT", "MIRROR_CLAMP_EDGE"),
                         default=None, min_len=3, max_len=3,
                         description="kernellab's extension: the sampler's address modes U, V, W "
                                     "(instead of border_address_mode)")
    min_lod = _optional_number("kernellab's extension: the sampler's minLod (default 0)")
    max_lod = _optional_number("kernellab's extension: the sampler's maxLod (default: the last level)")
    unnormalized_coordinates = Bool(default=False, description="kernellab's extension: the sampler's "
                                                               "unnormalizedCoordinates")
    compare_op = Enum("NEVER", "LESS", "EQUAL", "LESS_OR_EQUAL", "GREATER", "NOT_EQUAL", "GREATER_OR_EQUAL",
                      "ALWAYS", default=None,
                      description="kernellab's extension: the sampler compares (compareEnable) with this op")
