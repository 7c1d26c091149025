// In-place transpose of an n x n matrix, one work-item per element.
//   (default)  only work-items above the diagonal swap their pair
//   SWAP_ALL   every work-item swaps, so both work-items of a pair do it
__kernel void transpose_inplace(__global float *m)
{
  int x = get_global_id(0), y = get_global_id(1), n = get_global_size(0);
#if !defined(SWAP_ALL)
  if (x <= y)
    return;
#endif
  float t = m[y * n + x];
  m[y * n + x] = m[x * n + y];
  m[x * n + y] = t;
}
