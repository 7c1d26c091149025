// Work-item 5 reaches an unreachable instruction (built without optimisation,
// OCLGRIND_BUILD_OPTIONS=-cl-opt-disable, so the branch to it survives):
// Oclgrind stops the launch with a fatal error, and oclgrind-kernel still
// exits 0.
__kernel void fatal(__global int *out)
{
  int i = get_global_id(0);
  if (i == 5)
    __builtin_unreachable();
  out[i] = i;
}
