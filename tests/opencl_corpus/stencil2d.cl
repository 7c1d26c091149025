// Five-point stencil on a 2-D grid through a (B+2) x (B+2) local tile; the
// edge work-items of the group also load the halo.
//   (default)        barrier between loading the tile and reading neighbours
//   MISSING_BARRIER  no barrier
#define B 4
__kernel void stencil2d(__global const float *in, __global float *out)
{
  __local float tile[B + 2][B + 2];
  int lx = get_local_id(0), ly = get_local_id(1);
  int gx = get_global_id(0), gy = get_global_id(1);
  int w = get_global_size(0), h = get_global_size(1);
  tile[ly + 1][lx + 1] = in[gy * w + gx];
  if (lx == 0)
    tile[ly + 1][0] = gx > 0 ? in[gy * w + gx - 1] : 0.0f;
  if (lx == B - 1)
    tile[ly + 1][B + 1] = gx < w - 1 ? in[gy * w + gx + 1] : 0.0f;
  if (ly == 0)
    tile[0][lx + 1] = gy > 0 ? in[(gy - 1) * w + gx] : 0.0f;
  if (ly == B - 1)
    tile[B + 1][lx + 1] = gy < h - 1 ? in[(gy + 1) * w + gx] : 0.0f;
#if !defined(MISSING_BARRIER)
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  out[gy * w + gx] = 0.5f * tile[ly + 1][lx + 1]
                   + 0.125f * (tile[ly][lx + 1] + tile[ly + 2][lx + 1]
                               + tile[ly + 1][lx] + tile[ly + 1][lx + 2]);
}
