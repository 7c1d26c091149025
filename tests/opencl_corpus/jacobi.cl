// Four Jacobi smoothing sweeps of each work-group's slice in local memory.
//   (default)      ping-pong between two tiles, a barrier after each sweep
//   SINGLE_BUFFER  updates one tile in place: a work-item overwrites its
//                  element while its neighbours still read the old value
#define SWEEPS 4
__kernel void jacobi(__global float *data, __local float *a, __local float *b)
{
  int lid = get_local_id(0), n = get_local_size(0), gid = get_global_id(0);
  a[lid] = data[gid];
  barrier(CLK_LOCAL_MEM_FENCE);
  __local float *src = a, *dst = b;
  for (int sweep = 0; sweep < SWEEPS; sweep++) {
    float left = lid > 0 ? src[lid - 1] : src[lid];
    float right = lid < n - 1 ? src[lid + 1] : src[lid];
#if defined(SINGLE_BUFFER)
    src[lid] = 0.5f * src[lid] + 0.25f * (left + right);
#else
    dst[lid] = 0.5f * src[lid] + 0.25f * (left + right);
    __local float *t = src;
    src = dst;
    dst = t;
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  data[gid] = src[lid];
}
