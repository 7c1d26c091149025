"""GPU session kernel: a Triton kernel that moves tiles through tensor descriptors
(``tl.make_tensor_descriptor``), which Triton compiles for sm_90 into tensor TMA: the
kernel writes its descriptors into global scratch (``tensormap.replace``), loads each
tile with ``cp.async.bulk.tensor`` completing on an mbarrier and stores it with a
bulk-group TMA store. Program ``p`` loads rows ``[p*BM, p*BM+BM)`` of ``x`` and stores
them plus one into ``out``: with ``separate`` a fresh tensor, with ``aliased`` the view
of ``x`` one row further on, so a program's store overwrites the first row the next
program loads.

    python triton_tma.py separate|aliased   run it on Triton's active device
    python triton_tma.py compile            compile it for sm_90 (no GPU needed) and
                                            print the TMA and mbarrier PTX it holds
"""

import re
import sys

import triton
import triton.language as tl

ROWS, COLS, BM = 128, 32, 32


@triton.jit
def tile_add(x_ptr, out_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(
        x_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BM, BN]
    )
    dst = tl.make_tensor_descriptor(
        out_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BM, BN]
    )
    row = tl.program_id(0) * BM
    tile = src.load([row, 0])
    dst.store([row, 0], tile + 1)


def compile_sm90() -> list[str]:
    """The PTX instructions of the TMA machinery in ``tile_add`` compiled for sm_90."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(
        fn=tile_add,
        signature={
            "x_ptr": "*fp32",
            "out_ptr": "*fp32",
            "rows": "i32",
            "cols": "i32",
            "BM": "constexpr",
            "BN": "constexpr",
        },
        constexprs={"BM": BM, "BN": COLS},
    )
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32))
    pattern = r"\b((?:cp\.async\.bulk|mbarrier|fence\.proxy|tensormap)[\w.:]*)"
    return sorted(set(re.findall(pattern, kernel.asm["ptx"])))


def run(form: str) -> None:
    import torch

    device = triton.runtime.driver.active.get_active_torch_device()
    # make_tensor_descriptor writes the descriptors into global scratch from this allocator.
    triton.set_allocator(
        lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device)
    )
    x = torch.zeros((ROWS + 1) * COLS, device=device)
    out = x[COLS:] if form == "aliased" else torch.empty(ROWS * COLS, device=device)
    tile_add[(ROWS // BM,)](x, out, ROWS, COLS, BM=BM, BN=COLS)
    if device.type == "cuda":
        torch.cuda.synchronize()


def main(form: str) -> int:
    if form == "compile":
        found = compile_sm90()
        print("\n".join(found))
        return 0 if any(i.startswith("cp.async.bulk.tensor") for i in found) else 1
    if form not in ("separate", "aliased"):
        print(
            f"triton_tma.py: unknown form {form!r} (separate, aliased or compile)", file=sys.stderr
        )
        return 2
    run(form)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "separate"))
