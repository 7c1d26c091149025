// Tiled matrix multiply c = a b of n x n matrices through two B x B local tiles.
//   (default)               barriers after loading the tiles and after using them
//   MISSING_SECOND_BARRIER  no barrier after using the tiles: the next
//                           iteration's loads overwrite what others still read
#define B 4
__kernel void matmul(__global const float *a, __global const float *b, __global float *c)
{
  __local float ta[B][B], tb[B][B];
  int lx = get_local_id(0), ly = get_local_id(1);
  int col = get_global_id(0), row = get_global_id(1), n = get_global_size(0);
  float acc = 0.0f;
  for (int t = 0; t < n / B; t++) {
    ta[ly][lx] = a[row * n + t * B + lx];
    tb[ly][lx] = b[(t * B + ly) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < B; k++)
      acc += ta[ly][k] * tb[k][lx];
#if !defined(MISSING_SECOND_BARRIER)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }
  c[row * n + col] = acc;
}
