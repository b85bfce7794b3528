"""Kernel names reduced to their family, so that a recompiled kernel, or a GEMM with another tile, matches."""
from __future__ import annotations

import pytest

from perfkit.explain.names import normalise

TF32_GEMM = ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
             "execute_segment_k_off_kernel__5x_cublas")
BF16_GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
             "execute_segment_k_off_kernel__5x_cublas")
CONV = ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x64x16_stage4_"
        "warpsize2x2x1_g1_tensor16x8x8_kernel")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
LAMBDA = ("at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
          "{lambda(float)#1}")
IMPL = (f"at::native::gpu_kernel_impl_nocast<{LAMBDA}>(at::TensorIteratorBase&, {LAMBDA} const&)::"
        "{lambda(int)#1}")
COPY = f"void at::native::elementwise_kernel<128, 2, {IMPL}>(int, {IMPL})"
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
           "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)")
CUTLASS = ("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_relu_bf16_64x64_64x4_tn_align8>("
           "cutlass_80_tensorop_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)")
NUMBA_TAG = "cw51cXTLSUwv1sCUt9Uw1VEw0NRRQPKzLTg4gaGKFsG2oMQGEYakJSQB1TQAAAAA_3d_3d"
NUMBA_ABI = (f"_ZN6cudapy8__main__10vector_addB2v1B{len(NUMBA_TAG)}{NUMBA_TAG}"
             "E5ArrayIfLi1E1C7mutable7alignedES1_S1_")
NUMBA_DEMANGLED = (f"cudapy::__main__::vector_add[abi:v1,{NUMBA_TAG}](Array<float, 1, C, mutable, aligned>, "
                   "Array<float, 1, C, mutable, aligned>)")


@pytest.mark.parametrize(("raw", "family"), [
    (TF32_GEMM, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n"),
    (BF16_GEMM, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
    (CONV, "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_nn"),
    ("ampere_sgemm_32x32_sliced1x4_tn", "ampere_sgemm_tn"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
    (ADD, "vectorized_elementwise_kernel[add]"),
    (COPY, "elementwise_kernel[direct_copy]"),
    (SOFTMAX, "cunn_SoftMaxForward"),
    (CUTLASS, "cutlass_80_tensorop_s16816gemm_relu_bf16_tn"),
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNN", "nvjet_tst_v_bz_coopA_NNN"),
    (NUMBA_ABI, "vector_add"),
    ("_ZN6cudapy8__main__14vector_add$241E5ArrayIfLi1E1C7mutable7alignedES1_S1_", "vector_add"),
    (NUMBA_DEMANGLED, "vector_add"),
    ("_Z10add_kernelPfS_i", "add_kernel"),
    ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul"),
])
def test_a_kernel_name_is_reduced_to_its_family(raw, family):
    assert normalise(raw) == family


def test_a_gemm_with_another_tile_matches_and_one_of_another_precision_does_not():
    other_tile = TF32_GEMM.replace("tilesize128x128x32", "tilesize64x256x32").replace("1x1x1", "2x1x1")
    assert normalise(other_tile) == normalise(TF32_GEMM)
    assert normalise(BF16_GEMM) != normalise(TF32_GEMM)
    assert normalise("ampere_sgemm_128x64_nn") != normalise("ampere_sgemm_128x64_tn")


def test_a_vector_type_is_not_taken_for_a_tile_shape():
    assert normalise("some_kernel_bf16x2_tn") == "some_kernel_bf16x2_tn"


@pytest.mark.parametrize("raw", ["_ZZZ", "_ZN", "_ZN6cudapy40vector_add", "", "   "])
def test_a_name_that_cannot_be_read_is_kept_whole(raw):
    assert normalise(raw) == raw.strip()


def test_pytorchs_generic_launchers_keep_their_operation_so_an_added_add_is_not_the_relu_beside_it():
    relu = ADD.replace("CUDAFunctor_add", "(anonymous namespace)::ReluFunctor")
    fill = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
    sums = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<"
            "float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::"
            "{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float>)")
    assert [normalise(k) for k in (ADD, relu, fill, sums)] == [
        "vectorized_elementwise_kernel[add]", "vectorized_elementwise_kernel[Relu]",
        "vectorized_elementwise_kernel[Fill]", "reduce_kernel[sum]"]
    assert normalise(ADD.replace("<float>", "<c10::BFloat16>")) == normalise(ADD)  # another dtype, one family
