#version 450
// A pattern whose every texel is known: red grows with x, green with y, blue is a checkerboard
// of 4x4 squares, and the push constant sets alpha. Whole multiples of 1/255, so the 8-bit
// attachment holds them exactly.
layout(push_constant) uniform Push { uint alpha; } pc;
layout(location = 0) out vec4 color;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    float checker = float(((p.x >> 2) + (p.y >> 2)) & 1);
    color = vec4(float(p.x) * 17.0, float(p.y) * 36.0, checker * 255.0, float(pc.alpha)) / 255.0;
}
