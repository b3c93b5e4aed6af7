"""A cache prefetch hint for the network sweep (issue 28, 2): the engine's topic-word row of the next token is
requested while the current token is sampled, so its first read (the removal's decrement of n_wk) does not wait
for memory. A hint only: no value is read or changed, so the draws are the same bit for bit."""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def prefetch_row(typingctx, arr, i):
    """llvm.prefetch (read, keep in every cache level) of the first and last entry of row ``i`` of the 2-D array
    ``arr`` (a row of K = 20 int32 entries spans two cache lines at most)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2 and isinstance(i, types.Integer)):
        return None
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        row = context.cast(builder, args[1], signature.args[1], types.intp)
        last = builder.sub(builder.extract_value(ary.shape, 1), context.get_constant(types.intp, 1))
        i8p = ir.PointerType(ir.IntType(8))
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        for col in (context.get_constant(types.intp, 0), last):
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [row, col], wraparound=False)
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
