// A kernel that takes a struct by value: Oclgrind gives every work-item a
// private copy of it, filled without a store. Reading its fields reads
// initialized memory.
typedef struct
{
  float scale;
  float offset;
} params;

__kernel void struct_arg(__global const float *in, __global float *out, params p)
{
  size_t i = get_global_id(0);
  out[i] = in[i] * p.scale + p.offset;
}
