// Dot product in two steps: `partial` reduces each work-group's products in
// local memory into partial[group]; `finish` (a second launch, one
// work-group) adds the partial sums.
//   (default)    two launches: the launch boundary orders the partial sums
//                before they are added
//   ONE_LAUNCH   `partial` itself lets the last work-group add every group's
//                partial sum, with nothing ordering the other groups' stores
__kernel void partial(__global const float *x, __global const float *y,
                      __global float *sums, __global float *result, __local float *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0), gid = get_global_id(0);
  tile[lid] = x[gid] * y[gid];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (lid < s)
      tile[lid] += tile[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid != 0)
    return;
  sums[get_group_id(0)] = tile[0];
#if defined(ONE_LAUNCH)
  if (get_group_id(0) == get_num_groups(0) - 1) {
    float total = 0.0f;
    for (uint g = 0; g < get_num_groups(0); g++)
      total += sums[g];
    *result = total;
  }
#endif
}

__kernel void finish(__global const float *sums, __global float *result, uint groups)
{
  if (get_global_id(0) != 0)
    return;
  float total = 0.0f;
  for (uint g = 0; g < groups; g++)
    total += sums[g];
  *result = total;
}
