// The C++ (CPU) version of trainlab/kernels/adamw.py, built by trainlab/kernels/cpp.py.
// The hot loop as a plain function of restrict pointers and by-value scalars: inside the
// parallel_for lambda (scalars captured by reference) GCC left it scalar, 5x slower.
static void adamw_chunk(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                        float* __restrict__ v, int64_t n, float decay, float b1, float b2, float eps, float step_size,
                        float bc2) {
  for (int64_t k = 0; k < n; ++k) {
    const float mk = m[k] + (1.f - b1) * (g[k] - m[k]);
    const float vk = b2 * v[k] + (1.f - b2) * g[k] * g[k];
    p[k] = p[k] * decay - step_size * mk / (std::sqrt(vk) / bc2 + eps);
    m[k] = mk;
    v[k] = vk;
  }
}

void adamw_step(std::vector<at::Tensor> p, std::vector<at::Tensor> g, std::vector<at::Tensor> m,
                std::vector<at::Tensor> v, double lr, double beta1, double beta2, double eps, double weight_decay,
                double bias_correction1, double bias_correction2_sqrt) {
  // One work list of (tensor, start) chunks over all tensors, so small tensors share threads.
  const int64_t chunk = 16384;
  std::vector<std::pair<int64_t, int64_t>> work;
  for (size_t i = 0; i < p.size(); ++i) {
    TORCH_CHECK(p[i].scalar_type() == at::kFloat && p[i].is_contiguous() && g[i].is_contiguous() &&
                g[i].numel() == p[i].numel(), "adamw_step: contiguous float32 tensors of matching sizes");
    for (int64_t s = 0; s < p[i].numel(); s += chunk) work.emplace_back(i, s);
  }
  const float decay = 1.f - float(lr * weight_decay), step_size = float(lr / bias_correction1);
  at::parallel_for(0, work.size(), 1, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t i = work[w].first, s = work[w].second, n = std::min(chunk, p[i].numel() - s);
      adamw_chunk(p[i].data_ptr<float>() + s, g[i].data_ptr<float>() + s, m[i].data_ptr<float>() + s,
                  v[i].data_ptr<float>() + s, n, decay, float(beta1), float(beta2), float(eps), step_size,
                  float(bias_correction2_sqrt));
    }
  });
}

TORCH_LIBRARY_FRAGMENT(TORCH_EXTENSION_NAME, m) {  // the schema says which lists it writes to
  m.def("adamw_step(Tensor(a!)[] p, Tensor[] g, Tensor(b!)[] m, Tensor(c!)[] v, float lr, float beta1, float beta2, "
        "float eps, float weight_decay, float bias_correction1, float bias_correction2_sqrt) -> ()",
        &adamw_step);
}
