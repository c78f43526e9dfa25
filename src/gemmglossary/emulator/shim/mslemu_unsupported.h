// What the emulator does not run (original code). Each name exists so that using it is a
// compile error that names it and says why, at the kernel's line, instead of "was not
// declared" or, worse, an unrelated overload.
#pragma once

namespace metal {
enum class access { sample, read, write, read_write };
enum class coord { normalized, pixel };
enum class filter { nearest, linear, bicubic };
enum class address { repeat, mirrored_repeat, clamp_to_edge, clamp_to_zero, clamp_to_border };

#define MSLEMU_NO_TYPE(name, why)                                                                \
  template <class... T> struct name {                                                            \
    static_assert(mslemu::dependent_false<T...>, #name " is not supported by the emulator: " why); \
  };
#define MSLEMU_NO_TEXTURE(name)                                                                  \
  template <class T = float, access A = access::sample, class... R> struct name {                \
    static_assert(mslemu::dependent_false<T, R...>, #name " is not supported by the emulator: it runs compute " \
                  "kernels on buffers, without textures");                                       \
  };
MSLEMU_NO_TEXTURE(texture1d) MSLEMU_NO_TEXTURE(texture1d_array) MSLEMU_NO_TEXTURE(texture2d)
MSLEMU_NO_TEXTURE(texture2d_array) MSLEMU_NO_TEXTURE(texture3d) MSLEMU_NO_TEXTURE(texturecube)
MSLEMU_NO_TEXTURE(texturecube_array) MSLEMU_NO_TEXTURE(texture2d_ms) MSLEMU_NO_TEXTURE(texture2d_ms_array)
MSLEMU_NO_TEXTURE(texture_buffer) MSLEMU_NO_TEXTURE(depth2d) MSLEMU_NO_TEXTURE(depth2d_array)
MSLEMU_NO_TEXTURE(depthcube) MSLEMU_NO_TEXTURE(depthcube_array) MSLEMU_NO_TEXTURE(depth2d_ms)
MSLEMU_NO_TEXTURE(depth2d_ms_array)
#undef MSLEMU_NO_TEXTURE
struct sampler {
  template <class... A> constexpr sampler(A...) {
    static_assert(mslemu::dependent_false<A...>, "sampler is not supported by the emulator: it runs compute kernels on "
                  "buffers, without textures");
  }
};
MSLEMU_NO_TYPE(imageblock, "imageblocks belong to tile shading on the GPU's tile memory")
MSLEMU_NO_TYPE(visible_function_table, "function tables need the GPU's function pointers")
MSLEMU_NO_TYPE(intersection_function_table, "ray tracing is not emulated")
// Metal 4 tensors and MetalPerformancePrimitives' matmul2d: mslemu_tensor_ops.h (<metal_tensor>)
MSLEMU_NO_TYPE(command_buffer, "indirect command buffers are not emulated")
MSLEMU_NO_TYPE(mesh, "mesh shading is not emulated")
namespace raytracing {
MSLEMU_NO_TYPE(intersector, "ray tracing is not emulated")
MSLEMU_NO_TYPE(acceleration_structure, "ray tracing is not emulated")
MSLEMU_NO_TYPE(intersection_query, "ray tracing is not emulated")
}  // namespace raytracing
#undef MSLEMU_NO_TYPE

#define MSLEMU_NO_FUNCTION(name, why)                                                              \
  template <class... A> void name(A&&...) {                                                       \
    static_assert(mslemu::dependent_false<A...>, #name " is not supported by the emulator: " why); \
  }
#define MSLEMU_FRAGMENT_ONLY "it belongs to fragment functions, and the emulator runs compute kernels"
MSLEMU_NO_FUNCTION(dfdx, MSLEMU_FRAGMENT_ONLY) MSLEMU_NO_FUNCTION(dfdy, MSLEMU_FRAGMENT_ONLY)
MSLEMU_NO_FUNCTION(fwidth, MSLEMU_FRAGMENT_ONLY) MSLEMU_NO_FUNCTION(discard_fragment, MSLEMU_FRAGMENT_ONLY)
MSLEMU_NO_FUNCTION(get_num_samples, MSLEMU_FRAGMENT_ONLY) MSLEMU_NO_FUNCTION(get_sample_position, MSLEMU_FRAGMENT_ONLY)
#undef MSLEMU_FRAGMENT_ONLY
#undef MSLEMU_NO_FUNCTION
}  // namespace metal
