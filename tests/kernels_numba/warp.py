"""Warp-level operations, which numba-cuda's simulator does not have and the
recorder gives: shuffles, votes, matches and ``cuda.syncwarp``.
``python warp.py VARIANT``; the program exits 1 when a kernel's results are
not what a GPU computes.

- ``reduce``: a warp reduction with ``shfl_down_sync`` (one sum per warp).
- ``scan``: a warp-level inclusive scan with ``shfl_up_sync``.
- ``votes``: ``all_sync``, ``any_sync``, ``eq_sync``, ``ballot_sync``,
  ``match_any_sync``, ``match_all_sync``, ``shfl_sync``, ``shfl_xor_sync``,
  ``activemask`` and ``lanemask_lt`` in a block whose second warp is partial.
- ``exchange``: lanes swap values through shared memory, ordered by ``syncwarp``;
  ``exchange_broken`` drops the ``syncwarp`` (lines marked ``# race``).
- ``tree``: a shared-memory tree reduction whose last steps use ``syncwarp``.
- ``left_out``: lane 31 skips a full-mask shuffle and ends (it is let off);
  ``left_out_deadlock``: it waits at ``syncthreads`` instead;
  ``returned_early``: it returns before a full-mask ``syncwarp`` (let off);
  ``outside_mask``: every lane calls ``syncwarp`` with lane 0's mask only;
  ``mismatch``: half the lanes of a full mask shuffle, the other half vote;
  ``vote_spin``: a warp polls a flag nobody sets with ``any_sync``;
  ``vote_hand_off``: block 0 polls a flag block 1 sets.
"""

import sys

import numpy as np
from numba import cuda, float32

FULL = 0xFFFFFFFF
TPB = 64
BLOCKS = 2
PARTIAL = 48  # threads of the votes block: warp 1 has lanes 0-15 only


@cuda.jit
def warp_sum(x, out):
    i = cuda.grid(1)
    v = x[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)  # shuffle
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


@cuda.jit
def warp_scan(x, out):
    i = cuda.grid(1)
    lane = cuda.laneid
    v = x[i]
    delta = 1
    while delta < 32:
        n = cuda.shfl_up_sync(FULL, v, delta)
        if lane >= delta:
            v += n
        delta *= 2
    out[i] = v


