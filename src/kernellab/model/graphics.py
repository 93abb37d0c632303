"""``dispatch_fragment``, the graphics draw: loaded on a scenario's first draw."""
from __future__ import annotations

from kernellab.model import Binding, Command
from kernellab.modelkit import U32, Bool, Int, List, Nested, Node, Str

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import ClassVar


class ColorAttachment(Node):
    """An image ``dispatch_fragment`` renders into: ``color_attachment_refs`` entries are its uid
    or this object."""

    resource_ref = Str(nonempty=True)
    lod = Int(0, U32, default=None, description="mip level rendered into (absent: level 0)")


class DispatchFragment(Command):
    """Arm 0.11's graphics draw: one triangle list of three vertices, no vertex input, drawn with
    a vertex and a fragment shader into the color attachments (dynamic rendering, viewport and
    scissor the render extent)."""

    kind: ClassVar[str] = "dispatch_fragment"
    vertex_shader_ref = Str(nonempty=True, description="a shader of stage vertex")
    fragment_shader_ref = Str(nonempty=True, description="a shader of stage fragment")
    debug_name = Str(default="", description="the pipeline's name (default: fragment_shader_ref)")
    bindings = List(Binding)
    color_attachment_refs = List(Nested(ColorAttachment, shorthand="resource_ref"), default=[], min_len=1,
                                 description="images (color_attachment: true) rendered into, in location order")
    render_extent = List(Int(1, U32), default=None, min_len=2, max_len=2,
                         description="[width, height] rendered; default: the attachments' extent")
    push_data_ref = Str(default="")
    implicit_barrier = Bool(default=True)

    @property
    def name(self) -> str:
        return self.debug_name or self.fragment_shader_ref
