// Tiled transpose of a w x h matrix through a B x B local tile stored flat
// with a padded row stride.
//   (default)        stride B + 1, barrier between loading and reading the tile
//   MISSING_BARRIER  no barrier
//   OOB_TILE         stride B - 1: the last element of one tile row lands on
//                    the first of the next, so two work-items store there
#define B 4
#if defined(OOB_TILE)
#define STRIDE (B - 1)
#else
#define STRIDE (B + 1)
#endif
__kernel void transpose(__global const float *in, __global float *out)
{
  __local float tile[B * (B + 1)];
  int lx = get_local_id(0), ly = get_local_id(1);
  int w = get_global_size(0), h = get_global_size(1);
  tile[ly * STRIDE + lx] = in[get_global_id(1) * w + get_global_id(0)];
#if !defined(MISSING_BARRIER)
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  int ox = get_group_id(1) * B + lx, oy = get_group_id(0) * B + ly;
  out[oy * h + ox] = tile[lx * STRIDE + ly];
}
