"""Helpers shared by the compiled kernels (optional: needs numba, the ``fast`` extra)."""

from __future__ import annotations

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch", "prefetch_address"]

# LLVM 15 and later name the intrinsic by its opaque pointer type.
_PREFETCH = "llvm.prefetch.p0" if binding.llvm_version_info >= (15,) else "llvm.prefetch.p0i8"


def _emit_prefetch(builder, byte_pointer):
    i32 = ir.IntType(32)
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer.type, i32, i32, i32]),
        _PREFETCH)
    # read, keep in all cache levels, data cache
    builder.call(function, [byte_pointer, ir.Constant(i32, 0), ir.Constant(i32, 3),
                            ir.Constant(i32, 1)])


@intrinsic
def prefetch(typingctx, array, index):
    """A hint to load ``array[index]`` into the cache; no effect on any value."""
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]],
                                           wraparound=False)
        _emit_prefetch(builder, builder.bitcast(pointer, ir.IntType(8).as_pointer()))
        return context.get_dummy_value()
    return types.void(array, index), codegen


@intrinsic
def prefetch_address(typingctx, address):
    """A hint to load the bytes at ``address`` (an integer) into the cache; no effect on any
    value, and none for an address that is not mapped (a prefetch never faults)."""
    def codegen(context, builder, signature, args):
        _emit_prefetch(builder, builder.inttoptr(args[0], ir.IntType(8).as_pointer()))
        return context.get_dummy_value()
    return types.void(types.intp), codegen