@cuda.jit
def votes(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    out[t, 0] = cuda.all_sync(FULL, v > 0)
    out[t, 1] = cuda.any_sync(FULL, v > 40)
    out[t, 2] = cuda.eq_sync(FULL, v >= 0)
    out[t, 3] = cuda.ballot_sync(FULL, v % 2 == 0)
    out[t, 4] = cuda.match_any_sync(FULL, v % 3)
    mask, same = cuda.match_all_sync(FULL, v // 64)
    out[t, 5] = mask
    out[t, 6] = same
    out[t, 7] = cuda.shfl_sync(FULL, v, 3)
    out[t, 8] = cuda.shfl_xor_sync(FULL, v, 1)
    out[t, 9] = cuda.activemask()
    out[t, 10] = cuda.lanemask_lt()
    out[t, 11] = cuda.ballot_sync(0x0000FFFF, v > 0) if cuda.laneid < 16 else -1
    half = 0x0000FFFF if cuda.laneid < 16 else 0xFFFF0000  # two meetings at once
    out[t, 12] = cuda.shfl_xor_sync(half, v, 2)


@cuda.jit
def exchange(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncwarp()
    out[t] = s[t ^ 1]


@cuda.jit
def exchange_broken(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]  # race
    out[t] = s[t ^ 1]  # race


@cuda.jit
def tree(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    stride = TPB // 2
    while stride >= 32:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncwarp()
        stride //= 2
    if t == 0:
        out[0] = s[0]


@cuda.jit
def left_out(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    if cuda.laneid < 31:
        v = cuda.shfl_down_sync(FULL, v, 1)  # lane 31 ends
    out[t] = v


@cuda.jit
def left_out_deadlock(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    if cuda.laneid < 31:
        v = cuda.shfl_down_sync(FULL, v, 1)  # lane 31 busy
    else:
        cuda.syncthreads()  # elsewhere
    out[t] = v


@cuda.jit
def returned_early(x, out):
    t = cuda.threadIdx.x
    if cuda.laneid == 31:
        return
    out[t] = x[t]
    cuda.syncwarp()  # lane 31 returned


@cuda.jit
def vote_spin(flag, out):
    t = cuda.threadIdx.x
    while cuda.any_sync(FULL, flag[0] == 0):  # nobody sets the flag
        pass
    out[t] = 1


@cuda.jit
def vote_hand_off(flag, out):
    t = cuda.threadIdx.x
    if cuda.blockIdx.x == 0:
        while cuda.any_sync(FULL, cuda.atomic.add(flag, 0, 0) == 0):
            pass
        out[t] = 2
    else:
        cuda.atomic.exch(flag, 0, 1)


@cuda.jit
def outside_mask(x, out):
    t = cuda.threadIdx.x
    cuda.syncwarp(1)  # outside
    out[t] = x[t]


@cuda.jit
def mismatch(x, out):
    t = cuda.threadIdx.x
    if cuda.laneid < 16:
        out[t] = cuda.shfl_xor_sync(FULL, x[t], 1)  # first operation
    else:
        out[t] = cuda.ballot_sync(FULL, x[t] > 0)  # other operation


def i4(mask: int) -> int:
    """A lane mask as numba-cuda's ``ballot_sync``/``match_*_sync`` return it:
    a signed 32-bit number (lane 31 set makes it negative)."""
    return int(np.uint32(mask).view(np.int32))


def expected_votes(x: np.ndarray) -> np.ndarray:
    """What a GPU gives ``votes`` for ``x`` (a block of ``PARTIAL`` threads)."""
    out = np.zeros((len(x), 13), dtype=np.int64)
    for t in range(len(x)):
        w0 = t // 32 * 32
        lanes = range(min(32, len(x) - w0))
        warp = [int(x[w0 + lane]) for lane in lanes]
        lane = t - w0
        out[t, 0] = all(v > 0 for v in warp)
        out[t, 1] = any(v > 40 for v in warp)
        out[t, 2] = len({v >= 0 for v in warp}) == 1
        out[t, 3] = i4(sum(1 << k for k, v in enumerate(warp) if v % 2 == 0))
        out[t, 4] = i4(sum(1 << k for k, v in enumerate(warp) if v % 3 == warp[lane] % 3))
        same = len({v // 64 for v in warp}) == 1
        out[t, 5] = i4(FULL) if same else 0
        out[t, 6] = same
        out[t, 7] = warp[3]
        out[t, 8] = warp[lane ^ 1]
        out[t, 9] = (1 << len(warp)) - 1
        out[t, 10] = (1 << lane) - 1
        out[t, 11] = sum(1 << k for k, v in enumerate(warp[:16]) if v > 0) if lane < 16 else -1
        out[t, 12] = warp[lane ^ 2]
    return out


def main(variant: str) -> int:
    n = TPB * BLOCKS
    x = (np.arange(n, dtype=np.float32) * 0.5) ** 2
    if variant == "reduce":
        out = np.zeros(n // 32, dtype=np.float32)
        warp_sum[BLOCKS, TPB](x, out)
        expected = x.reshape(-1, 32).sum(axis=1)
    elif variant == "scan":
        out = np.zeros(n, dtype=np.float32)
        warp_scan[BLOCKS, TPB](x, out)
        expected = np.cumsum(x.reshape(-1, 32), axis=1).ravel()
    elif variant == "votes":
        xi = np.arange(1, PARTIAL + 1, dtype=np.int32) * 7 % 50
        out = np.zeros((PARTIAL, 13), dtype=np.int64)
        votes[1, PARTIAL](xi, out)
        expected = expected_votes(xi)
    elif variant in ("exchange", "exchange_broken"):
        out = np.zeros(TPB, dtype=np.float32)
        (exchange if variant == "exchange" else exchange_broken)[1, TPB](x, out)
        expected = x[:TPB].reshape(-1, 2)[:, ::-1].ravel()
    elif variant == "tree":
        out = np.zeros(1, dtype=np.float32)
        tree[1, TPB](x, out)
        expected = x[:TPB].sum(keepdims=True)
    elif variant in ("vote_spin", "vote_hand_off"):
        flag = np.zeros(1, dtype=np.int32)
        out = np.zeros(32, dtype=np.float32)
        (vote_spin if variant == "vote_spin" else vote_hand_off)[2, 32](flag, out)
        expected = np.full(32, 2, dtype=np.float32)
    else:
        kernel = {
            "left_out": left_out,
            "left_out_deadlock": left_out_deadlock,
            "outside_mask": outside_mask,
            "mismatch": mismatch,
            "returned_early": returned_early,
        }[variant]
        out = np.zeros(TPB, dtype=np.float32)
        kernel[1, TPB](x, out)
        return 0
    ok = np.allclose(out, expected, rtol=1e-5)
    print("results ok" if ok else f"WRONG RESULTS: {out} != {expected}")
    return 0 if ok or variant.endswith("_broken") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
