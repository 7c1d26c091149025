// y = A x for an n x n matrix, one work-item per row.
//   (default)    work-item i writes y[i]
//   WRONG_INDEX  work-item i writes y[i / 2], so two work-items store there
__kernel void matvec(__global const float *a, __global const float *x, __global float *y)
{
  int row = get_global_id(0), n = get_global_size(0);
  float acc = 0.0f;
  for (int j = 0; j < n; j++)
    acc += a[row * n + j] * x[j];
#if defined(WRONG_INDEX)
  y[row / 2] = acc;
#else
  y[row] = acc;
#endif
}
