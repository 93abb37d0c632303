#version 450
// One triangle that covers the whole viewport: vertices (-1,-1), (3,-1), (-1,3), made from the
// vertex index (the draw has no vertex input).
void main() {
    vec2 p = vec2((gl_VertexIndex & 1) * 4 - 1, (gl_VertexIndex & 2) * 2 - 1);
    gl_Position = vec4(p, 0.0, 1.0);
}
