// Three-point blur straight from global memory.
//   (default)  reads `in`, writes `out`
//   IN_PLACE   writes the result back into `in`, which neighbours still read
__kernel void blur(__global float *in, __global float *out)
{
  int i = get_global_id(0), n = get_global_size(0);
  float left = i > 0 ? in[i - 1] : 0.0f;
  float right = i < n - 1 ? in[i + 1] : 0.0f;
  float value = (left + in[i] + right) / 3.0f;
#if defined(IN_PLACE)
  in[i] = value;
#else
  out[i] = value;
#endif
}
