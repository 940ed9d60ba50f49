"""Helpers shared by the compiled kernels (optional: needs numba, the ``fast`` extra)."""

from __future__ import annotations

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["PREFETCH", "prefetch"]

# LLVM 15 and later name the intrinsic by its opaque pointer type.
PREFETCH = "llvm.prefetch.p0" if binding.llvm_version_info >= (15,) else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, array, index):
    """A hint to load ``array[index]`` into the cache; no effect on any value."""
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]],
                                           wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]),
            PREFETCH)
        # read, keep in all cache levels, data cache
        builder.call(function, [builder.bitcast(pointer, byte_pointer), ir.Constant(i32, 0),
                                ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(array, index), codegen
