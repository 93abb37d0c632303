#version 450
// A loop with a branch inside: the CFG has a back edge and a diamond.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { float values[]; } data;
layout(push_constant) uniform Params { uint count; float scale; } params;

void main() {
    uint i = gl_GlobalInvocationID.x;
    float acc = 0.0;
    for (uint k = 0u; k < params.count; ++k) {
        if ((k & 1u) == 0u) {
            acc += data.values[k] * params.scale;
        } else {
            acc -= sqrt(abs(data.values[k]));
        }
    }
    data.values[i] = acc;
}
