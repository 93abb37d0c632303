#version 450
// 3x3 box blur: reads a sampled image with clamp-to-edge addressing, writes a storage image.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D dst;
void main() {
    ivec2 size = imageSize(dst);
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, size))) return;
    vec4 sum = vec4(0.0);
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            sum += textureLod(src, (vec2(p + ivec2(dx, dy)) + 0.5) / vec2(size), 0.0);
    imageStore(dst, p, sum / 9.0);
}
