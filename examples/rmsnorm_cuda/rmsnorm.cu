// One block per row: THREADS threads stride over the row, sum squares, reduce through warp
// shuffles and shared memory, then scale. THREADS is a multiple of 32, at most 1024.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#ifndef THREADS
#define THREADS 256
#endif

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void rmsnorm_rows(const float* __restrict__ x, const float* __restrict__ w,
                             float* __restrict__ y, int cols, float eps) {
    const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float* out = y + static_cast<size_t>(blockIdx.x) * cols;
    float sum = 0.f;
    for (int i = threadIdx.x; i < cols; i += THREADS) {
        float v = row[i];
        sum += v * v;
    }
    __shared__ float partial[THREADS / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    sum = warp_sum(sum);
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = warp_sum(lane < THREADS / 32 ? partial[lane] : 0.f);
        if (lane == 0) partial[0] = rsqrtf(sum / cols + eps);
    }
    __syncthreads();
    const float scale = partial[0];
    for (int i = threadIdx.x; i < cols; i += THREADS) out[i] = row[i] * scale * w[i];
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x: a float32 CUDA tensor");
    TORCH_CHECK(w.is_cuda() && w.scalar_type() == torch::kFloat32, "weight: a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto y = torch::empty_like(xc);
    const int cols = static_cast<int>(xc.size(-1));
    TORCH_CHECK(wc.numel() == cols, "weight: one value per column");
    const int64_t rows = xc.numel() / cols;
    if (rows == 0) return y;
    rmsnorm_rows<<<static_cast<unsigned>(rows), THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(), cols,
        static_cast<float>(eps));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
